// Package gdaltest holds what the file readers' tests (gpkg, flatgeobuf)
// share: files written by GDAL at test time, a reader's features compared
// with GDAL's own reading of the same file (its GeoJSON export, read by
// package geojson), the declared types compared with `ogrinfo -so`, a
// reader read to its end, the mixed-types test and the 250,000-parcel
// benchmark that both formats run.
package gdaltest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd/encoding/geojson"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/internal/interoptest"
	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/schema"
	"github.com/twpayne/go-geom"
)

// OGR2OGR runs ogr2ogr with args (interoptest.GDAL: a missing GDAL fails
// under CI=true and skips elsewhere).
func OGR2OGR(t testing.TB, args ...string) {
	t.Helper()
	interoptest.GDAL(t, nil, "ogr2ogr", args...)
}

// Compare reads every feature of r and checks it against GDAL's reading
// of layer in path: the same count and order, properties equal as JSON
// values, geometries of the same type, layout and part structure with
// coordinates within 1e-9 (GDAL's GeoJSON writes 15 significant digits),
// and the SRID srid. It returns the number of features.
func Compare(t *testing.T, r feature.FeatureReader, path, layer string, srid int) int {
	t.Helper()
	export := filepath.Join(t.TempDir(), "gdal.json")
	OGR2OGR(t, "-f", "GeoJSON", export, path, layer)
	f, err := os.Open(export)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := geojson.NewReader(bufio.NewReader(f), feature.WithSRID(srid))
	n := 0
	for ; ; n++ {
		w, werr := want.Next()
		g, gerr := r.Next()
		if errors.Is(werr, io.EOF) || errors.Is(gerr, io.EOF) {
			if !errors.Is(werr, io.EOF) || !errors.Is(gerr, io.EOF) {
				t.Fatalf("feature %d: GDAL's end %v, the reader's %v", n, werr, gerr)
			}
			return n
		}
		if werr != nil || gerr != nil {
			t.Fatalf("feature %d: GDAL's export: %v; the reader: %v", n, werr, gerr)
		}
		compareFeature(t, n, g, w, srid)
	}
}

func compareFeature(t *testing.T, n int, got, want *feature.Feature, srid int) {
	t.Helper()
	gp, wp := properties(t, n, got.Properties), properties(t, n, want.Properties)
	keys := slices.Sorted(maps.Keys(gp))
	if !slices.Equal(keys, slices.Sorted(maps.Keys(wp))) {
		t.Errorf("feature %d: properties\n got %s\nwant %s", n, got.Properties, want.Properties)
	}
	for _, k := range keys {
		if g, w := gp[k], wp[k]; !reflect.DeepEqual(g, w) && !sameInstant(g, w) {
			t.Errorf("feature %d: property %s is %#v, GDAL's %#v", n, k, g, w)
		}
	}
	if got.Geometry == nil || want.Geometry == nil {
		if got.Geometry != want.Geometry {
			t.Errorf("feature %d: geometry %v, GDAL's %v", n, got.Geometry, want.Geometry)
		}
		return
	}
	if err := sameGeometry(got.Geometry, want.Geometry, srid); err != nil {
		t.Errorf("feature %d: %v", n, err)
	}
}

// properties decodes a properties object, numbers exact (json.Number).
func properties(t *testing.T, n int, raw []byte) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("feature %d: properties %s: %v", n, raw, err)
	}
	for k, v := range m {
		// 1 and 1.0 are one number (GDAL writes reals with a decimal
		// point); an integer past 2^53 stays exact.
		if num, ok := v.(json.Number); ok {
			if i, err := num.Int64(); err == nil && (i >= 1<<53 || i <= -(1<<53)) {
				m[k] = i
			} else if f, err := num.Float64(); err == nil {
				m[k] = f
			}
		}
	}
	return m
}

// sameInstant reports whether two date-time texts name one instant: a
// GeoPackage stores 2024-02-29T12:34:56.000Z, GDAL writes
// 2024-02-29T12:34:56Z; FlatGeobuf may store a date GDAL writes as
// midnight.
func sameInstant(a, b any) bool {
	as, ok1 := a.(string)
	bs, ok2 := b.(string)
	if !ok1 || !ok2 {
		return false
	}
	at, err1 := parseTime(as)
	bt, err2 := parseTime(bs)
	return err1 == nil && err2 == nil && at.Equal(bt)
}

func parseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("not a time")
}

