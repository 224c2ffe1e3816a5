package esrijson

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/feature"
	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/wkt"
)

type decoded struct {
	ID    string
	OID   int64
	WKT   string
	Props string
	SRID  int
}

func readAll(t testing.TB, r *Reader) ([]decoded, error) {
	t.Helper()
	var out []decoded
	for {
		f, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		d := decoded{ID: f.ID, Props: string(f.Properties)}
		d.OID, _ = r.ObjectID()
		if f.Geometry != nil {
			s, err := wkt.Marshal(f.Geometry)
			if err != nil {
				t.Fatalf("wkt: %v", err)
			}
			d.WKT = s
			d.SRID = f.Geometry.SRID()
		}
		out = append(out, d)
	}
}

func mustRead(t *testing.T, doc string, meta Meta, opts ...feature.ReaderOption) ([]decoded, *Reader) {
	t.Helper()
	r := NewReader(strings.NewReader(doc), meta, opts...)
	got, err := readAll(t, r)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return got, r
}

const header = `{"objectIdFieldName":"OBJECTID","geometryType":%q,"spatialReference":{"wkid":102100,"latestWkid":3857},%s"fields":[{"name":"OBJECTID","type":"esriFieldTypeOID"},{"name":"CREATED","type":"esriFieldTypeDate"},{"name":"NAME","type":"esriFieldTypeString"}],"features":[`

func doc(typ, flags string, feats ...string) string {
	return strings.Replace(strings.Replace(header, "%q", `"`+typ+`"`, 1), "%s", flags, 1) + strings.Join(feats, ",") + `]}`
}

func TestPoints(t *testing.T) {
	got, _ := mustRead(t, doc(TypePoint, "",
		`{"attributes":{"OBJECTID":1,"NAME":"origin"},"geometry":{"x":0,"y":0}}`,
		`{"attributes":{"OBJECTID":2},"geometry":{"x":-78.5,"y":0}}`,
		`{"attributes":{"OBJECTID":3},"geometry":{"x":"NaN","y":"NaN"}}`,
		`{"attributes":{"OBJECTID":4},"geometry":{"x":null,"y":null}}`,
		`{"attributes":{"OBJECTID":5},"geometry":null}`,
		`{"attributes":{"OBJECTID":6}}`,
		`{"attributes":{"OBJECTID":7},"geometry":{}}`,
	), Meta{})
	want := []string{"POINT (0 0)", "POINT (-78.5 0)", "POINT EMPTY", "POINT EMPTY", "", "", ""}
	if len(got) != len(want) {
		t.Fatalf("got %d features, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].WKT != w {
			t.Errorf("feature %d: %q, want %q", i, got[i].WKT, w)
		}
		if got[i].ID != string(rune('1'+i)) || got[i].OID != int64(i+1) {
			t.Errorf("feature %d: id %q oid %d", i, got[i].ID, got[i].OID)
		}
	}
	if got[0].SRID != 3857 {
		t.Errorf("SRID %d, want 3857 (latestWkid, 102100 mapped)", got[0].SRID)
	}
}

func TestZAndM(t *testing.T) {
	cases := []struct {
		name, flags, geom, want string
	}{
		{"z", `"hasZ":true,`, `{"x":1,"y":2,"z":3}`, "POINT Z (1 2 3)"},
		{"m without z", `"hasM":true,`, `{"x":1,"y":2,"m":4}`, "POINT M (1 2 4)"},
		{"zm", `"hasZ":true,"hasM":true,`, `{"x":1,"y":2,"z":3,"m":4}`, "POINT ZM (1 2 3 4)"},
		{"m line: third value is m", `"hasM":true,`, `{"paths":[[[1,2,10],[3,4,20]]]}`, "LINESTRING M (1 2 10, 3 4 20)"},
		{"z line", `"hasZ":true,`, `{"paths":[[[1,2,10],[3,4,20]]]}`, "LINESTRING Z (1 2 10, 3 4 20)"},
		{"undeclared third is z", ``, `{"paths":[[[1,2,10],[3,4,20]]]}`, "LINESTRING Z (1 2 10, 3 4 20)"},
		{"missing z is 0", `"hasZ":true,`, `{"paths":[[[1,2],[3,4,20]]]}`, "LINESTRING Z (1 2 0, 3 4 20)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			typ := TypePoint
			if strings.Contains(c.geom, "paths") {
				typ = TypePolyline
			}
			got, _ := mustRead(t, doc(typ, c.flags, `{"attributes":{"OBJECTID":1},"geometry":`+c.geom+`}`), Meta{})
			if got[0].WKT != c.want {
				t.Errorf("%s, want %s", got[0].WKT, c.want)
			}
		})
	}
}

