package wfs

import (
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/internal/yamlconf"
	"github.com/ingestd/ingestd/source"
)

// Kind is the feed kind this package fetches: a WFS feature type.
const Kind = "wfs"

// Versions are the WFS versions a layer may ask for, best first: the
// config's, Validate's and Negotiate's one list. 1.0.0 is left out: it has
// no paging and its GML 2 carries less than GeoJSON or GML 3 from the same
// server.
var Versions = []string{"2.0.0", "1.1.0"}

// Settings are a wfs layer's own settings (source.Layer.Settings).
type Settings struct {
	// Version is the WFS version: one of Versions ("": DefaultVersion), or
	// Auto before Client.Prepare negotiates it.
	Version string
	// OutputFormat is the GetFeature outputFormat ("": DefaultOutputFormat),
	// or Auto before Client.Prepare negotiates it.
	OutputFormat string
	// TypeName is the feature type, e.g. "topp:states" (type_name).
	TypeName string
	// SortBy is sent as sortBy so that paging sees a stable order
	// (sort_by); "" sends none.
	SortBy string
}

// Identity lists the version and the output format.
func (s Settings) Identity() []string { return []string{s.Version, s.OutputFormat} }

// LayerNames returns the feature type and the sort order, which the poll's
// request key hashes in slots of their own (source.NamedLayer).
func (s Settings) LayerNames() (typeName, sortBy string) { return s.TypeName, s.SortBy }

// version is the version asked for: Version, else DefaultVersion.
func (s Settings) version() string {
	if s.Version == "" {
		return DefaultVersion
	}
	return s.Version
}

// settingsOf returns l's wfs settings (zero when it has none).
func settingsOf(l source.Layer) Settings {
	s, _ := l.Settings.(Settings)
	return s
}

// withSettings returns l with its wfs settings replaced by s.
func withSettings(l source.Layer, s Settings) source.Layer {
	l.Settings = s
	return l
}

// ownParams are the query parameters a GetFeature request writes itself;
// one pasted into a feed's url along with a whole request would be sent
// twice or contradict the config.
var ownParams = []string{"service", "request", "version", "typename", "typenames", "outputformat",
	"count", "maxfeatures", "startindex", "sortby", "resulttype"}

// Spec is the wfs kind as the registry of kinds lists it: its keys
// (type_name and sort_by; version and output_format, also in the defaults
// block), their parser and its fetcher.
func Spec() kindconf.Spec {
	keys := []string{"version", "output_format"}
	return kindconf.Spec{Name: Kind, Keys: append([]string{"type_name", "sort_by"}, keys...), DefaultKeys: keys, ParseDefaults: parseDefaults, Parse: parseFeed, DescribeSchema: true,
		NewFetcher: newFetcher}
}

// newFetcher is the wfs kind's fetcher, as the registry of kinds builds
// it: a Client over the process's shared dependencies.
func newFetcher(d kindconf.FetcherDeps) source.Fetcher {
	return NewClient(d.HTTP, d.Breakers, d.Logger, WithUserAgent(d.UserAgent))
}

// parseDefaults reads version and output_format of the defaults block or
// a jurisdiction over base (DefaultVersion and DefaultOutputFormat when
// nil).
func parseDefaults(p *yamlconf.Parser, m *yamlconf.Mapping, path string, base any) any {
	s, ok := base.(Settings)
	if !ok {
		s = Settings{Version: DefaultVersion, OutputFormat: DefaultOutputFormat}
	}
	readSettings(p, m, path, &s)
	return s
}

// readSettings reads version and output_format from m over s.
func readSettings(p *yamlconf.Parser, m *yamlconf.Mapping, path string, s *Settings) {
	if v, present := p.Str(m, "version", path); present && v.OK {
		if version, ok := parseVersion(p, v, yamlconf.Join(path, "version")); ok {
			s.Version = version
		}
	}
	if v, present := p.Str(m, "output_format", path); present && v.OK {
		s.OutputFormat = v.Val
	}
}

// parseVersion checks a version against Versions (Auto allowed).
func parseVersion(p *yamlconf.Parser, s yamlconf.Scalar, field string) (string, bool) {
	switch {
	case s.Val == "":
		return DefaultVersion, true
	case s.Val == Auto || slices.Contains(Versions, s.Val):
		return s.Val, true
	}
	p.Errorf(s.Node, field, "unsupported WFS version %q: use %s or %q", s.Raw, strings.Join(yamlconf.QuoteAll(Versions), ", "), Auto)
	return "", false
}

// parseFeed reads a wfs feed's settings: type_name is required, the url is
// the service endpoint, and paging without a page size or a sort order is
// warned about.
func parseFeed(f *kindconf.Feed) source.Settings {
	s, _ := f.Defaults.(Settings)
	if s == (Settings{}) {
		s = Settings{Version: DefaultVersion, OutputFormat: DefaultOutputFormat}
	}
	readSettings(f.Parser, f.Map, f.Path, &s)
	tn, present := f.Str(f.Map, "type_name", f.Path)
	if present && tn.OK {
		s.TypeName = tn.Val
	}
	if sb, present := f.Str(f.Map, "sort_by", f.Path); present && sb.OK {
		s.SortBy = sb.Val
	}
	if s.TypeName == "" && (!present || tn.OK) && !f.Map.Typo("type_name") {
		f.Errorf(f.Map.Node, f.Field("type_name"), "required for a wfs feed (the WFS typeName, e.g. \"topp:states\")")
	}
	if f.URL != "" {
		warnOwnParams(f)
	}
	if f.PageSize == 0 {
		at := f.PageSizeNode
		if at == nil {
			at = f.Map.Node
		}
		f.Warnf(at, f.Field("page_size"), "0 fetches the whole layer in one request; servers cap responses (e.g. GeoServer's maxFeatures) and a capped layer looks complete")
	} else if s.SortBy == "" {
		f.Warnf(f.Map.Node, f.Field("sort_by"), "paging without sort_by: some servers return pages in no stable order, so features can be skipped or repeated")
	}
	return s
}

// warnOwnParams warns about GetFeature parameters in a feed's url.
func warnOwnParams(f *kindconf.Feed) {
	u, err := url.Parse(f.URL)
	if err != nil {
		return
	}
	var own []string
	for k := range u.Query() {
		for _, w := range ownParams {
			if strings.EqualFold(k, w) {
				own = append(own, k)
			}
		}
	}
	if len(own) > 0 {
		sort.Strings(own)
		f.Warnf(f.At("url"), f.Field("url"), "url already has %s; the wfs client builds the GetFeature request itself, so give the service endpoint only",
			strings.Join(own, ", "))
	}
}
