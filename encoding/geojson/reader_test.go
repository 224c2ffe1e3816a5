package geojson

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"
	"unicode/utf8"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feature/featuretest"
	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/ewkb"
)

// decoded is a feature copied out of the reader.
type decoded struct {
	ID    string
	Type  string // geometry type, "" for null
	SRID  int
	Props string
}

// readAll drains r, checking the reader's invariants on the way.
func readAll(t testing.TB, r feature.FeatureReader) ([]decoded, error) {
	t.Helper()
	var out []decoded
	for {
		f, err := r.Next()
		if err != nil {
			if f != nil {
				t.Fatalf("Next returned a feature with error %v", err)
			}
			if f2, err2 := r.Next(); f2 != nil || (err == io.EOF) != (err2 == io.EOF) {
				t.Fatalf("Next after %v = %v, %v; want no feature and the same kind of error", err, f2, err2)
			}
			if err == io.EOF {
				return out, nil
			}
			return out, err
		}
		d := decoded{ID: f.ID, Props: string(f.Properties)}
		if f.Geometry != nil {
			d.SRID = f.Geometry.SRID()
			d.Type = fmt.Sprintf("%T", f.Geometry)
		}
		out = append(out, d)
	}
}

func TestGeoJSONReaderGeoServerPage(t *testing.T) {
	t.Parallel()
	r := NewReader(bytes.NewReader(featuretest.ReadTestdata(t, "geoserver_2_0_page.json")))
	if r.NumberMatched() != -1 || r.NumberReturned() != -1 {
		t.Errorf("before reading: matched %d returned %d, want -1 -1", r.NumberMatched(), r.NumberReturned())
	}
	got, err := readAll(t, r)
	if err != nil {
		t.Fatal(err)
	}
	want := []decoded{
		{ID: "parcels.1", Type: "*geom.Polygon", SRID: 4326},
		{ID: "parcels.2", Type: "*geom.Polygon", SRID: 4326},
		{ID: "parcels.3"}, // null geometry
	}
	if len(got) != len(want) {
		t.Fatalf("got %d features, want %d", len(got), len(want))
	}
	for i := range want {
		got[i].Props = ""
		if got[i] != want[i] {
			t.Errorf("feature %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if r.NumberMatched() != 12 || r.NumberReturned() != 3 {
		t.Errorf("matched %d returned %d, want 12 3", r.NumberMatched(), r.NumberReturned())
	}
}

func TestGeoJSONReaderMemberOrders(t *testing.T) {
	t.Parallel()
	feat := `{"type":"Feature","id":1,"geometry":{"type":"Point","coordinates":[1,2]},"properties":{"a":1}}`
	tests := []struct {
		name          string
		doc           string
		matched, retd int
		matchedText   string
	}{
		{"counts first", `{"numberMatched":10,"numberReturned":1,"type":"FeatureCollection","features":[` + feat + `]}`, 10, 1, ""},
		{"counts last", `{"type":"FeatureCollection","features":[` + feat + `],"numberMatched":10,"numberReturned":1}`, 10, 1, ""},
		{"type last, bbox and links skipped", `{"bbox":[0,0,1,1],"links":[{"href":"x","rel":"next"}],"features":[` + feat + `],"type":"FeatureCollection"}`, -1, -1, ""},
		{"totalFeatures stands in", `{"type":"FeatureCollection","totalFeatures":7,"features":[` + feat + `]}`, 7, -1, ""},
		{"numberMatched beats totalFeatures", `{"type":"FeatureCollection","numberMatched":9,"features":[` + feat + `],"totalFeatures":7}`, 9, -1, ""},
		{"unknown counts", `{"type":"FeatureCollection","numberMatched":"unknown","totalFeatures":"unknown","features":[` + feat + `]}`, -1, -1, `"unknown"`},
		{"quoted counts", `{"type":"FeatureCollection","numberMatched":"30","numberReturned":" 1 ","features":[` + feat + `]}`, 30, 1, ""},
		{"null count", `{"type":"FeatureCollection","numberMatched":null,"features":[` + feat + `]}`, -1, -1, ""},
		{"whitespace and BOM-free padding", "\n\t {\n\"type\" : \"FeatureCollection\" ,\n\"features\" : [ " + feat + " ] }\n\n", -1, -1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tt.doc))
			got, err := readAll(t, r)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].ID != "1" || got[0].Props != `{"a":1}` || got[0].SRID != 4326 {
				t.Errorf("features = %+v", got)
			}
			if r.NumberMatched() != tt.matched || r.NumberReturned() != tt.retd || r.NumberMatchedText() != tt.matchedText {
				t.Errorf("matched %d (%q) returned %d, want %d (%q) %d", r.NumberMatched(), r.NumberMatchedText(), r.NumberReturned(),
					tt.matched, tt.matchedText, tt.retd)
			}
		})
	}
}

