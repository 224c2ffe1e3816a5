package feeds

import (
	"strconv"
	"strings"

	"github.com/ingestd/ingestd/internal/yamlconf"

	"go.yaml.in/yaml/v3"

	"github.com/ingestd/ingestd/feature"
)

// Keys only an ogcapi feed has.
var ogcapiKeys = []string{"collection", "crs", "bbox", "completeness"}

// The values of an ogcapi feed's completeness: what proves a collection
// whole before its snapshot is applied.
const (
	// CompletenessNumberMatched (the default) applies a collection only
	// when its total equals the server's numberMatched, from its pages or
	// its resulttype=hits answer; a server that reports none fails the poll.
	CompletenessNumberMatched = "number_matched"
	// CompletenessLinksOnly also applies a collection whose server reports
	// no numberMatched, on its next links alone (a last page without a next
	// link, and not full): the operator's explicit trust in that server,
	// since a server that drops a next link would look the same.
	CompletenessLinksOnly = "links_only"
)

// ogcapi reads the settings of an ogcapi feed: collection (required
// unless url is …/collections/{id}), crs, bbox and completeness.
func (p *parser) ogcapi(m *yamlconf.Mapping, path string, f *Feed) {
	if s, present := p.Str(m, "collection", path); present && s.OK {
		f.Collection = s.Val
	}
	if f.URL != "" && f.Collection == "" && !strings.Contains(strings.TrimRight(f.URL, "/"), "/collections/") && !m.Typo("collection") {
		p.Errorf(m.Node, path+".collection", "required for an ogcapi feed whose url is not a collection (…/collections/{collectionId})")
	}
	if s, present := p.Str(m, "crs", path); present && s.OK {
		if _, err := feature.ParseCRS(s.Val); err != nil {
			p.Errorf(s.Node, path+".crs", "%v: give the CRS URI the server lists, e.g. http://www.opengis.net/def/crs/EPSG/0/2264", err)
		} else {
			f.CRS = s.Val
		}
	}
	if n, ok := m.Get("bbox"); ok {
		n = yamlconf.Resolve(n)
		field := path + ".bbox"
		var vals []float64
		if n.Kind == yaml.SequenceNode && len(n.Content) == 4 {
			for _, c := range n.Content {
				v, err := strconv.ParseFloat(strings.TrimSpace(yamlconf.Resolve(c).Value), 64)
				if err != nil {
					break
				}
				vals = append(vals, v)
			}
		}
		switch {
		case len(vals) != 4:
			p.Errorf(n, field, "expected [minx, miny, maxx, maxy] (four numbers, CRS84)")
		case vals[0] >= vals[2] || vals[1] >= vals[3]:
			p.Errorf(n, field, "min must be below max: got [%g, %g, %g, %g]", vals[0], vals[1], vals[2], vals[3])
		case vals[0] < -180 || vals[2] > 180 || vals[1] < -90 || vals[3] > 90:
			p.Errorf(n, field, "outside longitude ±180, latitude ±90: the bbox is CRS84")
		default:
			f.FilterBBox = vals
		}
	}
	if s, present := p.Str(m, "completeness", path); present && s.OK {
		switch s.Val {
		case CompletenessNumberMatched, CompletenessLinksOnly:
			f.Completeness = s.Val
		default:
			p.Errorf(s.Node, path+".completeness", "%q: must be %s (the default: applied only when the total equals the server's numberMatched) "+
				"or %s (a server that reports no numberMatched is trusted on its next links alone)", s.Raw, CompletenessNumberMatched, CompletenessLinksOnly)
		}
	}
}
