package feature_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/ingestd/ingestd/encoding/geojson"
	"github.com/ingestd/ingestd/encoding/gml"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feature/featuretest"
	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/ewkb"
	"github.com/twpayne/go-geom/encoding/wkt"
)

// The decoders' side of hostile input: GeometryCollections are stored, every
// dimension of a feature is bounded while streaming, bad text is repaired,
// an overlong id refuses its feature alone, and error texts stay short.

func wktOf(t testing.TB, g geom.T) string {
	t.Helper()
	s, err := wkt.Marshal(g)
	if err != nil {
		t.Fatalf("wkt of %#v: %v", g, err)
	}
	return s
}

// checkCollection checks what the store relies on: the collection and every
// member carry srid, and it encodes as EWKB (go-geom panics on a nil
// member; a layout it cannot encode is an error).
func checkCollection(t *testing.T, g geom.T, srid int) {
	t.Helper()
	if g.SRID() != srid {
		t.Errorf("%s: SRID %d, want %d", wktOf(t, g), g.SRID(), srid)
	}
	if gc, ok := g.(*geom.GeometryCollection); ok {
		for _, m := range gc.Geoms() {
			checkCollection(t, m, srid)
		}
	}
	if _, err := ewkb.Marshal(g, ewkb.NDR); err != nil && !strings.Contains(wktOf(t, g), "Z") {
		t.Errorf("%s: EWKB: %v", wktOf(t, g), err)
	}
}

func TestGeoJSONGeometryCollection(t *testing.T) {
	t.Parallel()
	gc := func(members string) string {
		return `{"type":"Feature","properties":null,"geometry":{"type":"GeometryCollection","geometries":[` + members + `]}}`
	}
	doc := `{"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"EPSG:2264"}},"features":[` + strings.Join([]string{
		gc(`{"type":"Point","coordinates":[1,2]},{"type":"LineString","coordinates":[[0,0],[1,1]]}`),
		gc(``),
		gc(`{"type":"GeometryCollection","geometries":[]},{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[3,4]}]}`),
		gc(`{"type":"Point","coordinates":[1,2,3]},{"type":"Polygon","coordinates":[[[0,0,1],[1,0,1],[1,1,1],[0,0,1]]]}`),
		gc(`{"type":"Point","coordinates":[1,2]},{"type":"Point","coordinates":[1,2,3]}`),
		gc(`{"type":"Point","coordinates":null},{"type":"MultiPolygon","coordinates":[]}`),
		`{"type":"Feature","properties":null,"geometry":{"type":"GeometryCollection"}}`,
	}, ",") + `]}`
	want := []struct {
		wkt    string
		layout geom.Layout
	}{
		{"GEOMETRYCOLLECTION (POINT (1 2), LINESTRING (0 0, 1 1))", geom.XY},
		{"GEOMETRYCOLLECTION EMPTY", geom.XY},
		{"GEOMETRYCOLLECTION (GEOMETRYCOLLECTION EMPTY, GEOMETRYCOLLECTION (POINT (3 4)))", geom.XY},
		{"GEOMETRYCOLLECTION Z (POINT Z (1 2 3), POLYGON Z ((0 0 1, 1 0 1, 1 1 1, 0 0 1)))", geom.XYZ},
		// Mixed layouts are kept for the store to judge (PostGIS refuses
		// them); the collection's layout covers both.
		{"GEOMETRYCOLLECTION Z (POINT (1 2), POINT Z (1 2 3))", geom.XYZ},
		{"GEOMETRYCOLLECTION (POINT EMPTY, MULTIPOLYGON EMPTY)", geom.XY},
		{"GEOMETRYCOLLECTION EMPTY", geom.XY},
	}
	for _, mk := range []func(string) io.Reader{
		func(s string) io.Reader { return strings.NewReader(s) },
		func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
	} {
		got, err := featuretest.ReadEvery(t, geojson.NewReader(mk(doc)))
		if err != nil || len(got) != len(want) {
			t.Fatalf("%d features, %v; want %d", len(got), err, len(want))
		}
		for i, f := range got {
			gc, ok := f.Geometry.(*geom.GeometryCollection)
			if !ok {
				t.Fatalf("feature %d: %T", i, f.Geometry)
			}
			if s := wktOf(t, gc); s != want[i].wkt || gc.Layout() != want[i].layout {
				t.Errorf("feature %d: %s %v, want %s %v", i, s, gc.Layout(), want[i].wkt, want[i].layout)
			}
			if i != 4 {
				checkCollection(t, gc, 2264)
			}
		}
	}

	// Shapes that are not collections of geometries fail the page with a
	// message, never a panic.
	for _, bad := range []string{
		`{"type":"GeometryCollection","geometries":[null]}`,
		`{"type":"GeometryCollection","geometries":[1]}`,
		`{"type":"GeometryCollection","geometries":{}}`,
		`{"type":"GeometryCollection","geometries":[{"type":"Circle"}]}`,
		strings.Repeat(`{"type":"GeometryCollection","geometries":[`, 40) + strings.Repeat(`]}`, 40),
	} {
		_, err := featuretest.ReadEvery(t, geojson.NewReader(strings.NewReader(featuretest.GeoJSONDoc(`{"type":"Feature","geometry":`+bad+`,"properties":null}`))))
		var de *feature.DecodeError
		if !errors.As(err, &de) || de.Index != 0 {
			t.Errorf("%s: %v, want a DecodeError of feature 0", featuretest.Truncate(bad, 60), err)
		}
	}
}