func TestGeoJSONReaderCRS(t *testing.T) {
	t.Parallel()
	pt := `{"type":"Feature","geometry":{"type":"Point","coordinates":[1,2]},"properties":null}`
	crs := func(name string) string {
		return `"crs":{"type":"name","properties":{"name":"` + name + `"}}`
	}
	tests := []struct {
		doc  string
		opts []feature.ReaderOption
		want int
	}{
		{`{"type":"FeatureCollection",` + crs("EPSG:2264") + `,"features":[` + pt + `]}`, nil, 2264},
		{`{"type":"FeatureCollection",` + crs("urn:ogc:def:crs:EPSG::3857") + `,"features":[` + pt + `]}`, nil, 3857},
		{`{"type":"FeatureCollection",` + crs("urn:ogc:def:crs:EPSG:6.6:26917") + `,"features":[` + pt + `]}`, nil, 26917},
		{`{"type":"FeatureCollection",` + crs("http://www.opengis.net/def/crs/EPSG/0/2913") + `,"features":[` + pt + `]}`, nil, 2913},
		{`{"type":"FeatureCollection",` + crs("urn:ogc:def:crs:OGC:1.3:CRS84") + `,"features":[` + pt + `]}`, []feature.ReaderOption{feature.WithSRID(2264)}, 4326},
		{`{"type":"FeatureCollection","crs":{"type":"EPSG","properties":{"code":32617}},"features":[` + pt + `]}`, nil, 32617},
		{`{"type":"FeatureCollection","crs":null,"features":[` + pt + `]}`, nil, 4326},
		{`{"type":"FeatureCollection","features":[` + pt + `]}`, []feature.ReaderOption{feature.WithSRID(2264)}, 2264},
		// A crs after the features that agrees with what they were read as is fine.
		{`{"type":"FeatureCollection","features":[` + pt + `],` + crs("urn:ogc:def:crs:EPSG::4326") + `}`, nil, 4326},
		// A crs on the geometry itself wins.
		{`{"type":"FeatureCollection","features":[{"type":"Feature","geometry":{"type":"Point","coordinates":[1,2],` + crs("EPSG:6543") + `},"properties":{}}]}`, nil, 6543},
	}
	for _, tt := range tests {
		got, err := readAll(t, NewReader(strings.NewReader(tt.doc), tt.opts...))
		if err != nil {
			t.Errorf("%s: %v", tt.doc, err)
			continue
		}
		if len(got) != 1 || got[0].SRID != tt.want {
			t.Errorf("%s: got %+v, want SRID %d", tt.doc, got, tt.want)
		}
	}

	got, err := readAll(t, NewReader(bytes.NewReader(featuretest.ReadTestdata(t, "gdal_projected_crs_first.geojson")), feature.WithIDProperty("OBJECTID")))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].SRID != 2264 || got[0].Type != "*geom.MultiPolygon" || got[0].ID != "101" || got[1].ID != "102" {
		t.Errorf("gdal file: %+v", got)
	}

	// GeoServer writes crs last; a projected one contradicts the SRID the
	// features were handed out with, and must fail the page, not mislabel it.
	_, err = readAll(t, NewReader(bytes.NewReader(featuretest.ReadTestdata(t, "geoserver_projected_crs_last.json"))))
	var de *feature.DecodeError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "2264") {
		t.Errorf("crs last: err = %v, want a DecodeError naming EPSG:2264", err)
	}
	// Configured with the right SRID, the same body reads.
	if got, err := readAll(t, NewReader(bytes.NewReader(featuretest.ReadTestdata(t, "geoserver_projected_crs_last.json")), feature.WithSRID(2264))); err != nil || len(got) != 1 || got[0].SRID != 2264 {
		t.Errorf("crs last with WithSRID(2264): %+v, %v", got, err)
	}

	_, err = readAll(t, NewReader(strings.NewReader(`{"type":"FeatureCollection",`+crs("EPSG:banana")+`,"features":[]}`)))
	if err == nil {
		t.Error("unknown crs name: no error")
	}
}

