package ogcapi

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/internal/yamlconf"
	"github.com/ingestd/ingestd/source"
)

// Kind is the feed kind this package fetches: an OGC API – Features
// collection.
const Kind = kind

// Settings are an ogcapi layer's own settings (source.Layer.Settings).
// Layer.PageSize is sent as limit.
type Settings struct {
	// Collection is the collection id when the layer's URL is the landing
	// page; "" when the URL is the collection itself
	// (…/collections/{collectionId}).
	Collection string
	// CRS is the Part 2 CRS to ask for (a URI such as
	// http://www.opengis.net/def/crs/EPSG/0/2264); "" means CRS84.
	CRS string
	// BBox, when set, filters the items: minx, miny, maxx, maxy in CRS84.
	BBox []float64
	// LinksOnly accepts a collection whose server reports no numberMatched
	// (on its pages, nor to resulttype=hits) as complete on its next links
	// alone: the feed's `completeness: links_only`. Without it such a
	// collection is refused, since nothing proves it whole.
	LinksOnly bool

	// ItemsURL is the collection's items link, set by Prepare from the
	// collection document; Fetch starts there.
	ItemsURL string
	// SchemaURL is the collection's JSON Schema of its features (Part 5
	// schema, else Part 3 queryables), set by Prepare when the collection
	// links one; SchemaOrigin names which ("ogcapi schema", "ogcapi
	// queryables"). Fetch reads it when Layer.DescribeSchema is set.
	SchemaURL, SchemaOrigin string
}

// Identity lists what the feed asks for (not what Prepare found).
func (s Settings) Identity() []string { return []string{s.Collection, s.CRS, fmt.Sprint(s.BBox)} }

// settingsOf returns l's ogcapi settings (zero when it has none).
func settingsOf(l source.Layer) Settings {
	s, _ := l.Settings.(Settings)
	return s
}

// Spec is the ogcapi kind as the registry of kinds lists it: collection,
// crs, bbox and completeness, and its fetcher.
func Spec() kindconf.Spec {
	return kindconf.Spec{Name: Kind, Keys: []string{"collection", "crs", "bbox", "completeness"}, Parse: parseFeed, DescribeSchema: true,
		NewFetcher: newFetcher}
}

// newFetcher is the ogcapi kind's fetcher, as the registry of kinds builds
// it: a Client over the process's shared dependencies.
func newFetcher(d kindconf.FetcherDeps) source.Fetcher {
	return NewClient(d.HTTP, d.Breakers, d.Logger, WithUserAgent(d.UserAgent))
}

// parseFeed reads an ogcapi feed's settings: collection (required unless
// url is …/collections/{id}), crs, bbox and completeness; page_size is
// each page's limit, at least 1.
func parseFeed(f *kindconf.Feed) source.Settings {
	var s Settings
	if f.PageSize == 0 {
		f.Errorf(f.At("page_size"), f.Field("page_size"), "must be at least 1 for an ogcapi feed: it is the limit of each page, which the feed follows by its next links")
	}
	if v, present := f.Str(f.Map, "collection", f.Path); present && v.OK {
		s.Collection = v.Val
	}
	if f.URL != "" && s.Collection == "" && !strings.Contains(strings.TrimRight(f.URL, "/"), "/collections/") && !f.Map.Typo("collection") {
		f.Errorf(f.Map.Node, f.Field("collection"), "required for an ogcapi feed whose url is not a collection (…/collections/{collectionId})")
	}
	if v, present := f.Str(f.Map, "crs", f.Path); present && v.OK {
		if _, err := feature.ParseCRS(v.Val); err != nil {
			f.Errorf(v.Node, f.Field("crs"), "%v: give the CRS URI the server lists, e.g. http://www.opengis.net/def/crs/EPSG/0/2264", err)
		} else {
			s.CRS = v.Val
		}
	}
	if n, ok := f.Map.Get("bbox"); ok {
		s.BBox = parseBBox(f, yamlconf.Resolve(n))
	}
	// completeness: is what proves the collection whole (see
	// CompletenessNumberMatched and CompletenessLinksOnly).
	if v, present := f.Str(f.Map, "completeness", f.Path); present && v.OK {
		switch v.Val {
		case CompletenessNumberMatched:
		case CompletenessLinksOnly:
			s.LinksOnly = true
		default:
			f.Errorf(v.Node, f.Field("completeness"), "%q: must be %s (the default: applied only when the total equals the server's numberMatched) "+
				"or %s (a server that reports no numberMatched is trusted on its next links alone)", v.Raw, CompletenessNumberMatched, CompletenessLinksOnly)
		}
	}
	return s
}

// parseBBox reads the feed's bbox filter: four numbers in CRS84.
func parseBBox(f *kindconf.Feed, n *yaml.Node) []float64 {
	field := f.Field("bbox")
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
		f.Errorf(n, field, "expected [minx, miny, maxx, maxy] (four numbers, CRS84)")
	case vals[0] >= vals[2] || vals[1] >= vals[3]:
		f.Errorf(n, field, "min must be below max: got [%g, %g, %g, %g]", vals[0], vals[1], vals[2], vals[3])
	case vals[0] < -180 || vals[2] > 180 || vals[1] < -90 || vals[3] > 90:
		f.Errorf(n, field, "outside longitude ±180, latitude ±90: the bbox is CRS84")
	default:
		return vals
	}
	return nil
}