func TestMultipointsAndLines(t *testing.T) {
	got, _ := mustRead(t, doc(TypeMultipoint, "",
		`{"attributes":{"OBJECTID":1},"geometry":{"points":[[0,0],[1,1]]}}`,
		`{"attributes":{"OBJECTID":2},"geometry":{"points":[]}}`,
	), Meta{})
	if got[0].WKT != "MULTIPOINT (0 0, 1 1)" || got[1].WKT != "MULTIPOINT EMPTY" {
		t.Errorf("multipoints: %q, %q", got[0].WKT, got[1].WKT)
	}
	got, _ = mustRead(t, doc(TypePolyline, "",
		`{"attributes":{"OBJECTID":1},"geometry":{"paths":[[[0,0],[1,1]]]}}`,
		`{"attributes":{"OBJECTID":2},"geometry":{"paths":[[[0,0],[1,1]],[[2,2],[3,3]]]}}`,
	), Meta{})
	if got[0].WKT != "LINESTRING (0 0, 1 1)" || got[1].WKT != "MULTILINESTRING ((0 0, 1 1), (2 2, 3 3))" {
		t.Errorf("lines: %q, %q", got[0].WKT, got[1].WKT)
	}
}

// Rings: clockwise (y up) is an exterior, counter-clockwise a hole of the
// exterior that contains it, whatever the order they come in.
func TestPolygonRings(t *testing.T) {
	const (
		outerCW  = `[[0,0],[0,10],[10,10],[10,0],[0,0]]`
		holeCCW  = `[[2,2],[4,2],[4,4],[2,4],[2,2]]`
		outer2CW = `[[20,0],[20,10],[30,10],[30,0],[20,0]]`
		hole2CCW = `[[22,2],[24,2],[24,4],[22,4],[22,2]]`
		outerCCW = `[[0,0],[10,0],[10,10],[0,10],[0,0]]`
		islandCW = `[[2.5,2.5],[2.5,3.5],[3.5,3.5],[3.5,2.5],[2.5,2.5]]`
	)
	cases := []struct{ name, rings, want string }{
		{"one exterior", outerCW, "POLYGON ((0 0, 0 10, 10 10, 10 0, 0 0))"},
		{"exterior and hole", outerCW + "," + holeCCW, "POLYGON ((0 0, 0 10, 10 10, 10 0, 0 0), (2 2, 4 2, 4 4, 2 4, 2 2))"},
		{"hole first", holeCCW + "," + outerCW, "POLYGON ((0 0, 0 10, 10 10, 10 0, 0 0), (2 2, 4 2, 4 4, 2 4, 2 2))"},
		{"hole goes to the exterior that contains it", outerCW + "," + outer2CW + "," + hole2CCW,
			"MULTIPOLYGON (((0 0, 0 10, 10 10, 10 0, 0 0)), ((20 0, 20 10, 30 10, 30 0, 20 0), (22 2, 24 2, 24 4, 22 4, 22 2)))"},
		{"island in a hole", outerCW + "," + holeCCW + "," + islandCW,
			"MULTIPOLYGON (((0 0, 0 10, 10 10, 10 0, 0 0), (2 2, 4 2, 4 4, 2 4, 2 2)), ((2.5 2.5, 2.5 3.5, 3.5 3.5, 3.5 2.5, 2.5 2.5)))"},
		{"every ring reversed", outerCCW + "," + holeCCW, "POLYGON ((0 0, 10 0, 10 10, 0 10, 0 0), (2 2, 4 2, 4 4, 2 4, 2 2))"},
		{"no rings", "", "POLYGON EMPTY"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _ := mustRead(t, doc(TypePolygon, "", `{"attributes":{"OBJECTID":1},"geometry":{"rings":[`+c.rings+`]}}`), Meta{})
			if got[0].WKT != c.want {
				t.Errorf("\n got %s\nwant %s", got[0].WKT, c.want)
			}
		})
	}
}

