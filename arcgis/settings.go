package arcgis

import (
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/internal/yamlconf"
	"github.com/ingestd/ingestd/source"
)

// Kind is the feed kind this package fetches: an ArcGIS REST layer
// (…/FeatureServer/N or …/MapServer/N).
const Kind = "arcgis"

// TokenHeader carries an arcgis feed's token: in a header, never in a
// URL, so that it is not in the server's logs, ours, or any table.
const TokenHeader = "X-Esri-Authorization"

// Settings are an arcgis layer's own settings (source.Layer.Settings). The
// token is not here: the config turns it into a header (TokenHeader),
// which is never logged.
type Settings struct {
	// Where is the query's where clause; "" means 1=1.
	Where string
	// OutFields is the query's outFields; "" means *.
	OutFields string

	// Incremental refresh; not part of Identity: they change
	// how the layer is read, not what a complete snapshot of it holds.

	// Incremental is the feed's incremental setting: IncrementalAuto
	// (""), edit tracking when the layer offers it, or IncrementalOff,
	// every changed layer dumped whole.
	Incremental string
	// FullEvery bounds the time between two full dumps of a layer read
	// incrementally (the reconciliation); 0 means DefaultFullEvery.
	FullEvery time.Duration
	// EditSkew is the margin taken below the watermark for edits
	// committed out of order (an edit stamped before the last one seen but
	// committed after it); 0 means DefaultEditSkew.
	EditSkew time.Duration
}

// Incremental settings.
const (
	IncrementalAuto = "auto"
	IncrementalOff  = "off"
	// DefaultFullEvery is full_every's default: a full dump a day.
	DefaultFullEvery = 24 * time.Hour
	// DefaultEditSkew is edit_skew's default: an edit's transaction that
	// commits up to five minutes after the time it was stamped with is
	// still fetched.
	DefaultEditSkew = 5 * time.Minute
)

// Identity lists the where clause and the out fields.
func (s Settings) Identity() []string { return []string{s.Where, s.OutFields} }

// fullEvery and editSkew are the settings with their defaults.
func (s Settings) fullEvery() time.Duration {
	if s.FullEvery > 0 {
		return s.FullEvery
	}
	return DefaultFullEvery
}

func (s Settings) editSkew() time.Duration {
	if s.EditSkew > 0 {
		return s.EditSkew
	}
	return DefaultEditSkew
}

// settingsOf returns l's arcgis settings (zero when it has none).
func settingsOf(l source.Layer) Settings {
	s, _ := l.Settings.(Settings)
	return s
}

// incrementalKeys are the settings a feed, a jurisdiction or the defaults
// block may set.
var incrementalKeys = []string{"incremental", "full_every", "edit_skew"}

// parseDefaults reads the incremental settings of the defaults block or a
// jurisdiction over base; nil when neither sets any.
func parseDefaults(p *yamlconf.Parser, m *yamlconf.Mapping, path string, base any) any {
	s, _ := base.(Settings)
	readIncremental(p, m, path, &s)
	if s == (Settings{}) {
		return nil
	}
	return s
}

// readIncremental reads incremental, full_every and edit_skew from m over s.
func readIncremental(p *yamlconf.Parser, m *yamlconf.Mapping, path string, s *Settings) {
	if v, present := p.Str(m, "incremental", path); present && v.OK {
		switch v.Val {
		case IncrementalAuto, IncrementalOff:
			s.Incremental = v.Val
		default:
			p.Errorf(v.Node, yamlconf.Join(path, "incremental"), "%q: write %q (edit tracking when the layer offers it) or %q (full dumps only)", v.Raw, IncrementalAuto, IncrementalOff)
		}
	}
	if d, _, present, ok := p.Duration(m, "full_every", path); present && ok {
		s.FullEvery = d
	}
	if d, _, present, ok := p.Duration(m, "edit_skew", path); present && ok {
		s.EditSkew = d
	}
}

// layerPath is the path of an ArcGIS REST layer.
var layerPath = regexp.MustCompile(`/(FeatureServer|MapServer)/\d+/?$`)

