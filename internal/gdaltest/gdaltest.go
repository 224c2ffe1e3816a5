// Package gdaltest holds what the file readers' tests (gpkg, flatgeobuf)
// share: files written by GDAL at test time, a reader's features compared
// with GDAL's own reading of the same file (its GeoJSON export, read by
// package geojson), the declared types compared with `ogrinfo -so`, and
// the 250,000-parcel file of the benchmarks.
package gdaltest

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/geojson"
	"github.com/ingestd/ingestd/internal/interoptest"
	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/schema"
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
	var gp, wp map[string]any
	if err := json.Unmarshal(got.Properties, &gp); err != nil {
		t.Fatalf("feature %d: properties %s: %v", n, got.Properties, err)
	}
	if err := json.Unmarshal(want.Properties, &wp); err != nil {
		t.Fatalf("feature %d: GDAL's properties: %v", n, err)
	}
	if !reflect.DeepEqual(gp, wp) {
		t.Errorf("feature %d: properties\n got %s\nwant %s", n, got.Properties, want.Properties)
	}
	g, w := got.Geometry, want.Geometry
	if g == nil || w == nil {
		if g != w {
			t.Errorf("feature %d: geometry %v, GDAL's %v", n, g, w)
		}
		return
	}
	if reflect.TypeOf(g) != reflect.TypeOf(w) || g.Layout() != w.Layout() || !slices.Equal(g.Ends(), w.Ends()) ||
		!reflect.DeepEqual(g.Endss(), w.Endss()) || len(g.FlatCoords()) != len(w.FlatCoords()) {
		t.Fatalf("feature %d: geometry %T %v ends %v, GDAL's %T %v ends %v", n, g, g.Layout(), g.Ends(), w, w.Layout(), w.Ends())
	}
	for i, c := range g.FlatCoords() {
		if math.Abs(c-w.FlatCoords()[i]) > 1e-9 {
			t.Fatalf("feature %d: coordinate %d is %v, GDAL's %v", n, i, c, w.FlatCoords()[i])
		}
	}
	if g.SRID() != srid {
		t.Errorf("feature %d: SRID %d, want %d", n, g.SRID(), srid)
	}
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