func TestGeoJSONReaderIDs(t *testing.T) {
	t.Parallel()
	doc := `{"type":"FeatureCollection","features":[
	{"type":"Feature","id":"a.1","geometry":null,"properties":{"pin":"P1","n":1}},
	{"type":"Feature","id":42,"geometry":null,"properties":{"pin":12345678901234567890,"n":2}},
	{"type":"Feature","id":4.2e1,"geometry":null,"properties":{"pin":42.0,"n":3}},
	{"type":"Feature","geometry":null,"properties":{"n":4,"nested":{"pin":"no"},"s":"\"pin\":\"no\""}},
	{"type":"Feature","id":null,"geometry":null,"properties":{"pin":null}},
	{"type":"Feature","id":"x","geometry":null,"properties":{"p\u0069n":"esc\u00e9"}},
	{"type":"Feature","id":-0,"geometry":null,"properties":{"pin":1.5}}
	]}`
	var ids, pins []string
	for _, prop := range []string{"", "pin"} {
		var opts []feature.ReaderOption
		if prop != "" {
			opts = append(opts, feature.WithIDProperty(prop))
		}
		got, err := readAll(t, NewReader(strings.NewReader(doc), opts...))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range got {
			if prop == "" {
				ids = append(ids, d.ID)
			} else {
				pins = append(pins, d.ID)
			}
		}
	}
	if want := []string{"a.1", "42", "42", "", "", "x", "0"}; fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Errorf("GeoJSON ids = %q, want %q", ids, want)
	}
	if want := []string{"P1", "12345678901234567890", "42", "", "", "escé", "1.5"}; fmt.Sprint(pins) != fmt.Sprint(want) {
		t.Errorf("property ids = %q, want %q", pins, want)
	}

	for _, bad := range []string{
		`{"type":"FeatureCollection","features":[{"type":"Feature","id":{"a":1},"geometry":null,"properties":null}]}`,
		`{"type":"FeatureCollection","features":[{"type":"Feature","id":true,"geometry":null,"properties":null}]}`,
	} {
		if _, err := readAll(t, NewReader(strings.NewReader(bad))); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestGeoJSONReaderLoneFeature(t *testing.T) {
	t.Parallel()
	got, err := readAll(t, NewReader(bytes.NewReader(featuretest.ReadTestdata(t, "lone_feature.geojson")), feature.WithIDProperty("asset_id")))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != "9001" || got[0].Type != "*geom.Point" || !strings.Contains(got[0].Props, "City Hall") {
		t.Errorf("lone feature = %+v", got)
	}
}

// TestGeoJSONReaderErrors: malformed or cut documents are errors naming
// where they went wrong, never a short page.
func TestGeoJSONReaderErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ doc, want string }{
		{``, "empty document"},
		{`   `, "empty document"},
		{`[]`, "not a JSON object"},
		{`{"type":"FeatureCollection"}`, `without a "features"`},
		{`{"type":"FeatureCollection","features":null}`, "not an array"},
		{`{"type":"Polygon","coordinates":[]}`, "not a FeatureCollection"},
		{`{"type":"FeatureCollection","features":[{"type":"Feature","geometry":null,"properties":null},null]}`, "feature 1"},
		{`{"type":"FeatureCollection","features":[{"type":"Feature","geometry":{"type":"Point","coordinates":["x"]},"properties":null}]}`, "feature 0: geometry"},
		{`{"type":"FeatureCollection","features":[{"type":"Feature","geometry":{"type":"Hexagon","coordinates":[]},"properties":null}]}`, "feature 0: geometry"},
		{`{"type":"FeatureCollection","features":[{"type":"Feature","geometry":null,"properties":[1]}]}`, "properties is not an object"},
		{`{"type":"FeatureCollection","features":[]}{"type":"FeatureCollection","features":[]}`, "after the document"},
		{`{"type":"FeatureCollection","features":[]`, "unexpected EOF"},
		{`{"type":"FeatureCollection","features":[{"type":"Feature","geometry":null,"properties":null}`, "unexpected EOF"},
	}
	for _, tt := range tests {
		_, err := readAll(t, NewReader(strings.NewReader(tt.doc)))
		var de *feature.DecodeError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "geojson: ") {
			t.Errorf("%q: err = %v, want a DecodeError containing %q", tt.doc, err, tt.want)
		}
	}
}

