package config

import (
	"math"
	"net/textproto"
	"strings"

	"github.com/ingestd/ingestd/internal/yamlconf"

	"github.com/dustin/go-humanize"
	"go.yaml.in/yaml/v3"

	"github.com/ingestd/ingestd/feature"
)

// Values of a feed's redirects setting.
const (
	// RedirectsSameOrigin follows a redirect only within the feed's origin
	// (scheme://host:port); a redirect elsewhere fails the request, naming
	// the target. The default: the breaker and pacing of the configured
	// origin must not be charged for another server.
	RedirectsSameOrigin = "same_origin"
	// RedirectsFollow follows redirects to other origins too.
	RedirectsFollow = "follow"
)

// limitsKeys are the keys of a `limits:` block, in the order docs/configuration.md lists them.
var limitsKeys = []string{"body_bytes", "poll_bytes", "poll_features", "feature_bytes", "value_bytes", "id_bytes", "properties"}

// limits reads an optional `limits:` block of m. Each key it sets overrides
// base; keys it leaves out keep base's value (so a feed inherits field by
// field from its jurisdiction, the defaults and feature.DefaultLimits).
func (p *parser) limits(m *yamlconf.Mapping, path string, base feature.Limits) feature.Limits {
	n, present := m.Get("limits")
	if !present {
		return base
	}
	path = yamlconf.Join(path, "limits")
	lm, ok := p.Mapping(n, path, limitsKeys)
	if !ok {
		return base
	}
	out := base
	size := func(key string, dst *int64) {
		if v, ok := p.size(lm, key, path); ok {
			*dst = v
		}
	}
	count := func(key string, dst *int64) {
		v, n, ok := p.Integer(lm, key, path)
		if !ok {
			return
		}
		if v <= 0 {
			p.Errorf(n, yamlconf.Join(path, key), "must be 1 or more, got %d", v)
			return
		}
		*dst = int64(v)
	}
	size("body_bytes", &out.BodyBytes)
	size("poll_bytes", &out.PollBytes)
	count("poll_features", &out.PollFeatures)
	size("feature_bytes", &out.FeatureBytes)
	size("value_bytes", &out.ValueBytes)
	var idBytes, props int64
	size("id_bytes", &idBytes)
	if idBytes > feature.MaxIDBytes {
		n, _ := lm.Get("id_bytes")
		p.Errorf(n, yamlconf.Join(path, "id_bytes"), "at most %d: PostgreSQL cannot index a longer id", feature.MaxIDBytes)
		idBytes = 0
	}
	count("properties", &props)
	if idBytes > 0 {
		if idBytes > math.MaxInt32 {
			idBytes = math.MaxInt32
		}
		out.IDBytes = int(idBytes)
	}
	if props > 0 {
		if props > math.MaxInt32 {
			props = math.MaxInt32
		}
		out.Properties = int(props)
	}
	return out
}

// size reads a byte size: a whole number of bytes, or a number with a unit
// ("64MiB", "1 GB", "512kB"; IEC units are powers of 1024, SI units of 1000).
func (p *parser) size(m *yamlconf.Mapping, key, path string) (int64, bool) {
	s, present := p.Str(m, key, path)
	if !present || !s.OK {
		return 0, false
	}
	v, err := humanize.ParseBytes(strings.TrimSpace(s.Val))
	if err != nil || v == 0 || v > math.MaxInt64 {
		p.Errorf(s.Node, yamlconf.Join(path, key), `expected a size above 0, like 1048576, "64MiB" or "1GB", found %q`, s.Raw)
		return 0, false
	}
	return int64(v), true
}

// headers reads an optional `headers:` mapping of m (header name → value)
// over base: a feed's headers add to its jurisdiction's, and replace one of
// the same name. Values are expanded like any other (${VAR}), which is how a
// token should get there; a literal value that looks like a credential is
// warned about.
func (p *parser) headers(m *yamlconf.Mapping, path string, base map[string]string) map[string]string {
	n, present := m.Get("headers")
	if !present {
		return base
	}
	path = yamlconf.Join(path, "headers")
	n = yamlconf.Resolve(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return base
	}
	if n.Kind != yaml.MappingNode {
		p.Errorf(n, path, "expected a mapping of header names to values, found %s", yamlconf.Describe(n))
		return base
	}
	out := make(map[string]string, len(base)+len(n.Content)/2)
	for k, v := range base {
		out[k] = v
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := yamlconf.Resolve(n.Content[i]), yamlconf.Resolve(n.Content[i+1])
		name := kn.Value
		field := yamlconf.Join(path, name)
		if kn.Kind != yaml.ScalarNode || !validHeaderName(name) {
			p.Errorf(kn, path, "%q is not a valid HTTP header name", name)
			continue
		}
		if vn.Kind != yaml.ScalarNode {
			p.Errorf(vn, field, "expected a value, found %s", yamlconf.Describe(vn))
			continue
		}
		val, err := yamlconf.ExpandEnv(vn.Value, p.Env)
		if err != nil {
			p.Errorf(vn, field, "%v", err)
			continue
		}
		// Messages quote the file's text, never the expanded value.
		if strings.ContainsAny(val, "\r\n\x00") {
			p.Errorf(vn, field, "a header value may not contain a line break or NUL")
			continue
		}
		canon := textproto.CanonicalMIMEHeaderKey(name)
		switch strings.ToLower(canon) {
		case "host", "content-length", "transfer-encoding", "connection", "accept-encoding", "if-none-match", "if-modified-since":
			p.Errorf(kn, field, "%s is set by ingestd itself", canon)
			continue
		}
		if val == vn.Value && looksSecret(canon) && val != "" {
			p.Warnf(vn, field, "a literal credential in the file: put it in the environment and write ${VAR}")
		}
		out[canon] = val
	}
	return out
}

// looksSecret reports whether a header usually carries a credential.
func looksSecret(name string) bool {
	n := strings.ToLower(name)
	return n == "authorization" || n == "cookie" || strings.Contains(n, "token") ||
		strings.Contains(n, "key") || strings.Contains(n, "secret") || strings.Contains(n, "auth")
}

// validHeaderName reports whether name is an RFC 9110 token.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// redirects reads redirects: same_origin or follow.
func (p *parser) redirects(m *yamlconf.Mapping, path string) (string, bool) {
	return p.choice(m, "redirects", path, RedirectsSameOrigin, RedirectsFollow)
}

// invalidFeature reads invalid_feature: repair or skip.
func (p *parser) invalidFeature(m *yamlconf.Mapping, path string) (string, bool) {
	return p.choice(m, "invalid_feature", path, InvalidRepair, InvalidSkip)
}

// choice reads key as one of the given words.
func (p *parser) choice(m *yamlconf.Mapping, key, path string, words ...string) (string, bool) {
	s, present := p.Str(m, key, path)
	if !present || !s.OK {
		return "", false
	}
	v := strings.TrimSpace(s.Val)
	for _, w := range words {
		if v == w {
			return v, true
		}
	}
	p.Errorf(s.Node, yamlconf.Join(path, key), "expected %s, found %q", strings.Join(words, " or "), s.Raw)
	return "", false
}
