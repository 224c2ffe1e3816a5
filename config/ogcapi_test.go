package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/ogcapi"
)

const ogcapiBase = `
jurisdictions:
  - id: county
    feeds:
      - id: parcels
        kind: ogcapi
`

// TestOGCAPIConfig: an ogcapi feed reads collection, crs, bbox and
// page_size (as limit) into its Layer.
func TestOGCAPIConfig(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, ogcapiBase+`        url: https://gis.example/api
        collection: parcels
        crs: http://www.opengis.net/def/crs/EPSG/0/2264
        bbox: [-79, 35.5, -78.5, 36]
        page_size: 500
        completeness: links_only
      - id: direct
        kind: ogcapi
        url: https://gis.example/api/collections/roads
`, nil)
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings: %v", cfg.Warnings)
	}
	f, _ := cfg.Feed("county/parcels")
	l := f.Layer()
	s, _ := l.Settings.(ogcapi.Settings)
	if l.Kind != ogcapi.Kind || s.Collection != "parcels" || s.CRS != "http://www.opengis.net/def/crs/EPSG/0/2264" ||
		!slices.Equal(s.BBox, []float64{-79, 35.5, -78.5, 36}) || l.PageSize != 500 || !s.LinksOnly {
		t.Errorf("layer %+v", l)
	}
	d, _ := cfg.Feed("county/direct")
	if d.PageSize != BuiltinDefaults().PageSize {
		t.Errorf("direct: page size %d, want the default", d.PageSize)
	}
	if d.Layer().Settings.(ogcapi.Settings).LinksOnly {
		t.Error("direct: a feed without completeness: accepts the links alone")
	}
}

// TestOGCAPIConfigErrors: each mistake is reported at its line, naming
// the field.
func TestOGCAPIConfigErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ src, want string }{
		{"        url: https://gis.example/api\n", "jurisdictions[0].feeds[0].collection: required for an ogcapi feed whose url is not a collection"},
		{"        url: https://gis.example/api/collections/p\n        crs: EPSG-2264\n", `jurisdictions[0].feeds[0].crs: unsupported srsName "EPSG-2264"`},
		{"        url: https://gis.example/api/collections/p\n        bbox: [1, 2, 3]\n", "jurisdictions[0].feeds[0].bbox: expected [minx, miny, maxx, maxy]"},
		{"        url: https://gis.example/api/collections/p\n        bbox: [3, 2, 1, 4]\n", "jurisdictions[0].feeds[0].bbox: min must be below max"},
		{"        url: https://gis.example/api/collections/p\n        bbox: [-200, 2, 1, 4]\n", "jurisdictions[0].feeds[0].bbox: outside longitude ±180"},
		{"        url: https://gis.example/api/collections/p\n        page_size: 0\n", "jurisdictions[0].feeds[0].page_size: must be at least 1 for an ogcapi feed"},
		{"        url: https://gis.example/api/collections/p\n        kind2: x\n", `unknown key "kind2"`},
		{"        url: https://gis.example/api/collections/p\n        completeness: links\n", `jurisdictions[0].feeds[0].completeness: "links": must be number_matched (the default: applied only when the total equals the server's numberMatched) or links_only`},
	} {
		_, err := parseString(t, ogcapiBase+c.src, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.src, err, c.want)
		}
	}
	// ogcapi settings on another kind are ignored, with a warning.
	cfg := mustParse(t, `
jurisdictions:
  - id: county
    feeds:
      - id: roads
        kind: geojson
        url: https://gis.example/roads.geojson
        collection: roads
        completeness: links_only
`, nil)
	if len(cfg.Warnings) != 2 || !strings.Contains(cfg.Warnings[0].Error(), "collection: ignored for a geojson feed (an ogcapi setting)") ||
		!strings.Contains(cfg.Warnings[1].Error(), "completeness: ignored for a geojson feed (an ogcapi setting)") {
		t.Errorf("warnings %v", cfg.Warnings)
	}
}