func TestCurvesRefused(t *testing.T) {
	for _, g := range []string{
		`{"curveRings":[[[0,0],{"a":[[1,1],[0.5,0.5],0,1]},[0,0]]]}`,
		`{"rings":[[[0,0],{"c":[[1,1],[0.5,0.7]]},[0,1],[0,0]]]}`,
	} {
		r := NewReader(strings.NewReader(doc(TypePolygon, "", `{"attributes":{"OBJECTID":1},"geometry":`+g+`}`)), Meta{})
		_, err := readAll(t, r)
		if !errors.Is(err, ErrCurve) {
			t.Errorf("%s: error %v, want ErrCurve", g, err)
		}
		var de *feature.DecodeError
		if !errors.As(err, &de) || de.Index != 0 || !strings.Contains(err.Error(), "returnTrueCurves") {
			t.Errorf("error %v does not name the feature and the cause", err)
		}
	}
}

func TestAttributes(t *testing.T) {
	got, _ := mustRead(t, doc(TypePoint, "",
		`{"attributes":{"OBJECTID":7,"CREATED":1700000000123,"NAME":"Main \"St\"","BIG":9007199254740993,"GID":"{6D4E3A1B-0000-4000-8000-000000000001}","WHEN":null},"geometry":{"x":1,"y":2}}`,
		`{"attributes":{"OBJECTID":8,"CREATED":-86400000,"NAME":"bad \ud800 and `+"\xff"+`"},"geometry":{"x":1,"y":2}}`,
	), Meta{})
	var p map[string]any
	if err := json.Unmarshal([]byte(got[0].Props), &p); err != nil {
		t.Fatal(err)
	}
	if p["CREATED"] != "2023-11-14T22:13:20.123Z" {
		t.Errorf("date %v", p["CREATED"])
	}
	if !strings.Contains(got[0].Props, `"BIG":9007199254740993`) {
		t.Errorf("big integer not kept as written: %s", got[0].Props)
	}
	if p["GID"] != "{6D4E3A1B-0000-4000-8000-000000000001}" || p["WHEN"] != nil || p["NAME"] != `Main "St"` {
		t.Errorf("props %v", p)
	}
	if err := json.Unmarshal([]byte(got[1].Props), &p); err != nil {
		t.Fatal(err)
	}
	if p["CREATED"] != "1969-12-31T00:00:00Z" {
		t.Errorf("date %v", p["CREATED"])
	}
	if p["NAME"] != "bad \ufffd and \ufffd" {
		t.Errorf("repaired name %q", p["NAME"])
	}
}

func TestRepairsReported(t *testing.T) {
	r := NewReader(strings.NewReader(doc(TypePoint, "", `{"attributes":{"OBJECTID":8,"NAME":"bad `+"\xff"+`"},"geometry":{"x":1,"y":2}}`)), Meta{})
	f, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if f.Repairs&feature.RepairedUTF8 == 0 {
		t.Errorf("repairs %v", f.Repairs)
	}
}