func TestGMLMultiGeometry(t *testing.T) {
	t.Parallel()
	pt := func(c string) string { return `<gml:Point><gml:pos>` + c + `</gml:pos></gml:Point>` }
	tests := []struct{ geom, wkt string }{
		{`<gml:MultiGeometry srsName="urn:ogc:def:crs:EPSG::4326"><gml:geometryMember>` + pt("35 -78") + `</gml:geometryMember><gml:geometryMember><gml:LineString><gml:posList>35 -78 36 -79</gml:posList></gml:LineString></gml:geometryMember></gml:MultiGeometry>`,
			"GEOMETRYCOLLECTION (POINT (-78 35), LINESTRING (-78 35, -79 36))"},
		{`<gml:MultiGeometry srsName="urn:ogc:def:crs:EPSG::4326"/>`, "GEOMETRYCOLLECTION EMPTY"},
		{`<gml:MultiGeometry srsName="urn:ogc:def:crs:EPSG::4326"><gml:geometryMembers>` + pt("1 2") + `<gml:MultiGeometry/>` + `<gml:MultiGeometry><gml:geometryMember>` + pt("3 4") + `</gml:geometryMember></gml:MultiGeometry></gml:geometryMembers></gml:MultiGeometry>`,
			"GEOMETRYCOLLECTION (POINT (2 1), GEOMETRYCOLLECTION EMPTY, GEOMETRYCOLLECTION (POINT (4 3)))"},
		{`<gml:MultiGeometry srsName="urn:ogc:def:crs:EPSG::4326" srsDimension="3"><gml:geometryMember><gml:Point><gml:pos>1 2 3</gml:pos></gml:Point></gml:geometryMember></gml:MultiGeometry>`,
			"GEOMETRYCOLLECTION Z (POINT Z (2 1 3))"},
	}
	for _, tt := range tests {
		got, err := featuretest.ReadWKT(t, gml.NewReader(bytes.NewReader([]byte(featuretest.GMLDoc("3.2", `<app:g>`+tt.geom+`</app:g>`)))))
		if err != nil || len(got) != 1 || got[0].WKT != tt.wkt || got[0].SRID != 4326 {
			t.Errorf("%s:\n got %+v %v\nwant %s", tt.geom, got, err, tt.wkt)
		}
	}
	r := gml.NewReader(strings.NewReader(featuretest.GMLDoc("2", `<app:g><gml:MultiGeometry srsName="EPSG:2264"><gml:geometryMember><gml:Point><gml:coordinates>1,2</gml:coordinates></gml:Point></gml:geometryMember><gml:geometryMember><gml:MultiGeometry/></gml:geometryMember></gml:MultiGeometry></app:g>`)))
	f, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	checkCollection(t, f.Geometry, 2264)
}