// TestGeoJSONReaderEveryPrefixFails cuts the recorded page at every byte: no
// prefix may read as a complete page.
func TestGeoJSONReaderEveryPrefixFails(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"geoserver_2_0_page.json", "gdal_projected_crs_first.geojson", "lone_feature.geojson"} {
		full := bytes.TrimRight(featuretest.ReadTestdata(t, name), "\n ")
		for n := 0; n < len(full); n++ {
			_, err := readAll(t, NewReader(bytes.NewReader(full[:n]), feature.WithSRID(2264)))
			if err == nil {
				t.Fatalf("%s cut at %d bytes (%q…) read without error", name, n, full[max(0, n-20):n])
			}
		}
	}
	_, err := readAll(t, NewReader(bytes.NewReader(featuretest.ReadTestdata(t, "truncated_page.json"))))
	if !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "feature 2") {
		t.Errorf("truncated_page.json: %v, want unexpected EOF at feature 2", err)
	}
}

func TestGeoJSONReaderReusesFeature(t *testing.T) {
	t.Parallel()
	r := NewReader(bytes.NewReader(featuretest.ReadTestdata(t, "geoserver_2_0_page.json")))
	f1, _ := r.Next()
	kept := *f1 // the documented way to keep a feature
	f2, _ := r.Next()
	if f1 != f2 {
		t.Error("Next returned a new *Feature; the reader is documented to reuse it")
	}
	if kept.ID != "parcels.1" || !strings.Contains(string(kept.Properties), "SMITH") {
		t.Errorf("a shallow copy did not survive the next call: %+v", kept)
	}
}

func FuzzGeoJSONReader(f *testing.F) {
	entries, err := os.ReadDir(featuretest.TestdataDir(f))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		f.Add(featuretest.ReadTestdata(f, e.Name()), "")
	}
	f.Add([]byte(`{"type":"FeatureCollection","features":[{"type":"Feature","id":1,"geometry":null,"properties":{"k":"v"}}]}`), "k")
	for _, g := range geometrySamples {
		f.Add([]byte(`{"type":"FeatureCollection","features":[{"type":"Feature","id":"g","geometry":`+g+`,"properties":{"k":"v"}}]}`), "")
	}
	f.Add([]byte("{\"type\":\"FeatureCollection\",\"features\":[{\"type\":\"Feature\",\"id\":\"\xff\",\"geometry\":null,\"properties\":{\"\\ud800\xc0\":\"\\udc00\\u0000\xed\xa0\x80\"}}]}"), "")
	f.Fuzz(func(t *testing.T, doc []byte, idProp string) {
		r := NewReader(iotest.OneByteReader(bytes.NewReader(doc)), feature.WithIDProperty(idProp))
		failed := false
		var props []string
		for i := 0; i < 1_000_000; i++ {
			feat, err := r.Next()
			if feat != nil && err != nil {
				t.Fatalf("feature and error %v together", err)
			}
			if feat != nil && failed {
				t.Fatal("a feature after an error")
			}
			if feat != nil {
				props = append(props, string(feat.Properties))
				if feat.Properties != nil {
					if _, bad := feature.JSONTextStats(feat.Properties); bad != 0 || !utf8.Valid(feat.Properties) || !json.Valid(feat.Properties) {
						t.Fatalf("properties %q: not repaired", feat.Properties)
					}
				}
				if !utf8.ValidString(feat.ID) {
					t.Fatalf("id %q: not valid UTF-8", feat.ID)
				}
				if feat.Geometry != nil {
					if _, err := ewkb.Marshal(feat.Geometry, ewkb.NDR); err != nil && !mixedLayouts(feat.Geometry) {
						t.Fatalf("geometry %#v: %v", feat.Geometry, err)
					}
				}
			}
			if err == io.EOF {
				// A document read to the end is JSON, and encoding/json
				// sees the same features (as values: the reader repairs
				// bad text the way encoding/json decodes it).
				if !json.Valid(doc) {
					t.Fatalf("read %d features from invalid JSON", len(props))
				}
				var ref struct {
					Features []struct{ Properties json.RawMessage }
				}
				if json.Unmarshal(doc, &ref) == nil && ref.Features != nil {
					if len(ref.Features) != len(props) {
						t.Fatalf("%d features, encoding/json sees %d", len(props), len(ref.Features))
					}
					for i, rf := range ref.Features {
						want := string(rf.Properties)
						if want == "null" {
							want = ""
						}
						if props[i] != want && !sameJSONValue(props[i], want) {
							t.Fatalf("feature %d: properties %q, encoding/json %q", i, props[i], want)
						}
					}
				}
				return
			}
			if err != nil {
				if failed {
					return // the second Next after an error also failed: good
				}
				failed = true
			}
		}
		t.Fatal("Next never ended")
	})
}