func TestBusinessKeyAndMetaFields(t *testing.T) {
	// No fields in the response: the layer's (Meta) type the dates.
	body := `{"features":[{"attributes":{"FID":3,"PIN":"12-34","D":0},"geometry":{"x":1,"y":2}}],"exceededTransferLimit":true}`
	got, r := mustRead(t, body, Meta{ObjectIDField: "FID", Fields: []Field{{"D", FieldDate}}, GeometryType: TypePoint, SRID: 2264}, feature.WithIDProperty("PIN"))
	if got[0].ID != "12-34" || got[0].OID != 3 || got[0].SRID != 2264 {
		t.Errorf("got %+v", got[0])
	}
	if !strings.Contains(got[0].Props, `"D":"1970-01-01T00:00:00Z"`) {
		t.Errorf("props %s", got[0].Props)
	}
	if !r.ExceededTransferLimit() {
		t.Error("exceededTransferLimit after the features was not read")
	}
}

func TestErrors(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"error object", `{"error":{"code":400,"message":"Unable to complete operation.","details":["Invalid query"]}}`, "error 400: Unable to complete operation. (Invalid query)"},
		{"not an object", `[1,2]`, "not a JSON object"},
		{"no features", `{"count":3}`, `no "features" member`},
		{"features not array", `{"features":{}}`, "features is not an array"},
		{"feature not object", `{"features":[1]}`, "feature is not a JSON object"},
		{"wrong geometry type", `{"geometryType":"esriGeometryPoint","features":[{"geometry":{"paths":[[[0,0],[1,1]]]}}]}`, "geometryType is esriGeometryPoint"},
		{"infinite", `{"features":[{"geometry":{"x":1e999,"y":0}}]}`, "not a number"},
		{"trailing data", `{"features":[]} {}`, "data after the document"},
		{"cut short", `{"features":[{"geometry":{"x":1,`, "unexpected EOF"},
		{"empty", ``, "empty document"},
		{"half a point", `{"features":[{"geometry":{"x":1,"y":null}}]}`, "one of x and y"},
		{"envelope", `{"features":[{"geometry":{"xmin":1,"ymin":1,"xmax":2,"ymax":2}}]}`, "envelope"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := readAll(t, NewReader(strings.NewReader(c.body), Meta{}))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// A body cut anywhere is an error, never a shorter page.
func TestEveryPrefixFails(t *testing.T) {
	body := doc(TypePolygon, `"hasZ":false,`,
		`{"attributes":{"OBJECTID":1,"NAME":"a"},"geometry":{"rings":[[[0,0],[0,1],[1,1],[0,0]]]}}`,
		`{"attributes":{"OBJECTID":2,"NAME":"b"},"geometry":null}`)
	for i := range len(body) - 1 {
		if _, err := readAll(t, NewReader(strings.NewReader(body[:i]), Meta{})); err == nil {
			t.Fatalf("prefix of %d bytes read without error", i)
		}
	}
}

func TestLimits(t *testing.T) {
	lim := feature.Limits{FeatureBytes: 1 << 10, ValueBytes: 50, Properties: 2, IDBytes: 4}
	huge := `{"features":[{"attributes":{"A":"` + strings.Repeat("x", 4<<10) + `"}}]}`
	_, err := readAll(t, NewReader(strings.NewReader(huge), Meta{}, feature.WithLimits(lim)))
	var le *feature.LimitError
	if !errors.As(err, &le) || le.Name != "feature_bytes" {
		t.Errorf("huge feature: %v", err)
	}
	// An endless feature stops at the bound, not at the end of the input.
	endless := io.MultiReader(strings.NewReader(`{"features":[{"attributes":{"A":"`), &zeros{n: 1 << 30})
	_, err = readAll(t, NewReader(endless, Meta{}, feature.WithLimits(lim)))
	if !errors.As(err, &le) || le.Name != "feature_bytes" {
		t.Errorf("endless feature: %v", err)
	}
	_, err = readAll(t, NewReader(strings.NewReader(`{"features":[{"attributes":{"A":"`+strings.Repeat("x", 60)+`"}}]}`), Meta{}, feature.WithLimits(lim)))
	if !errors.As(err, &le) || le.Name != "value_bytes" {
		t.Errorf("long value: %v", err)
	}
	_, err = readAll(t, NewReader(strings.NewReader(`{"features":[{"attributes":{"A":1,"B":2,"C":3}}]}`), Meta{}, feature.WithLimits(lim)))
	if !errors.As(err, &le) || le.Name != "properties" {
		t.Errorf("many properties: %v", err)
	}
	r := NewReader(strings.NewReader(`{"features":[{"attributes":{"OBJECTID":123456}},{"attributes":{"OBJECTID":1}}]}`), Meta{ObjectIDField: "OBJECTID"}, feature.WithLimits(lim))
	f, err := r.Next()
	if err != nil || f.Refused == "" {
		t.Errorf("long id: %+v, %v", f, err)
	}
	if f, err := r.Next(); err != nil || f.ID != "1" {
		t.Errorf("after a refused id: %+v, %v", f, err)
	}
}

type zeros struct{ n int }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n <= 0 {
		return 0, io.EOF
	}
	n := min(len(p), z.n)
	for i := range p[:n] {
		p[i] = 'x'
	}
	z.n -= n
	return n, nil
}