// sameGeometry compares two geometries' types, layouts, part structure,
// coordinates (within 1e-9) and SRIDs, members of collections in turn.
func sameGeometry(g, w geom.T, srid int) error {
	if reflect.TypeOf(g) != reflect.TypeOf(w) || g.Layout() != w.Layout() {
		return fmt.Errorf("geometry %T %v, GDAL's %T %v", g, g.Layout(), w, w.Layout())
	}
	if g.SRID() != srid {
		return fmt.Errorf("SRID %d, want %d", g.SRID(), srid)
	}
	if gc, ok := g.(*geom.GeometryCollection); ok {
		wc := w.(*geom.GeometryCollection)
		if gc.NumGeoms() != wc.NumGeoms() {
			return fmt.Errorf("collection of %d, GDAL's of %d", gc.NumGeoms(), wc.NumGeoms())
		}
		for i := range gc.NumGeoms() {
			if err := sameGeometry(gc.Geom(i), wc.Geom(i), srid); err != nil {
				return fmt.Errorf("member %d: %w", i, err)
			}
		}
		return nil
	}
	if len(g.FlatCoords()) != len(w.FlatCoords()) || !slices.Equal(g.Ends(), w.Ends()) || !reflect.DeepEqual(g.Endss(), w.Endss()) {
		return fmt.Errorf("parts %v %v, GDAL's %v %v", g.Ends(), g.Endss(), w.Ends(), w.Endss())
	}
	for i, c := range g.FlatCoords() {
		if math.Abs(c-w.FlatCoords()[i]) > 1e-9 {
			return fmt.Errorf("coordinate %d is %v, GDAL's %v", i, c, w.FlatCoords()[i])
		}
	}
	return nil
}

var ogrField = regexp.MustCompile(`^([^ :][^:]*): ([A-Za-z0-9()]+) \(`)

// OGRTypes lists layer's fields as `ogrinfo -so` types them, name:type,
// in order.
func OGRTypes(t *testing.T, path, layer string) []string {
	t.Helper()
	out := interoptest.GDAL(t, nil, "ogrinfo", "-so", "-nocount", "-noextent", path, layer)
	var fields []string
	for _, line := range strings.Split(string(out), "\n") {
		for _, skip := range []string{"Geometry", "FID Column", "Layer name"} {
			if strings.HasPrefix(line, skip) {
				line = ""
			}
		}
		if m := ogrField.FindStringSubmatch(line); m != nil {
			fields = append(fields, m[1]+":"+m[2])
		}
	}
	return fields
}

// ogrTypes is the view's type of each OGR field type (Integer widened to
// bigint as every integer is).
var ogrTypes = map[string]schema.Type{
	"Integer": schema.BigInt, "Integer64": schema.BigInt, "Real": schema.Double,
	"String": schema.Text, "Date": schema.Date, "DateTime": schema.Timestamp,
	"Integer(Boolean)": schema.Boolean, "Binary": schema.Text, "String(JSON)": schema.JSON,
}

// CheckDeclared compares d's columns with ogrinfo's fields of layer.
func CheckDeclared(t *testing.T, d *schema.Declared, path, layer string) {
	t.Helper()
	var got, want []string
	for _, c := range d.Columns {
		got = append(got, c.Name+":"+string(c.Type))
	}
	for _, f := range OGRTypes(t, path, layer) {
		name, typ, _ := strings.Cut(f, ":")
		want = append(want, name+":"+string(ogrTypes[typ]))
	}
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("declared columns\n got %v\nwant %v (ogrinfo's)", got, want)
	}
}

// Parcels writes n generated parcels (layertest.Parcels) as GeoJSON
// sequence and converts them with ogr2ogr to format (a GDAL driver name)
// at name in dir, layer "parcels"; it returns the file's path.
func Parcels(t testing.TB, dir string, n int, format, name string) string {
	t.Helper()
	src := filepath.Join(dir, "parcels.geojsonl")
	if _, err := os.Stat(src); err != nil {
		f, err := os.Create(src)
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriter(f)
		p := layertest.Parcels{N: n}
		var buf []byte
		for i := range n {
			buf = append(p.AppendFeature(buf[:0], i), '\n')
			w.Write(buf)
		}
		if err := errors.Join(w.Flush(), f.Close()); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, name)
	OGR2OGR(t, "-f", format, out, src, "-nln", "parcels")
	return out
}