// Spec is the arcgis kind as the registry of kinds lists it: where,
// out_fields and token, refused on a feed of another kind (a token must not
// be silently dropped), and its fetcher.
func Spec() kindconf.Spec {
	keys := append([]string{"where", "out_fields", "token"}, incrementalKeys...)
	return kindconf.Spec{Name: Kind, Keys: keys, Strict: true, DefaultKeys: incrementalKeys, ParseDefaults: parseDefaults, Parse: parseFeed,
		NewFetcher: newFetcher}
}

// newFetcher is the arcgis kind's fetcher, as the registry of kinds builds
// it: a Client over the process's shared dependencies ("" keeps the
// default User-Agent).
func newFetcher(d kindconf.FetcherDeps) source.Fetcher {
	var opts []Option
	if d.UserAgent != "" {
		opts = append(opts, WithUserAgent(d.UserAgent))
	}
	return NewClient(d.HTTP, d.Breakers, d.Logger, opts...)
}

// parseFeed reads an arcgis feed's settings: where (default 1=1),
// out_fields (default *), token (sent as "X-Esri-Authorization: Bearer …"),
// page_size (0: the layer's maxRecordCount, and capped at it; the
// defaults' page_size does not apply), id_property (default: the layer's
// objectIdField), incremental (auto or off), full_every (24h) and edit_skew
// (5m), over the defaults block's. The url is one layer.
func parseFeed(f *kindconf.Feed) source.Settings {
	s, _ := f.Defaults.(Settings)
	readIncremental(f.Parser, f.Map, f.Path, &s)
	if f.PageSizeNode == nil {
		f.PageSize = 0
	}
	checkURL(f)
	if v, present := f.Str(f.Map, "where", f.Path); present && v.OK {
		if strings.TrimSpace(v.Val) == "" {
			f.Errorf(v.Node, f.Field("where"), "empty: leave it out for every feature (1=1)")
		} else {
			s.Where = v.Val
		}
	}
	if v, present := f.Str(f.Map, "out_fields", f.Path); present && v.OK {
		s.OutFields = v.Val
		for _, fl := range strings.Split(v.Val, ",") {
			if strings.TrimSpace(fl) == "" {
				f.Errorf(v.Node, f.Field("out_fields"), "a comma-separated list of field names, or *; %q has an empty name", v.Raw)
				s.OutFields = ""
				break
			}
		}
	}
	readToken(f)
	return s
}

// checkURL refuses a url that is not one layer or that holds a token.
func checkURL(f *kindconf.Feed) {
	if f.URL == "" {
		return
	}
	u, err := url.Parse(f.URL)
	at := f.At("url")
	switch {
	case err != nil:
	case !layerPath.MatchString(u.Path):
		f.Errorf(at, f.Field("url"), "an arcgis url is one layer: it ends with /FeatureServer/N or /MapServer/N (the layer's number)")
		f.URL = ""
	case u.Query().Has("token") || u.Query().Has("TOKEN"):
		f.Errorf(at, f.Field("url"), "the url has a token: put it in the feed's token: (sent in a header, never logged), not in the url")
		f.URL = ""
	case u.RawQuery != "":
		f.Warnf(at, f.Field("url"), "the url's query string is ignored except by the server's probe; use where: and out_fields:")
	}
}

// readToken turns the feed's token into its TokenHeader.
func readToken(f *kindconf.Feed) {
	v, present := f.Str(f.Map, "token", f.Path)
	if !present || !v.OK {
		return
	}
	switch {
	case !v.Expanded:
		f.Errorf(v.Node, f.Field("token"), "write the token as ${VARIABLE}: a token in the file ends up in backups and version control")
	case strings.TrimSpace(v.Val) == "" || strings.ContainsAny(v.Val, "\r\n\x00 "):
		f.Errorf(v.Node, f.Field("token"), "the token (from the environment) is empty or holds white space")
	default:
		h := make(map[string]string, len(f.Headers)+1)
		for k, val := range f.Headers {
			h[k] = val
		}
		h[TokenHeader] = "Bearer " + v.Val
		f.Headers = h
	}
}
