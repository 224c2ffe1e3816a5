package ogcapi_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/ogcapi"
	"github.com/ingestd/ingestd/ogcapi/ogcapitest"
	"github.com/ingestd/ingestd/schema"
	"github.com/ingestd/ingestd/source"
)

// looseOf lists d's loose columns.
func looseOf(d *schema.Declared) string {
	var out []string
	for _, c := range d.Columns {
		if c.Loose {
			out = append(out, c.Name)
		}
	}
	return strings.Join(out, ",")
}

func columnsOf(d *schema.Declared) string {
	if d == nil {
		return "<nil>"
	}
	var b strings.Builder
	for i, c := range d.Columns {
		if i > 0 {
			b.WriteString(", ")
		}
		t := string(c.Type)
		if t == "" {
			t = "(values)"
		}
		b.WriteString(c.Name + " " + t)
		if c.Source != schema.FromDeclared {
			b.WriteString(" (" + string(c.Source) + ")")
		}
	}
	return b.String()
}

// TestFromJSONSchema maps the queryables and schema documents servers
// write: pygeoapi's ($ref to a GeoJSON schema), ldproxy's (x-ogc-role,
// format geometry-…), type lists with null, and the properties left to
// inference; the document's order is kept, the id (x-ogc-role) in it;
// number and string without a format are loose.
func TestFromJSONSchema(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, doc, columns, geometry, id, loose string
	}{
		{
			name: "pygeoapi queryables",
			doc: `{"type":"object","title":"Parcels","properties":{
				"geometry":{"$ref":"https://geojson.org/schema/Polygon.json"},
				"pin":{"title":"pin","type":"string"},
				"acres":{"title":"acres","type":"number"},
				"units":{"title":"units","type":"integer"}},
				"$schema":"http://json-schema.org/draft/2019-09/schema"}`,
			columns:  "pin text, acres double precision, units bigint",
			geometry: "Polygon",
			loose:    "pin,acres",
		},
		{
			name: "ldproxy schema",
			doc: `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{
				"fid":{"x-ogc-role":"id","type":"integer"},
				"zoning":{"type":"string","enum":["R1","R2"]},
				"exempt":{"type":"boolean"},
				"deed_date":{"type":"string","format":"date"},
				"updated":{"type":"string","format":"date-time"},
				"value":{"type":"number","format":"double"},
				"price":{"type":"number","format":"decimal"},
				"owners":{"type":"array","items":{"type":"string"}},
				"extra":{"type":"object"},
				"geom":{"x-ogc-role":"primary-geometry","format":"geometry-multipolygon"}}}`,
			columns: "fid bigint, zoning text, exempt boolean, deed_date date, updated timestamptz, value double precision, " +
				"price numeric, owners jsonb, extra jsonb",
			geometry: "MultiPolygon",
			id:       "fid",
			loose:    "zoning",
		},
		{
			name: "type lists and unknowns",
			doc: `{"properties":{
				"a":{"type":["integer","null"]},
				"b":{"type":["integer","string"]},
				"c":{"description":"no type"},
				"d":{"type":"null"},
				"e":{"type":["null","string"],"format":"date"},
				"g":{"$ref":"https://geojson.org/schema/Geometry.json"}}}`,
			columns:  "a bigint, b (values), c (values), d (values), e date",
			geometry: "",
		},
	} {
		d, err := ogcapi.FromJSONSchema([]byte(tc.doc), "ogcapi queryables")
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := columnsOf(d); got != tc.columns || d.Geometry != tc.geometry || d.Origin != "ogcapi queryables" || d.ID != tc.id ||
			looseOf(d) != tc.loose {
			t.Errorf("%s: columns %q geometry %q id %q loose %q origin %q; want %q, %q, %q and %q", tc.name, got, d.Geometry, d.ID,
				looseOf(d), d.Origin, tc.columns, tc.geometry, tc.id, tc.loose)
		}
	}
	for doc, want := range map[string]string{
		`<html>`:                          "not JSON",
		`{"type":"array","items":{}}`:     `describes a "array"`,
		`{"type":"object"}`:               "has no properties",
		`{"properties":[1,2]}`:            "not an object",
		`{"properties":{"a":{"type":1}`:   "not JSON",
		`{"properties":{"a":"string"}}`:   `property "a"`,
		`{"properties":{"a":{"type":[}}}`: "not JSON",
	} {
		if _, err := ogcapi.FromJSONSchema([]byte(doc), "ogcapi schema"); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "ogcapi schema") {
			t.Errorf("%s: error %v, want one naming the document and %q", doc, err, want)
		}
	}
}