// TestDecoderLimits: each bound fails the page with a *LimitError naming
// the limit and the feature, at the bound and not before, in both formats.
func TestDecoderLimits(t *testing.T) {
	t.Parallel()
	lim := feature.Limits{FeatureBytes: 4000, ValueBytes: 100, Properties: 5, IDBytes: 50}
	props := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"p%d":%d`, i, i)
		}
		return "{" + b.String() + "}"
	}
	jsonFeature := func(props string) string {
		return `{"type":"Feature","id":"a","geometry":null,"properties":` + props + `}`
	}
	gmlProps := func(n int, value string) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `<app:p%d>%s</app:p%d>`, i, value, i)
		}
		return b.String()
	}
	ok := strings.Repeat("x", 100)
	over := strings.Repeat("x", 101)
	digits := "1" + strings.Repeat("0", 99)
	tests := []struct {
		gml   bool
		label string
		doc   string
		limit string // "" when the document is within the limits
	}{
		{label: "json string at the bound", doc: featuretest.GeoJSONDoc(jsonFeature(`{"s":"` + ok + `"}`))},
		{label: "json string over", doc: featuretest.GeoJSONDoc(jsonFeature(`{"s":"`+ok+`"}`), jsonFeature(`{"s":"`+over+`"}`)), limit: "value_bytes"},
		{label: "json escaped string over", doc: featuretest.GeoJSONDoc(jsonFeature(`{"s":"`+ok+`"}`), jsonFeature(`{"s":"`+strings.Repeat(`\n`, 51)+`"}`)), limit: "value_bytes"},
		{label: "json key over", doc: featuretest.GeoJSONDoc(jsonFeature(`{}`), jsonFeature(`{"`+over+`":1}`)), limit: "value_bytes"},
		{label: "json number at the bound", doc: featuretest.GeoJSONDoc(jsonFeature(`{"n":` + digits + `}`))},
		{label: "json number over", doc: featuretest.GeoJSONDoc(jsonFeature(`{}`), jsonFeature(`{"n":`+digits+`0}`)), limit: "value_bytes"},
		{label: "json coordinate over", doc: featuretest.GeoJSONDoc(jsonFeature(`{}`), `{"type":"Feature","properties":null,"geometry":{"type":"Point","coordinates":[`+digits+`0,1]}}`), limit: "value_bytes"},
		{label: "json properties at the bound", doc: featuretest.GeoJSONDoc(jsonFeature(props(5)))},
		{label: "json properties over", doc: featuretest.GeoJSONDoc(jsonFeature(props(5)), jsonFeature(props(6))), limit: "properties"},
		{label: "json nested members are not properties", doc: featuretest.GeoJSONDoc(jsonFeature(`{"a":` + props(5) + `,"b":[1,2,3,4,5,6,7]}`))},
		{label: "json feature over", doc: featuretest.GeoJSONDoc(jsonFeature(`{}`), jsonFeature(`{"l":[`+strings.Repeat(`"`+ok+`",`, 40)+`1]}`)), limit: "feature_bytes"},
		{label: "json member around the features over", doc: `{"type":"FeatureCollection","links":[` + strings.Repeat(`"`+ok+`",`, 40) + `1],"features":[]}`, limit: "feature_bytes"},
		{label: "json top-level number over", doc: `{"type":"FeatureCollection","numberMatched":` + digits + `0,"features":[]}`, limit: "value_bytes"},
		{gml: true, label: "gml text at the bound", doc: featuretest.GMLDoc("3.2", `<app:s>`+ok+`</app:s>`)},
		{gml: true, label: "gml text over", doc: featuretest.GMLDoc("3.2", `<app:s>`+over+`</app:s>`), limit: "value_bytes"},
		{gml: true, label: "gml text over in pieces", doc: featuretest.GMLDoc("3.2", `<app:s>`+ok+`<!-- -->x</app:s>`), limit: "value_bytes"},
		{gml: true, label: "gml CDATA over", doc: featuretest.GMLDoc("3.2", `<app:s><![CDATA[`+over+`]]></app:s>`), limit: "value_bytes"},
		{gml: true, label: "gml attribute over", doc: featuretest.GMLDoc("3.2", `<app:s a="`+over+`">1</app:s>`), limit: "value_bytes"},
		{gml: true, label: "gml attribute with references over", doc: featuretest.GMLDoc("3.2", `<app:s a="`+strings.Repeat("&amp;", 101)+`">1</app:s>`), limit: "value_bytes"},
		{gml: true, label: "gml properties at the bound", doc: featuretest.GMLDoc("3.2", gmlProps(5, "v"))},
		{gml: true, label: "gml properties over", doc: featuretest.GMLDoc("3.2", gmlProps(6, "v")), limit: "properties"},
		{gml: true, label: "gml feature over", doc: featuretest.GMLDoc("3.2", gmlProps(5, ok)+`<app:g><gml:LineString><gml:posList>`+strings.Repeat("1 2 ", 1000)+`</gml:posList></gml:LineString></app:g>`), limit: "feature_bytes"},
		{gml: true, label: "gml start tag over", doc: featuretest.GMLDoc("3.2", `<app:s `+strings.Repeat(`a="`+ok+`" `, 40)+`>1</app:s>`), limit: "feature_bytes"},
		{gml: true, label: "gml namespace declarations over", doc: `<wfs:FeatureCollection xmlns:wfs="x">` + strings.Repeat(`<x xmlns:a="`+ok+`">`, 50), limit: "feature_bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.label, func(t *testing.T) {
			var r feature.FeatureReader
			if tt.gml {
				r = gml.NewReader(iotest.HalfReader(strings.NewReader(tt.doc)), feature.WithLimits(lim))
			} else {
				r = geojson.NewReader(iotest.HalfReader(strings.NewReader(tt.doc)), feature.WithLimits(lim))
			}
			got, err := featuretest.ReadEvery(t, r)
			if tt.limit == "" {
				if err != nil || len(got) != 1 {
					t.Fatalf("%d features, %v; want 1 and no error", len(got), err)
				}
				return
			}
			var le *feature.LimitError
			if !errors.As(err, &le) || le.Name != tt.limit || !errors.Is(err, feature.ErrLimit) {
				t.Fatalf("err = %v, want limits.%s", err, tt.limit)
			}
			if len(got) == 1 && !strings.Contains(err.Error(), "feature 1") {
				t.Errorf("%v does not name feature 1", err)
			}
			if len(err.Error()) > 400 {
				t.Errorf("error of %d bytes: %s", len(err.Error()), err)
			}
		})
	}
}

// TestRefusedIDs: an id longer than IDBytes refuses its feature alone, with
// a reason that quotes the id truncated; the features around it are read as
// usual. An id holding a NUL is not refused: the store repairs it.
func TestRefusedIDs(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("9", 1<<20) // the hostile run's 1 MB id
	lim := feature.Limits{IDBytes: 1024, ValueBytes: 2 << 20}
	check := func(t *testing.T, got []feature.Feature, err error, refused int, want string) {
		t.Helper()
		if err != nil || len(got) != 3 {
			t.Fatalf("%d features, %v", len(got), err)
		}
		for i, f := range got {
			if i != refused {
				if f.Refused != "" || f.ID == "" {
					t.Errorf("feature %d: %+v", i, f)
				}
				continue
			}
			if !strings.Contains(f.Refused, want) || len(f.Refused) > 300 || f.ID != "" || f.Geometry != nil || f.Properties != nil {
				t.Errorf("refused feature: %q %q %v %s", featuretest.Truncate(f.Refused, 400), featuretest.Truncate(f.ID, 20), f.Geometry, f.Properties)
			}
		}
	}
	feat := func(id string) string {
		return `{"type":"Feature","id":` + id + `,"geometry":{"type":"Point","coordinates":[1,2]},"properties":{"pin":` + id + `}}`
	}
	for _, tt := range []struct{ id, want string }{
		{`"` + long + `"`, "id of 1048576 bytes exceeds limits.id_bytes (1024)"},
		{long, "id of 1048576 bytes exceeds limits.id_bytes (1024)"},
	} {
		doc := featuretest.GeoJSONDoc(feat(`"a"`), feat(tt.id), feat(`"c"`))
		got, err := featuretest.ReadEvery(t, geojson.NewReader(strings.NewReader(doc), feature.WithLimits(lim)))
		check(t, got, err, 1, tt.want)
		got, err = featuretest.ReadEvery(t, geojson.NewReader(strings.NewReader(doc), feature.WithLimits(lim), feature.WithIDProperty("pin")))
		check(t, got, err, 1, tt.want)
	}
	nul, err := featuretest.ReadEvery(t, geojson.NewReader(strings.NewReader(featuretest.GeoJSONDoc(feat(`"a\u0000b"`))), feature.WithLimits(lim)))
	if err != nil || len(nul) != 1 || nul[0].Refused != "" || nul[0].ID != "a\x00b" {
		t.Errorf("an id holding a NUL: %+v, %v; want it passed on for the store to repair", nul, err)
	}
	gmlFeat := func(id string) string {
		return `<wfs:member><app:f gml:id="` + id + `"><app:pin>` + id + `</app:pin></app:f></wfs:member>`
	}
	doc := strings.Replace(featuretest.GMLDoc("3.2", ``), `<wfs:member><app:f gml:id="f.1"></app:f></wfs:member>`, gmlFeat("a")+gmlFeat(long)+gmlFeat("c"), 1)
	for _, idProp := range []string{"", "pin"} {
		got, err := featuretest.ReadEvery(t, gml.NewReader(strings.NewReader(doc), feature.WithLimits(lim), feature.WithIDProperty(idProp)))
		check(t, got, err, 1, "id of 1048576 bytes exceeds limits.id_bytes (1024)")
	}
}

// TestRepairsBadText: invalid UTF-8 and lone surrogate escapes in property
// keys and values, and invalid UTF-8 in ids, are repaired (U+FFFD), not a
// failed page; \u0000 is kept for the store to judge.
func TestRepairsBadText(t *testing.T) {
	t.Parallel()
	tests := []struct{ props, want string }{
		{"{\"k\":\"caf\xe9\"}", "{\"k\":\"caf\uFFFD\"}"},
		{"{\"caf\xe9\":1}", "{\"caf\uFFFD\":1}"},
		{"{\"k\":\"\xed\xa0\x80\xc0\xaf\"}", "{\"k\":\"\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\"}"},
		{`{"k":"\ud800"}`, `{"k":"\ufffd"}`},
		{`{"k":"\udc00x"}`, `{"k":"\ufffdx"}`},
		{`{"\ud800":"\ud800\ud800\udc00"}`, `{"\ufffd":"\ufffd\ud800\udc00"}`},
		{`{"k":"\\ud800"}`, `{"k":"\\ud800"}`}, // an escaped backslash, not an escape
		{`{"k":"\ud83d\ude00 \u0000"}`, `{"k":"\ud83d\ude00 \u0000"}`},
		{`{"k":["\uDBFF",{"\uDFFF":"\uD800"}]}`, `{"k":["\ufffd",{"\ufffd":"\ufffd"}]}`},
	}
	for _, tt := range tests {
		doc := featuretest.GeoJSONDoc(`{"type":"Feature","id":"caf`+"\xe9"+`","geometry":null,"properties":`+tt.props+`}`, `{"type":"Feature","id":"ok","geometry":null,"properties":{}}`)
		got, err := featuretest.ReadEvery(t, geojson.NewReader(strings.NewReader(doc)))
		if err != nil || len(got) != 2 {
			t.Fatalf("%q: %d features, %v", tt.props, len(got), err)
		}
		if p := string(got[0].Properties); p != tt.want {
			t.Errorf("%q: properties %q, want %q", tt.props, p, tt.want)
		}
		if got[0].ID != "caf\uFFFD" {
			t.Errorf("id %q", got[0].ID)
		}
		if _, bad := feature.JSONTextStats(got[0].Properties); bad != 0 || !utf8.Valid(got[0].Properties) {
			t.Errorf("%q: still needs a repair", got[0].Properties)
		}
	}

	// GML: raw bytes that are not UTF-8 or not XML characters, and
	// references to such characters, in text, attributes and ids.
	doc := strings.Replace(featuretest.GMLDoc("3.2", "<app:name>caf\xe9 \x01&#0;</app:name><app:ok>fine</app:ok>"), `gml:id="f.1"`, "gml:id=\"f.\xff\"", 1)
	got, err := featuretest.ReadWKT(t, gml.NewReader(bytes.NewReader([]byte(doc))))
	if err != nil || len(got) != 1 {
		t.Fatalf("GML: %+v %v", got, err)
	}
	if got[0].ID != "f.\uFFFD" || got[0].Props != "{\"name\":\"caf\uFFFD \uFFFD\uFFFD\",\"ok\":\"fine\"}" {
		t.Errorf("GML: %+v", got[0])
	}
}

// TestCoordinatesBeyondRange: numbers beyond float64's range become ±Inf,
// outside the CRS's range are kept: both are the store's to count as
// invalid geometries; neither fails the page nor panics.
func TestCoordinatesBeyondRange(t *testing.T) {
	t.Parallel()
	doc := featuretest.GeoJSONDoc(
		`{"type":"Feature","geometry":{"type":"Point","coordinates":[500,100]},"properties":null}`,
		`{"type":"Feature","geometry":{"type":"Point","coordinates":[1e400,-1e400]},"properties":null}`,
		`{"type":"Feature","geometry":{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1e-400,1`+strings.Repeat("0", 400)+`]}]},"properties":null}`,
	)
	got, err := featuretest.ReadEvery(t, geojson.NewReader(strings.NewReader(doc)))
	if err != nil || len(got) != 3 {
		t.Fatalf("%d features, %v", len(got), err)
	}
	if c := got[0].Geometry.FlatCoords(); c[0] != 500 || c[1] != 100 {
		t.Errorf("lon 500 lat 100 read as %v", c)
	}
	if c := got[1].Geometry.FlatCoords(); !math.IsInf(c[0], 1) || !math.IsInf(c[1], -1) {
		t.Errorf("1e400 read as %v", c)
	}
	if c := got[2].Geometry.(*geom.GeometryCollection).Geom(0).FlatCoords(); c[0] != 0 || !math.IsInf(c[1], 1) {
		t.Errorf("1e-400, 1e400 read as %v", c)
	}
	gmlGot, err := featuretest.ReadWKT(t, gml.NewReader(bytes.NewReader([]byte(featuretest.GMLDoc("3.2", `<app:g><gml:LineString><gml:posList>1e400 2 500 100</gml:posList></gml:LineString></app:g>`)))))
	if err != nil || len(gmlGot) != 1 || gmlGot[0].WKT != "LINESTRING (+Inf 2, 500 100)" {
		t.Errorf("GML: %+v %v", gmlGot, err)
	}
}

// TestDecoderErrorsAreShort: input quoted in an error is truncated, so a 20
// MB number or name cannot make a 20 MB log line (limits raised so that the
// value reaches the code that quotes it).
func TestDecoderErrorsAreShort(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("7", 1<<20)
	lim := feature.Limits{ValueBytes: 64 << 20, FeatureBytes: 64 << 20}
	for _, doc := range []string{
		`{"type":"FeatureCollection","numberMatched":-` + big + `,"features":[]}`,
		`{"type":"` + big + `","features":[]}`,
		`{"type":"FeatureCollection","features":[{"type":"` + big + `"}]}`,
		featuretest.GeoJSONDoc(`{"type":"Feature","geometry":{"type":"` + big + `","coordinates":[]},"properties":null}`),
		featuretest.GeoJSONDoc(`{"type":"Feature","geometry":{"type":"Point","coordinates":[1,2]},"properties":null,"id":{"x":"` + big + `"}}`),
		featuretest.GeoJSONDoc(`{"type":"Feature","geometry":{"type":"Point","coordinates":[1,2],"crs":{"type":"name","properties":{"name":"` + big + `"}}},"properties":null}`),
		`{"type":"FeatureCollection","features":` + big + `}`,
		`[` + big + `]`,
	} {
		_, err := featuretest.ReadEvery(t, geojson.NewReader(strings.NewReader(doc), feature.WithLimits(lim)))
		if err == nil || len(err.Error()) > 600 || !utf8.ValidString(err.Error()) {
			t.Errorf("%s: error of %d bytes: %.300v", featuretest.Truncate(doc, 60), len(fmt.Sprint(err)), err)
		}
	}
	for _, doc := range []string{
		featuretest.GMLDoc("3.2", `<app:g><gml:Point srsName="`+big+`"><gml:pos>1 2</gml:pos></gml:Point></app:g>`),
		featuretest.GMLDoc("3.2", `<app:g><gml:Point><gml:pos>`+big+`x 2</gml:pos></gml:Point></app:g>`),
		featuretest.GMLDoc("3.2", `<app:g><gml:Point srsDimension="`+big+`"><gml:pos>1 2</gml:pos></gml:Point></app:g>`),
		featuretest.GMLDoc("2", `<app:g><gml:Point><gml:coordinates cs="`+big+`">1,2</gml:coordinates></gml:Point></app:g>`),
		featuretest.GMLDoc("3.2", `<app:`+strings.Repeat("n", 5000)+`>1</app:n>`),
		`<wfs:FeatureCollection xmlns:wfs="x" numberMatched="` + big + `"/>`,
	} {
		_, err := featuretest.ReadEvery(t, gml.NewReader(strings.NewReader(doc), feature.WithLimits(lim)))
		if err == nil || len(err.Error()) > 600 || !utf8.ValidString(err.Error()) {
			t.Errorf("%s: error of %d bytes: %.300v", featuretest.Truncate(doc, 60), len(fmt.Sprint(err)), err)
		}
	}
}

// endlessValue streams prefix, then filler bytes without end (up to n),
// then suffix: a body that is never in memory.
type endlessValue struct {
	prefix, suffix []byte
	fill           byte
	n              int64 // filler bytes left
}

func (e *endlessValue) Read(p []byte) (int, error) {
	k := 0
	if len(e.prefix) > 0 {
		k = copy(p, e.prefix)
		e.prefix = e.prefix[k:]
		return k, nil
	}
	if e.n > 0 {
		k = int(min(int64(len(p)), e.n))
		for i := range k {
			p[i] = e.fill
		}
		e.n -= int64(k)
		return k, nil
	}
	if len(e.suffix) > 0 {
		k = copy(p, e.suffix)
		e.suffix = e.suffix[k:]
		return k, nil
	}
	return 0, io.EOF
}

// allocatedWhile returns the bytes allocated while fn ran.
func allocatedWhile(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestHugeValueBoundedMemory: a 200 MB string property, a 200 MB GML text
// and a 200 MB XML attribute fail by limits.value_bytes after about
// ValueBytes of input, and the decoder allocates a small multiple of
// ValueBytes in all, not the value (the hostile run peaked at 876 MB for a
// 200 MB property). `go test ./wfs -run TestHugeValueBoundedMemory -v`
// prints the figures.
func TestHugeValueBoundedMemory(t *testing.T) {
	const size = 200 << 20
	lim := feature.DefaultLimits()
	bodies := []struct {
		name string
		gml  bool
		body func() io.Reader
	}{
		{"geojson string property", false, func() io.Reader {
			return &endlessValue{prefix: []byte(`{"type":"FeatureCollection","features":[{"type":"Feature","geometry":null,"properties":{"s":"`), fill: 'a', n: size, suffix: []byte(`"}}]}`)}
		}},
		{"geojson number", false, func() io.Reader {
			return &endlessValue{prefix: []byte(`{"type":"FeatureCollection","features":[{"type":"Feature","geometry":null,"properties":{"n":1`), fill: '0', n: size, suffix: []byte(`}}]}`)}
		}},
		{"gml text property", true, func() io.Reader {
			doc := featuretest.GMLDoc("3.2", `<app:s>@</app:s>`)
			i := strings.Index(doc, "@")
			return &endlessValue{prefix: []byte(doc[:i]), fill: 'a', n: size, suffix: []byte(doc[i+1:])}
		}},
		{"gml attribute", true, func() io.Reader {
			doc := featuretest.GMLDoc("3.2", `<app:s a="@">1</app:s>`)
			i := strings.Index(doc, "@")
			return &endlessValue{prefix: []byte(doc[:i]), fill: 'a', n: size, suffix: []byte(doc[i+1:])}
		}},
	}
	for _, b := range bodies {
		body := b.body().(*endlessValue)
		var err error
		alloc := allocatedWhile(func() {
			if b.gml {
				_, err = featuretest.ReadEvery(t, gml.NewReader(body, feature.WithLimits(lim)))
			} else {
				_, err = featuretest.ReadEvery(t, geojson.NewReader(body, feature.WithLimits(lim)))
			}
		})
		var le *feature.LimitError
		if !errors.As(err, &le) || le.Name != "value_bytes" {
			t.Errorf("%s: %v, want limits.value_bytes", b.name, err)
		}
		read := size - body.n
		t.Logf("%s of %d MB: %v; read %.1f MB of it, allocated %.1f MB (value_bytes %d MB)",
			b.name, size>>20, err, float64(read)/(1<<20), float64(alloc)/(1<<20), lim.ValueBytes>>20)
		if alloc > uint64(6*lim.ValueBytes) || read > 2*lim.ValueBytes {
			t.Errorf("%s: allocated %d bytes and read %d: not bounded by value_bytes", b.name, alloc, read)
		}
	}
}

// TestEndlessFeatureBoundedMemory: one feature that never ends (an array
// of short strings, each within ValueBytes) fails by feature_bytes.
func TestEndlessFeatureBoundedMemory(t *testing.T) {
	lim := feature.DefaultLimits()
	body := &endlessValue{prefix: []byte(`{"type":"FeatureCollection","features":[{"type":"Feature","geometry":null,"properties":{"l":[` + strings.Repeat(`"x",`, 10)), fill: ' ', n: 1 << 30}
	var err error
	alloc := allocatedWhile(func() { _, err = featuretest.ReadEvery(t, geojson.NewReader(body, feature.WithLimits(lim))) })
	var le *feature.LimitError
	if !errors.As(err, &le) || le.Name != "feature_bytes" {
		t.Fatalf("%v, want limits.feature_bytes", err)
	}
	t.Logf("endless feature: %v; allocated %.1f MB (feature_bytes %d MB)", err, float64(alloc)/(1<<20), lim.FeatureBytes>>20)
	if alloc > uint64(6*lim.FeatureBytes) {
		t.Errorf("allocated %d bytes", alloc)
	}
	gbody := &endlessValue{prefix: []byte(featuretest.GMLDoc("3.2", "")[:strings.Index(featuretest.GMLDoc("3.2", ""), "</app:f>")]), fill: ' ', n: 1 << 30}
	alloc = allocatedWhile(func() { _, err = featuretest.ReadEvery(t, gml.NewReader(gbody, feature.WithLimits(lim))) })
	if !errors.As(err, &le) || le.Name != "feature_bytes" {
		t.Fatalf("GML: %v, want limits.feature_bytes", err)
	}
	t.Logf("endless GML feature: %v; allocated %.1f MB", err, float64(alloc)/(1<<20))
	if alloc > uint64(6*lim.FeatureBytes) {
		t.Errorf("GML: allocated %d bytes", alloc)
	}
}

// TestDeepNestingBounded: nesting is bounded in properties (validJSON,
// 10000), in GeometryCollections (32) and in GML elements (256): each is
// the page's error, with a short message, and no stack overflow.
func TestDeepNestingBounded(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", 200000) + strings.Repeat("]", 200000)
	_, err := featuretest.ReadEvery(t, geojson.NewReader(strings.NewReader(featuretest.GeoJSONDoc(`{"type":"Feature","geometry":null,"properties":{"a":`+deep+`}}`))))
	if err == nil || !strings.Contains(err.Error(), "nested too deeply") {
		t.Errorf("deep properties: %v", err)
	}
	_, err = featuretest.ReadEvery(t, gml.NewReader(strings.NewReader(featuretest.GMLDoc("3.2", strings.Repeat("<app:a>", 300)+strings.Repeat("</app:a>", 300)))))
	if err == nil || !strings.Contains(err.Error(), "nested deeper than 256") {
		t.Errorf("deep GML: %v", err)
	}
	_, err = featuretest.ReadEvery(t, gml.NewReader(strings.NewReader(featuretest.GMLDoc("3.2", `<app:g>`+strings.Repeat("<gml:MultiGeometry><gml:geometryMember>", 150)+strings.Repeat("</gml:geometryMember></gml:MultiGeometry>", 150)+`</app:g>`))))
	if err == nil || !strings.Contains(err.Error(), "nested deeper than 256") {
		t.Errorf("deep GML collections: %v", err)
	}
}

// FuzzHostileLimits runs both readers with small limits over fuzzed input:
// whatever the input, a feature is within the limits, its properties are
// valid UTF-8 JSON without lone surrogates, and nothing panics.
func FuzzHostileLimits(f *testing.F) {
	f.Add([]byte(featuretest.GeoJSONDoc(`{"type":"Feature","id":"x","geometry":{"type":"GeometryCollection","geometries":[]},"properties":{"a":"`+"\xff"+`\ud800"}}`)), false)
	f.Add([]byte(featuretest.GMLDoc("3.2", "<app:a>\xff</app:a><app:g><gml:MultiGeometry/></app:g>")), true)
	lim := feature.Limits{FeatureBytes: 300, ValueBytes: 20, Properties: 3, IDBytes: 8}
	f.Fuzz(func(t *testing.T, doc []byte, isGML bool) {
		var r feature.FeatureReader = geojson.NewReader(bytes.NewReader(doc), feature.WithLimits(lim))
		if isGML {
			r = gml.NewReader(bytes.NewReader(doc), feature.WithLimits(lim))
		}
		got, err := featuretest.ReadEvery(t, r)
		if err != nil && len(err.Error()) > 1000 {
			t.Fatalf("error of %d bytes", len(err.Error()))
		}
		for _, f := range got {
			if f.Refused != "" {
				continue
			}
			if len(f.ID) > lim.IDBytes || !utf8.ValidString(f.ID) {
				t.Fatalf("id %q", f.ID)
			}
			if n, bad := feature.JSONTextStats(f.Properties); n > lim.Properties || bad != 0 || !utf8.Valid(f.Properties) {
				t.Fatalf("properties %q", f.Properties)
			}
		}
	})
}

// TestGMLManyProperties: a feature of many properties, some repeated, is
// rendered as one with few (repeats become arrays in document order), by
// the map that keeps it linear.
func TestGMLManyProperties(t *testing.T) {
	t.Parallel()
	var doc strings.Builder
	want := map[string][]string{}
	var order []string
	for i := range 3000 {
		name := fmt.Sprintf("p%d", i%1000)
		if i%1000 >= 990 {
			name = fmt.Sprintf("u%d", i) // once only
		}
		if _, ok := want[name]; !ok {
			order = append(order, name)
		}
		want[name] = append(want[name], strconv.Itoa(i))
		fmt.Fprintf(&doc, "<app:%s>%d</app:%s>", name, i, name)
	}
	var wantJSON strings.Builder
	wantJSON.WriteByte('{')
	for k, name := range order {
		if k > 0 {
			wantJSON.WriteByte(',')
		}
		vals := want[name]
		if len(vals) == 1 {
			fmt.Fprintf(&wantJSON, `"%s":"%s"`, name, vals[0])
			continue
		}
		fmt.Fprintf(&wantJSON, `"%s":["%s"]`, name, strings.Join(vals, `","`))
	}
	wantJSON.WriteByte('}')
	got, err := featuretest.ReadWKT(t, gml.NewReader(bytes.NewReader([]byte(featuretest.GMLDoc("3.2", doc.String())))))
	if err != nil || len(got) != 1 || got[0].Props != wantJSON.String() {
		t.Fatalf("%v %d features; props %.200s\nwant %.200s", err, len(got), got[0].Props, wantJSON.String())
	}
}

// TestGMLNamespaceFlood: declarations in scope are bounded in number (each
// prefix lookup scans them) as well as in bytes.
func TestGMLNamespaceFlood(t *testing.T) {
	t.Parallel()
	var decl strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&decl, ` xmlns:p%d="u"`, i)
	}
	doc := `<wfs:FeatureCollection xmlns:wfs="x"` + decl.String() + `/>`
	_, err := featuretest.ReadEvery(t, gml.NewReader(strings.NewReader(doc)))
	if err == nil || !strings.Contains(err.Error(), "namespace declarations") {
		t.Errorf("%v", err)
	}
}