// longIslandESRI is EPSG:2263 as GDAL writes it in Esri's WKT dialect.
const longIslandESRI = `PROJCS["NAD_1983_StatePlane_New_York_Long_Island_FIPS_3104_Feet",GEOGCS["GCS_North_American_1983",` +
	`DATUM["D_North_American_1983",SPHEROID["GRS_1980",6378137.0,298.257222101]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],` +
	`PROJECTION["Lambert_Conformal_Conic"],PARAMETER["False_Easting",984250.0],PARAMETER["False_Northing",0.0],PARAMETER["Central_Meridian",-74.0],` +
	`PARAMETER["Standard_Parallel_1",41.0333333333333],PARAMETER["Standard_Parallel_2",40.6666666666667],PARAMETER["Latitude_Of_Origin",40.1666666666667],` +
	`UNIT["US survey foot",0.304800609601219]]`

func TestSRID(t *testing.T) {
	for _, c := range []struct {
		sr   SpatialReference
		want int
	}{{SpatialReference{WKID: 102100, LatestWKID: 3857}, 3857}, {SpatialReference{WKID: 102100}, 3857}, {SpatialReference{WKID: 2264}, 2264}, {SpatialReference{WKT: "PROJCS[…]"}, 0},
		// A spatial reference given as WKT alone, as ArcGIS writes a
		// custom one: Long Island's State Plane zone in US feet.
		{SpatialReference{WKT: longIslandESRI}, 2263}} {
		if got := c.sr.SRID(); got != c.want {
			t.Errorf("%+v: %d, want %d", c.sr, got, c.want)
		}
	}
}

