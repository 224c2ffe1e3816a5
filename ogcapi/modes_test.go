package ogcapi_test

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/encoding/geojson"
	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/ogcapi"
	"github.com/ingestd/ingestd/ogcapi/ogcapitest"
	"github.com/ingestd/ingestd/source"
)

// modeServer is a fixture server behaving as mode, with its collections.
func modeServer(t *testing.T, mode ogcapitest.Mode, maxLimit int, cols map[string]ogcapitest.Collection) (*ogcapitest.Server, string) {
	t.Helper()
	s := ogcapitest.New()
	s.Mode, s.MaxLimit = mode, maxLimit
	for id, c := range cols {
		s.Add(id, c)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

// sameAsServed fails unless col holds exactly the features of layer, in
// order: id, properties and coordinates as the fixture serves them.
func sameAsServed(t *testing.T, col *collect, layer layertest.Layer) {
	t.Helper()
	if col.total() != layer.Len() {
		t.Fatalf("%d features, the fixture serves %d", col.total(), layer.Len())
	}
	i := 0
	for _, page := range col.pages {
		for _, got := range page {
			doc := append(append([]byte(`{"type":"FeatureCollection","features":[`), layer.AppendFeature(nil, i)...), "]}"...)
			want, err := geojson.NewReader(bytes.NewReader(doc)).Next()
			if err != nil {
				t.Fatalf("feature %d of the fixture: %v", i, err)
			}
			if got.ID != want.ID || !bytes.Equal(got.Properties, want.Properties) ||
				!reflect.DeepEqual(got.Geometry.FlatCoords(), want.Geometry.FlatCoords()) {
				t.Fatalf("feature %d: got id %q %s, the fixture serves id %q %s", i, got.ID, got.Properties, want.ID, want.Properties)
			}
			i++
		}
	}
}

// TestTiPgLoadsComplete: a tipg server (no f in its links, f=json on
// items an array of rows, f=json on queryables a 422, one maximum limit on
// its templated items path) loads whole through the links as it gives
// them, with its queryables read, and page_size capped at its maximum.
func TestTiPgLoadsComplete(t *testing.T) {
	t.Parallel()
	parcels := layertest.Parcels{N: 2345}
	s, base := modeServer(t, ogcapitest.TiPg, 1000, map[string]ogcapitest.Collection{
		"public.parcels": {Layer: parcels, Queryables: ogcapitest.JSONSchema(parcels.Fields(), "geometry-polygon")},
	})
	layer := source.Layer{Kind: "ogcapi", URL: base + "/collections/public.parcels", PageSize: 5000, DescribeSchema: true}
	col, stats, warnings, err := fetch(t, layer)
	if err != nil {
		t.Fatal(err)
	}
	sameAsServed(t, col, parcels)
	if stats.Pages != 3 || stats.NumberMatched != 2345 || !strings.Contains(strings.Join(warnings, "\n"), "above the server's maximum limit 1000") {
		t.Errorf("%d pages, numberMatched %d, warnings %q; want 3 pages of at most 1000", stats.Pages, stats.NumberMatched, warnings)
	}
	if stats.Declared == nil || len(stats.Declared.Columns) != len(parcels.Fields()) {
		t.Errorf("declared schema %+v: the queryables were not read", stats.Declared)
	}
	if n := s.ItemRequests("public.parcels", 2000); n != 1 {
		t.Errorf("the last page was asked for %d times, want 1", n)
	}
}

// TestTiPgServersWords: what tipg refuses fails the poll with its words
// (FastAPI's detail, a string or a list of validation errors), and an
// items link that asks for tipg's f=json is named for what it answers.
func TestTiPgServersWords(t *testing.T) {
	t.Parallel()
	_, base := modeServer(t, ogcapitest.TiPg, 1000, map[string]ogcapitest.Collection{"public.parcels": {Layer: layertest.Parcels{N: 30}}})
	items := base + "/collections/public.parcels/items"
	for _, c := range []struct {
		name  string
		layer source.Layer
		want  string
	}{
		{"f=geojson on the collection", source.Layer{URL: base + "/collections/public.parcels?f=geojson"},
			"HTTP 422: query.f: Input should be 'json' or 'html'"},
		{"no such table", source.Layer{URL: base + "/collections/public.nope"}, "HTTP 404: Table/Function 'public.nope' not found."},
		{"not schema.table", source.Layer{URL: base + "/collections/nope"}, "HTTP 422: Invalid Collection format 'nope'."},
		{"limit above the maximum", source.Layer{URL: base + "/collections/public.parcels", PageSize: 5000, Settings: ogcapi.Settings{ItemsURL: items}},
			"HTTP 422: query.limit: Input should be less than or equal to 1000"},
		{"f=json on items", source.Layer{URL: base + "/collections/public.parcels", PageSize: 10, Settings: ogcapi.Settings{ItemsURL: items + "?f=json"}},
			`the server answered a JSON array: it may be ignoring the media type (Content-Type "application/json"`},
	} {
		layer := c.layer
		layer.Kind = "ogcapi"
		var err error
		if s, _ := layer.Settings.(ogcapi.Settings); s.ItemsURL == "" {
			_, _, _, err = fetch(t, layer)
		} else {
			_, err = ogcapi.NewClient(nil, nil, nil).Fetch(t.Context(), layer, 0, (&collect{}).handle)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "ogcapi: ") {
			t.Errorf("%s: %v, want the server's words %q", c.name, err, c.want)
		}
		var ee *ogcapi.ExceptionError
		if strings.HasPrefix(c.want, "HTTP ") && (!errors.As(err, &ee) || ee.ServerSide) {
			t.Errorf("%s: %T, want a client-side *ExceptionError", c.name, err)
		}
	}
	// Its queryables with f=json: the schema is not read, in its words.
	layer := source.Layer{Kind: "ogcapi", URL: base + "/collections/public.parcels", PageSize: 10, DescribeSchema: true,
		Settings: ogcapi.Settings{ItemsURL: items, SchemaURL: base + "/collections/public.parcels/queryables?f=json"}}
	stats, err := ogcapi.NewClient(nil, nil, nil).Fetch(t.Context(), layer, 0, (&collect{}).handle)
	if w := strings.Join(stats.Warnings, "\n"); err != nil || !strings.Contains(w, "HTTP 422: query.f: Input should be 'schemajson' or 'html'") {
		t.Errorf("queryables?f=json: %v, warnings %q", err, w)
	}
}

// TestPyGeoAPIPerCollectionLimits: pygeoapi declares a maximum limit per
// collection; a collection's own maximum applies, not the smallest of the
// server's, and the next link of its full last page leads to an empty
// page that ends the collection whole.
func TestPyGeoAPIPerCollectionLimits(t *testing.T) {
	t.Parallel()
	parcels := layertest.Parcels{N: 3000}
	s, base := modeServer(t, ogcapitest.PyGeoAPI, 10_000, map[string]ogcapitest.Collection{
		"small":   {Layer: layertest.Parcels{N: 10}, MaxLimit: 500},
		"parcels": {Layer: parcels, MaxLimit: 1000, Schema: ogcapitest.JSONSchema(parcels.Fields(), "geometry-polygon")},
	})
	for _, size := range []int{0, 5000} {
		layer := source.Layer{Kind: "ogcapi", URL: base + "/collections/parcels", PageSize: size, DescribeSchema: true}
		col, stats, warnings, err := fetch(t, layer)
		if err != nil {
			t.Fatalf("page_size %d: %v", size, err)
		}
		sameAsServed(t, col, parcels)
		// Three full pages of 1000, then the empty page the last one links to.
		if stats.Pages != 4 || len(col.pages[3]) != 0 || stats.Declared == nil {
			t.Errorf("page_size %d: %d pages (last of %d), declared %v; want 4, the last empty", size, stats.Pages, len(col.pages[len(col.pages)-1]), stats.Declared)
		}
		if w := strings.Join(warnings, "\n"); size > 1000 && !strings.Contains(w, "above the server's maximum limit 1000") {
			t.Errorf("page_size %d: warnings %q", size, w)
		}
	}
	if n := s.ItemRequests("parcels", 3000); n != 2 {
		t.Errorf("the empty page after the full last one was asked for %d times, want 2 (one per fetch)", n)
	}
	_, _, _, err := fetch(t, source.Layer{Kind: "ogcapi", URL: base + "/collections/nope"})
	if err == nil || !strings.Contains(err.Error(), "/collections/nope?f=json: HTTP 404: NotFound: Collection not found") {
		t.Errorf("missing collection: %v, want pygeoapi's words", err)
	}
}

// TestProblemDetails: an RFC 7807 problem document is the server's words.
func TestProblemDetails(t *testing.T) {
	t.Parallel()
	_, base := modeServer(t, ogcapitest.Problem, 10_000, map[string]ogcapitest.Collection{"parcels": {Layer: layertest.Parcels{N: 30}}})
	_, _, _, err := fetch(t, source.Layer{Kind: "ogcapi", URL: base + "/collections/nope"})
	var ee *ogcapi.ExceptionError
	if err == nil || !strings.Contains(err.Error(), "HTTP 404: Not Found: no collection nope") || !errors.As(err, &ee) {
		t.Errorf("missing collection: %v, want the problem's title and detail", err)
	}
	col, _, _, err := fetch(t, source.Layer{Kind: "ogcapi", URL: base + "/collections/parcels", PageSize: 7})
	if err != nil {
		t.Fatal(err)
	}
	sameAsServed(t, col, layertest.Parcels{N: 30})
}

// TestFirstURLAsGiven: the first page's URL is the items link as the
// server wrote it, its parameters in its order, with limit set (replacing
// the link's own) and nothing else.
func TestFirstURLAsGiven(t *testing.T) {
	t.Parallel()
	for link, want := range map[string]string{
		"http://h/collections/c/items":                  "http://h/collections/c/items?limit=50",
		"http://h/collections/c/items?f=json&lang=en":   "http://h/collections/c/items?f=json&lang=en&limit=50",
		"http://h/collections/c/items?limit=10&z=a%2Cb": "http://h/collections/c/items?z=a%2Cb&limit=50",
	} {
		u, err := ogcapi.FirstURL(source.Layer{PageSize: 50, Settings: ogcapi.Settings{ItemsURL: link}})
		if err != nil || u.String() != want {
			t.Errorf("%s: %v %v, want %s", link, u, err, want)
		}
	}
	if got := ogcapi.Restore("http://h/collections/c/items", "http://h/collections/c?f=geojson&apikey=k"); got != "http://h/collections/c/items?apikey=k" {
		t.Errorf("Restore: %s, want the feed's key and not its f", got)
	}
}
