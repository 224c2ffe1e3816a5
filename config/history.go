package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ingestd/ingestd/internal/yamlconf"
)

// History is how long a feed keeps the versions of its features that a
// snapshot modified or removed (feature_history): `history: {keep: 90d}`,
// `{keep: forever}` or `{keep: off}`, at defaults, jurisdiction and feed,
// the nearest one winning. The zero value is DefaultHistoryKeep.
type History struct {
	// Keep is how long a superseded version is kept; 0 means
	// DefaultHistoryKeep unless Forever or Off is set.
	Keep time.Duration
	// Forever keeps every version; Off keeps none (and ingestd_layer_as_of
	// is exact only from the feed's last apply that changed anything).
	Forever, Off bool
}

// DefaultHistoryKeep is how long versions are kept when no history block
// says otherwise: a quarter's look back ("the day the permit was filed")
// at a storage cost bounded by what changed (docs/querying.md).
const DefaultHistoryKeep = 90 * 24 * time.Hour

// KeepMicros is the retention as the store records it
// (feed_status.history_keep): microseconds, 0 for off, -1 for forever.
func (h History) KeepMicros() int64 {
	switch {
	case h.Off:
		return 0
	case h.Forever:
		return -1
	case h.Keep <= 0:
		return DefaultHistoryKeep.Microseconds()
	}
	return h.Keep.Microseconds()
}

// String is the setting as written in the config.
func (h History) String() string {
	switch {
	case h.Off:
		return "off"
	case h.Forever:
		return "forever"
	case h.Keep <= 0:
		return History{Keep: DefaultHistoryKeep}.String()
	case h.Keep%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", h.Keep/(24*time.Hour))
	}
	return h.Keep.String()
}

// history reads the history blocks of the defaults, each jurisdiction and
// each feed of the document root and sets each feed's History (cfg's feeds
// are found by their ids). Called once, after the rest of the file parsed.
func (p *parser) history(root *yaml.Node, cfg *Config) {
	if cfg == nil || root == nil {
		return
	}
	def := History{}
	if d := rawGet(root, "defaults"); d != nil {
		def = p.historyBlock(d, "defaults", def)
	}
	for i, jn := range rawSeq(rawGet(root, "jurisdictions")) {
		path := fmt.Sprintf("jurisdictions[%d]", i)
		jh := p.historyBlock(jn, path, def)
		j := cfg.jurisdiction(rawScalar(rawGet(jn, "id")))
		for k, fn := range rawSeq(rawGet(jn, "feeds")) {
			fh := p.historyBlock(fn, fmt.Sprintf("%s.feeds[%d]", path, k), jh)
			if f := j.feed(rawScalar(rawGet(fn, "id"))); f != nil {
				f.History = fh
			}
		}
	}
}

// historyBlock reads the history block of the mapping n, inheriting from.
func (p *parser) historyBlock(n *yaml.Node, path string, from History) History {
	h := rawGet(n, "history")
	if h == nil || (h.Kind == yaml.ScalarNode && h.Tag == "!!null") {
		return from
	}
	field := yamlconf.Join(path, "history")
	if h.Kind != yaml.MappingNode || len(h.Content) != 2 || h.Content[0].Value != "keep" {
		p.Errorf(h, field, "expected {keep: 90d}, {keep: forever} or {keep: off}, found %s", yamlconf.Describe(h))
		return from
	}
	v := yamlconf.Resolve(h.Content[1])
	s, err := yamlconf.ExpandEnv(v.Value, p.Env)
	if v.Kind != yaml.ScalarNode || err != nil {
		p.Errorf(v, field+".keep", "expected a duration such as 90d or 2160h, forever or off, found %s", yamlconf.Describe(v))
		return from
	}
	out, err := parseHistoryKeep(s)
	if err != nil {
		p.Errorf(v, field+".keep", "%v", err)
		return from
	}
	return out
}

// parseHistoryKeep reads keep: "off", "forever", days ("90d") or a
// duration ("2160h").
func parseHistoryKeep(s string) (History, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "off":
		return History{Off: true}, nil
	case "forever":
		return History{Forever: true}, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 {
			return History{}, fmt.Errorf("expected a positive number of days such as 90d, found %q", s)
		}
		return History{Keep: time.Duration(n) * 24 * time.Hour}, nil
	}
	d, err := parseDuration(s)
	if err != nil {
		return History{}, fmt.Errorf("expected 90d, forever, off or a duration: %v", err)
	}
	if d <= 0 {
		return History{}, fmt.Errorf("keep must be positive (or off), found %q", s)
	}
	return History{Keep: d.Std()}, nil
}

// jurisdiction finds the jurisdiction id in c (nil when absent).
func (c *Config) jurisdiction(id string) *Jurisdiction {
	for i := range c.Jurisdictions {
		if c.Jurisdictions[i].ID == id {
			return &c.Jurisdictions[i]
		}
	}
	return nil
}

// feed finds the feed id of j (nil when absent, or j nil).
func (j *Jurisdiction) feed(id string) *Feed {
	if j == nil {
		return nil
	}
	for i := range j.Feeds {
		if j.Feeds[i].ID == id {
			return &j.Feeds[i]
		}
	}
	return nil
}

// rawGet is the value of key in the mapping n (aliases resolved, merge
// keys followed; the mapping's own key wins), nil when absent. The rest of
// the parser has already reported whatever is wrong with n's shape.
func rawGet(n *yaml.Node, key string) *yaml.Node {
	if n == nil {
		return nil
	}
	n = yamlconf.Resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil
	}
	var merged *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch {
		case k.Kind == yaml.ScalarNode && k.Tag == "!!merge":
			if merged == nil {
				merged = rawGet(v, key)
			}
		case k.Value == key:
			return yamlconf.Resolve(v)
		}
	}
	return merged
}

// rawSeq is the items of the sequence n (nil for anything else).
func rawSeq(n *yaml.Node) []*yaml.Node {
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	return n.Content
}

// rawScalar is the scalar n's value ("" for anything else).
func rawScalar(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}