func FuzzReader(f *testing.F) {
	f.Add(doc(TypePolygon, "", `{"attributes":{"OBJECTID":1,"CREATED":0},"geometry":{"rings":[[[0,0],[0,10],[10,10],[10,0],[0,0]],[[2,2],[4,2],[4,4],[2,2]]]}}`))
	f.Add(doc(TypePoint, `"hasM":true,`, `{"attributes":{"OBJECTID":1},"geometry":{"x":0,"y":0,"m":1}}`, `{"attributes":null,"geometry":null}`))
	f.Add(doc(TypePolyline, `"hasZ":true,"hasM":true,`, `{"attributes":{"OBJECTID":"a"},"geometry":{"paths":[[[0,0,1,2],[1,1]]]}}`))
	f.Add(doc(TypeMultipoint, "", `{"attributes":{"OBJECTID":1.5},"geometry":{"points":[[0,0],[null,1]]}}`))
	f.Add(`{"error":{"code":"498","message":"Invalid token"}}`)
	f.Add(`{"features":[{"geometry":{"curveRings":[]}}],"exceededTransferLimit":true}`)
	f.Add(`{"features":[{"attributes":{"A":"\ud800\udc00\udc00"}}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		lim := feature.Limits{FeatureBytes: 1 << 16, ValueBytes: 1 << 12, Properties: 100, IDBytes: 64}
		r := NewReader(strings.NewReader(body), Meta{ObjectIDField: "OBJECTID", Fields: []Field{{"CREATED", FieldDate}}}, feature.WithLimits(lim))
		for range 10000 {
			ft, err := r.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				if _, again := r.Next(); again == nil || again.Error() != err.Error() {
					t.Fatalf("error not sticky: %v then %v", err, again)
				}
				var le *feature.LimitError
				var de *feature.DecodeError
				if !errors.As(err, &le) && !errors.As(err, &de) {
					t.Fatalf("error of type %T: %v", err, err)
				}
				return
			}
			if ft.Refused != "" {
				continue
			}
			if ft.Properties != nil && !json.Valid(ft.Properties) {
				t.Fatalf("properties not valid JSON: %s", ft.Properties)
			}
			if _, rep := feature.JSONTextStats(ft.Properties); rep != 0 {
				t.Fatalf("properties need repair after decoding: %q", ft.Properties)
			}
			if g := ft.Geometry; g != nil {
				checkGeometry(t, g)
			}
		}
	})
}

// checkGeometry fails on a geometry the store could not encode.
func checkGeometry(t *testing.T, g geom.T) {
	t.Helper()
	if g.Stride() != g.Layout().Stride() || len(g.FlatCoords())%g.Stride() != 0 {
		t.Fatalf("inconsistent layout: %v", g)
	}
	for i, v := range g.FlatCoords() {
		if math.IsInf(v, 0) || (math.IsNaN(v) && i%g.Stride() < 2) {
			t.Fatalf("bad ordinate %v in %v", v, g.FlatCoords())
		}
	}
	if _, err := wkt.Marshal(g); err != nil {
		t.Fatalf("wkt: %v", err)
	}
}

// The seed corpus holds Koop's answers (scripts/koop.sh): each decodes whole.
func TestSeedCorpusDecodes(t *testing.T) {
	for _, name := range []string{"koop_nc_counties", "koop_nc_points", "koop_nc_boundaries"} {
		raw, err := os.ReadFile("testdata/fuzz/FuzzReader/" + name)
		if err != nil {
			t.Fatal(err)
		}
		body, err := strconv.Unquote(strings.TrimSuffix(strings.TrimSpace(strings.SplitN(string(raw), "\n", 2)[1]), ")")[len("string("):])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := readAll(t, NewReader(strings.NewReader(body), Meta{}))
		if err != nil || len(got) != 2 || got[0].ID == "" || got[0].WKT == "" || got[0].SRID != 4326 {
			t.Errorf("%s: %v, %+v", name, err, got)
		}
	}
}

// BenchmarkReader decodes a page of 2,000 polygons (every fifth with a
// hole) with a date and three other attributes, as ArcGIS Server writes it.
func BenchmarkReader(b *testing.B) {
	var feats []string
	for i := range 2000 {
		x := float64(i%100) * 10
		rings := fmt.Sprintf("[[%g,0],[%g,8],[%g,8],[%g,0],[%g,0]]", x, x, x+8, x+8, x)
		if i%5 == 0 {
			rings += fmt.Sprintf(",[[%g,2],[%g,2],[%g,4],[%g,4],[%g,2]]", x+2, x+4, x+4, x+2, x+2)
		}
		feats = append(feats, fmt.Sprintf(`{"attributes":{"OBJECTID":%d,"NAME":"parcel %d","CREATED":%d,"ACRES":%g},"geometry":{"rings":[%s]}}`, i+1, i, 1700000000000+int64(i), float64(i)/7, rings))
	}
	body := doc(TypePolygon, "", feats...)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewReader(strings.NewReader(body), Meta{})
		n := 0
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 2000 {
			b.Fatalf("%d features", n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*2000), "ns/feature")
}