// sameJSONValue reports whether two JSON texts decode to the same value.
func sameJSONValue(a, b string) bool {
	var va, vb any
	if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// mixedLayouts reports whether g is a collection whose members' layouts
// differ (or a member has none): kept by the decoders for the store to
// judge, not encodable as one EWKB.
func mixedLayouts(g geom.T) bool {
	gc, ok := g.(*geom.GeometryCollection)
	if !ok {
		return g.Layout() == geom.NoLayout
	}
	for _, m := range gc.Geoms() {
		if m.Layout() != gc.Layout() || mixedLayouts(m) {
			return true
		}
	}
	return false
}

// benchCollection generates n 20-vertex polygons with a handful of properties.
func benchCollection(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"type":"FeatureCollection","features":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"Feature","id":"parcels.%d","geometry":{"type":"Polygon","coordinates":[[`, i)
		x, y := -78.6+float64(i%100)*0.001, 35.7+float64(i/100)*0.001
		for v := range 20 {
			if v > 0 {
				b.WriteByte(',')
			}
			if v == 19 {
				fmt.Fprintf(&b, "[%.6f,%.6f]", x, y)
				continue
			}
			fmt.Fprintf(&b, "[%.6f,%.6f]", x+float64(v%5)*0.0001, y+float64(v/5)*0.0001)
		}
		fmt.Fprintf(&b, `]]},"geometry_name":"the_geom","properties":{"pin_num":"17%08d","owner":"OWNER %d","acres":%.2f,"land_val":%d,"zoning":"R-4","deed_date":"2019-04-12Z"}}`, i, i, float64(i%300)/100, 1000*i)
	}
	b.WriteString(`],"numberMatched":10000,"numberReturned":10000}`)
	return b.Bytes()
}

func BenchmarkGeoJSONReader(b *testing.B) {
	doc := benchCollection(10_000)
	for _, idProp := range []string{"", "pin_num"} {
		b.Run("id_property="+idProp, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			features := 0
			start := time.Now()
			for b.Loop() {
				r := NewReader(bytes.NewReader(doc), feature.WithIDProperty(idProp))
				for {
					f, err := r.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					if _, ok := f.Geometry.(*geom.Polygon); !ok || f.ID == "" {
						b.Fatalf("bad feature %+v", f)
					}
					features++
				}
			}
			b.ReportMetric(float64(features)/time.Since(start).Seconds(), "features/s")
		})
	}
}

// BenchmarkGeoJSONDocument decodes the GeoJSON file BENCH_GEOJSON_FILE
// (skipped without one) as a poll does, one core: scripts/bench.sh bigdoc
// runs it on its 250,000-parcel document, whose decoding bounds a first
// load's fetch.
func BenchmarkGeoJSONDocument(b *testing.B) {
	path := os.Getenv("BENCH_GEOJSON_FILE")
	if path == "" {
		b.Skip("BENCH_GEOJSON_FILE names no document")
	}
	features := 0
	for b.Loop() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		r := NewReader(bufio.NewReaderSize(f, 1<<16), feature.WithLimits(feature.Limits{}))
		features = 0
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			features++
		}
		f.Close()
	}
	b.ReportMetric(float64(features), "features")
}

// TestGeoJSONReaderLinksAfterEmptyFeatures: an empty features array may be
// followed by more members (an OGC API – Features page: links,
// numberMatched), and Links returns the raw links member.
func TestGeoJSONReaderLinksAfterEmptyFeatures(t *testing.T) {
	t.Parallel()
	doc := `{"type":"FeatureCollection","features":[],"links":[{"href":"http://h/items?offset=10","rel":"next"}],"numberMatched":0}`
	r := NewReader(strings.NewReader(doc))
	if f, err := r.Next(); err != io.EOF {
		t.Fatalf("Next: %v %v, want io.EOF", f, err)
	}
	if got := string(r.Links()); got != `[{"href":"http://h/items?offset=10","rel":"next"}]` {
		t.Errorf("Links: %s", got)
	}
	if r.NumberMatched() != 0 {
		t.Errorf("NumberMatched %d", r.NumberMatched())
	}
}