// Mixed is a GeoJSON layer of every geometry type (a null one, an empty
// one, a polygon with a hole, a collection) and property type GDAL
// infers from GeoJSON (integers, a 64-bit one, reals, text with quotes,
// escapes and non-ASCII, booleans, dates, date-times, nulls). It writes
// it to dir and returns its path.
func Mixed(t testing.TB, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "mixed.geojson")
	if err := os.WriteFile(path, []byte(mixed), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const mixed = `{"type":"FeatureCollection","features":[
{"type":"Feature","properties":{"n":1,"big":9007199254740993,"x":0.1,"s":"Bâtiment \"A\"\\\n\ttab","b":true,"d":"2024-02-29","dt":"2024-02-29T12:34:56Z"},"geometry":{"type":"Point","coordinates":[-78.5,35.75]}},
{"type":"Feature","properties":{"n":-2,"big":-1,"x":-1e-7,"s":"","b":false,"d":"1900-01-01","dt":"1999-12-31T23:59:59.5Z"},"geometry":{"type":"LineString","coordinates":[[-78.5,35.75],[-78.4,35.8],[-78.3,35.7]]}},
{"type":"Feature","properties":{"n":null,"big":null,"x":null,"s":null,"b":null,"d":null,"dt":null},"geometry":{"type":"Polygon","coordinates":[[[-79,35],[-78,35],[-78,36],[-79,36],[-79,35]],[[-78.6,35.4],[-78.4,35.4],[-78.4,35.6],[-78.6,35.4]]]}},
{"type":"Feature","properties":{"n":3,"big":3,"x":3.5,"s":"日本","b":true,"d":"2000-01-01","dt":"2000-01-01T00:00:00Z"},"geometry":{"type":"MultiPoint","coordinates":[[-78,35],[-77,34]]}},
{"type":"Feature","properties":{"n":4,"big":4,"x":1e300,"s":"4","b":false,"d":"2000-01-02","dt":"2000-01-02T00:00:00Z"},"geometry":{"type":"MultiLineString","coordinates":[[[-78,35],[-77,34]],[[-76,33],[-75,32],[-74,31]]]}},
{"type":"Feature","properties":{"n":5,"big":5,"x":5,"s":"5","b":true,"d":"2000-01-03","dt":"2000-01-03T00:00:00Z"},"geometry":{"type":"MultiPolygon","coordinates":[[[[-79,35],[-78,35],[-78,36],[-79,35]]],[[[-77,35],[-76,35],[-76,36],[-77,35]],[[-76.9,35.1],[-76.5,35.1],[-76.5,35.5],[-76.9,35.1]]]]}},
{"type":"Feature","properties":{"n":6,"big":6,"x":6,"s":"6","b":false,"d":"2000-01-04","dt":"2000-01-04T00:00:00Z"},"geometry":{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[-78,35]},{"type":"LineString","coordinates":[[-78,35],[-77,36]]}]}},
{"type":"Feature","properties":{"n":7,"big":7,"x":7,"s":"7","b":true,"d":"2000-01-05","dt":"2000-01-05T00:00:00Z"},"geometry":null}
]}
`

// RenamedPRJ is the ESRI WKT GDAL writes for NAD83(2011) / Alaska zone 3
// (EPSG:6396), under a name no CRS table has ("Wake_Parcels_Grid"): GDAL
// cannot name it, so a file it writes in it carries its WKT without a
// code, which only its parameters identify.
const RenamedPRJ = `PROJCS["Wake_Parcels_Grid",GEOGCS["GCS_NAD_1983_2011",DATUM["D_NAD_1983_2011",SPHEROID["GRS_1980",6378137.0,298.257222101]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Transverse_Mercator"],PARAMETER["False_Easting",500000.0],PARAMETER["False_Northing",0.0],PARAMETER["Central_Meridian",-146.0],PARAMETER["Scale_Factor",0.9999],PARAMETER["Latitude_Of_Origin",54.0],UNIT["Meter",1.0]]`

// RenamedCRSFile has GDAL write a one-point layer "parcels" with driver
// (GPKG, FlatGeobuf) into a file named name, its CRS RenamedPRJ, and
// returns the file's path.
func RenamedCRSFile(t testing.TB, driver, name string) string {
	t.Helper()
	dir := t.TempDir()
	prj, csv := filepath.Join(dir, "renamed.prj"), filepath.Join(dir, "parcels.csv")
	if err := os.WriteFile(prj, []byte(RenamedPRJ), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(csv, []byte("PIN,x,y\n1,500000,800000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name)
	OGR2OGR(t, "-f", driver, out, csv, "-oo", "X_POSSIBLE_NAMES=x", "-oo", "Y_POSSIBLE_NAMES=y", "-a_srs", prj, "-nln", "parcels")
	return out
}
