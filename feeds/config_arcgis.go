package feeds

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/ingestd/ingestd/internal/yamlconf"

	"go.yaml.in/yaml/v3"
)

// KindArcGIS is an ArcGIS REST layer (…/FeatureServer/N or …/MapServer/N),
// dumped by package arcgis.
const KindArcGIS = "arcgis"

// ArcGISTokenHeader carries an arcgis feed's token: in a header, never in
// a URL, so that it is not in the server's logs, ours, or any table.
const ArcGISTokenHeader = "X-Esri-Authorization"

// arcgisLayerPath is the path of an ArcGIS REST layer.
var arcgisLayerPath = regexp.MustCompile(`/(FeatureServer|MapServer)/\d+/?$`)

// Keys only an arcgis feed has.
var arcgisKeys = []string{"where", "out_fields", "token"}

// arcgisFeed reads and checks the settings of an arcgis feed: where
// (default 1=1), out_fields (default *), token (sent as
// "X-Esri-Authorization: Bearer …"), page_size (0: the layer's
// maxRecordCount, and capped at it), id_property (default: the layer's
// objectIdField). The WFS-only settings are ignored with a warning.
func (p *parser) arcgisFeed(m *yamlconf.Mapping, path string, f *Feed, wfsOnly map[string]*yaml.Node, pageSize int, psNode *yaml.Node) {
	for _, k := range []string{"type_name", "version", "output_format"} {
		if n := wfsOnly[k]; n != nil {
			p.Warnf(n, path+"."+k, "ignored for an arcgis feed")
		}
	}
	if n, ok := m.Get("sort_by"); ok {
		p.Warnf(n, path+".sort_by", "ignored for an arcgis feed: the dump is ordered by object id")
		f.SortBy = ""
	}
	if psNode != nil {
		f.PageSize = pageSize
	}
	if f.URL != "" {
		u, err := url.Parse(f.URL)
		at, _ := m.Get("url")
		switch {
		case err != nil:
		case !arcgisLayerPath.MatchString(u.Path):
			p.Errorf(at, path+".url", "an arcgis url is one layer: it ends with /FeatureServer/N or /MapServer/N (the layer's number)")
			f.URL = ""
		case u.Query().Has("token") || u.Query().Has("TOKEN"):
			p.Errorf(at, path+".url", "the url has a token: put it in the feed's token: (sent in a header, never logged), not in the url")
			f.URL = ""
		case u.RawQuery != "":
			p.Warnf(at, path+".url", "the url's query string is ignored except by the server's probe; use where: and out_fields:")
		}
	}
	if s, present := p.Str(m, "where", path); present && s.OK {
		if strings.TrimSpace(s.Val) == "" {
			p.Errorf(s.Node, path+".where", "empty: leave it out for every feature (1=1)")
		} else {
			f.Where = s.Val
		}
	}
	if s, present := p.Str(m, "out_fields", path); present && s.OK {
		fields := strings.Split(s.Val, ",")
		for _, fl := range fields {
			if strings.TrimSpace(fl) == "" {
				p.Errorf(s.Node, path+".out_fields", "a comma-separated list of field names, or *; %q has an empty name", s.Raw)
				return
			}
		}
		f.OutFields = s.Val
	}
	if s, present := p.Str(m, "token", path); present && s.OK {
		switch {
		case !s.Expanded:
			p.Errorf(s.Node, path+".token", "write the token as ${VARIABLE}: a token in the file ends up in backups and version control")
		case strings.TrimSpace(s.Val) == "" || strings.ContainsAny(s.Val, "\r\n\x00 "):
			p.Errorf(s.Node, path+".token", "the token (from the environment) is empty or holds white space")
		default:
			h := make(map[string]string, len(f.Headers)+1)
			for k, v := range f.Headers {
				h[k] = v
			}
			h[ArcGISTokenHeader] = "Bearer " + s.Val
			f.Headers = h
		}
	}
}

// arcgisOnly warns about arcgis settings on a feed of another kind.
func (p *parser) arcgisOnly(m *yamlconf.Mapping, path, kind string) {
	for _, k := range arcgisKeys {
		if n, ok := m.Get(k); ok {
			p.Errorf(n, path+"."+k, "only an arcgis feed has %s (this feed is %s)", k, kind)
		}
	}
}