// FuzzFromJSONSchema: no document makes the adapter panic, and what it
// declares is always a valid column type.
func FuzzFromJSONSchema(f *testing.F) {
	f.Add([]byte(ogcapitest.JSONSchema(layertest.Parcels{}.Fields(), "geometry-polygon")))
	f.Add([]byte(`{"properties":{"a":{"type":["integer","null"]},"g":{"$ref":"https://geojson.org/schema/"}}}`))
	f.Add([]byte(`{"type":"object","properties":{"x":{"type":"string","format":"date-time","x-ogc-role":"id"}}}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		d, err := ogcapi.FromJSONSchema(doc, "ogcapi schema")
		if err != nil {
			return
		}
		for _, c := range d.Columns {
			if !c.Type.Valid() || c.Name == "" || c.Source != schema.FromDeclared {
				t.Fatalf("column %+v", c)
			}
		}
	})
}

// TestDeclaredFromTheCollection: a collection that links a schema or
// queryables document has its fetch report the declared schema (Part 5
// schema preferred); a broken document is a warning, the fetch goes on
// with the last schema read or none; the schema is read once per
// discovery TTL; a layer that does not ask for it sends no request.
func TestDeclaredFromTheCollection(t *testing.T) {
	t.Parallel()
	fields := layertest.Parcels{}.Fields()
	want := "pin text, owner text, site_address text, zoning text, land_use text, acres double precision, " +
		"assessed_value bigint, year_built bigint, bedrooms bigint, exempt boolean, deed_date date, township text"
	s := ogcapitest.New()
	s.Add("q", ogcapitest.Collection{Layer: layertest.Parcels{N: 20}, Queryables: ogcapitest.JSONSchema(fields, "geometry-polygon")})
	s.Add("both", ogcapitest.Collection{Layer: layertest.Parcels{N: 20}, Queryables: `{"properties":{"pin":{"type":"string"}}}`,
		Schema: ogcapitest.JSONSchema(fields, "geometry-polygon")})
	s.Add("none", ogcapitest.Collection{Layer: layertest.Parcels{N: 20}})
	srv := httptest.NewServer(s)
	defer srv.Close()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	c := ogcapi.NewClient(nil, nil, nil, ogcapi.WithClock(func() time.Time { return now }))
	poll := func(coll string, describe bool) (source.FetchStats, error) {
		t.Helper()
		l, _, err := c.Prepare(t.Context(), source.Layer{Kind: "ogcapi", URL: srv.URL + "/collections/" + coll, PageSize: 100, DescribeSchema: describe})
		if err != nil {
			t.Fatal(err)
		}
		col := &collect{}
		stats, err := c.Fetch(t.Context(), l, 0, col.handle)
		if err == nil && col.total() != 20 {
			t.Errorf("%s: %d features", coll, col.total())
		}
		return stats, err
	}

	for coll, origin := range map[string]string{"q": "ogcapi queryables", "both": "ogcapi schema"} {
		stats, err := poll(coll, true)
		if err != nil {
			t.Fatal(err)
		}
		if got := columnsOf(stats.Declared); got != want || stats.Declared.Geometry != "Polygon" || stats.Declared.Origin != origin {
			t.Errorf("%s: declared %q (%+v), want %q from the %s", coll, got, stats.Declared, want, origin)
		}
	}
	if stats, err := poll("none", true); err != nil || stats.Declared != nil || len(stats.Warnings) != 0 {
		t.Errorf("no schema linked: %v, declared %+v, warnings %q; want none, silently", err, stats.Declared, stats.Warnings)
	}
	if stats, err := poll("q", false); err != nil || stats.Declared != nil {
		t.Errorf("DescribeSchema off: %v, declared %+v", err, stats.Declared)
	}
	if n := s.Requests("/collections/q/queryables"); n != 1 {
		t.Errorf("queryables requested %d times, want 1 (cached)", n)
	}

	// The document breaks: within the TTL the cached schema stands; past
	// it, a warning and the last schema read.
	s.Add("q", ogcapitest.Collection{Layer: layertest.Parcels{N: 20}, Queryables: `{"type":"object","properties":`})
	if stats, err := poll("q", true); err != nil || columnsOf(stats.Declared) != want {
		t.Errorf("cached: %v, %q", err, columnsOf(stats.Declared))
	}
	now = now.Add(2 * ogcapi.DefaultDiscoveryTTL)
	stats, err := poll("q", true)
	if err != nil || columnsOf(stats.Declared) != want || !strings.Contains(strings.Join(stats.Warnings, "\n"), "its last one is used: reading the collection's schema (") {
		t.Errorf("broken past the TTL: %v, %q, warnings %q; want the last schema and a warning", err, columnsOf(stats.Declared), stats.Warnings)
	}
	// A client that never read one: a warning, types left to the values.
	fresh := ogcapi.NewClient(nil, nil, nil)
	l, _, err := fresh.Prepare(t.Context(), source.Layer{Kind: "ogcapi", URL: srv.URL + "/collections/q", PageSize: 100, DescribeSchema: true})
	if err != nil {
		t.Fatal(err)
	}
	stats, err = fresh.Fetch(t.Context(), l, 0, (&collect{}).handle)
	if err != nil || stats.Declared != nil || !strings.Contains(strings.Join(stats.Warnings, "\n"), "types are inferred from its values") {
		t.Errorf("broken, never read: %v, %+v, warnings %q", err, stats.Declared, stats.Warnings)
	}
}
