package filegdb_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd/filegdb"
	"github.com/ingestd/ingestd/internal/gdaltest"
)

// testdata is the repository's testdata folder.
const testdata = "../testdata"

// zipGDB zips the folder dir as counties publish it: the .gdb folder
// inside the archive, its files deflated.
func zipGDB(t *testing.T, dir string) fs.FS {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		f, err := w.Create(filepath.Base(dir) + "/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		f.Write(b)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return zr
}

// pointsCSV writes NC's county seats as a CSV with a .csvt typing its
// columns as GDAL types them, so that ogr2ogr writes every field type
// GDAL 3.6 writes to a File Geodatabase: Int16, Int32, Float32, Float64,
// text up to 6000 characters, date-times to the millisecond, dates,
// nulls.
func pointsCSV(t *testing.T, dir string) string {
	t.Helper()
	var fc struct {
		Features []struct {
			Properties map[string]any
			Geometry   struct{ Coordinates []float64 }
		}
	}
	b, err := os.ReadFile(filepath.Join(testdata, "arcgis", "nc_points.geojson"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &fc); err != nil {
		t.Fatal(err)
	}
	var csv strings.Builder
	csv.WriteString("WKT,ID,NAME,SMALL,RATIO,SHARE,NOTES,SEEN,OPENED\n")
	for i, f := range fc.Features {
		c := f.Geometry.Coordinates
		notes := strings.Repeat(fmt.Sprintf("%s é \"quoted\"; ", f.Properties["NAME"]), 1+i*17%300)
		seen := fmt.Sprintf("20%02d/%02d/%02d %02d:%02d:%02d.%03d", i%30, 1+i%12, 1+i%28, i%24, i*7%60, i*13%60, i*37%1000)
		opened := fmt.Sprintf("19%02d/%02d/%02d", 10+i%90, 1+i%12, 1+i%28)
		small, ratio := fmt.Sprint(i*331%65536-32768), fmt.Sprint(float32(i)/7)
		if i%9 == 4 {
			notes, seen, small, ratio = "", "", "", ""
		}
		fmt.Fprintf(&csv, "\"POINT (%v %v)\",%v,%q,%s,%s,%v,\"%s\",%s,%s\n", c[0], c[1], f.Properties["OBJECTID"],
			f.Properties["NAME"], small, ratio, float64(i)/3, strings.ReplaceAll(notes, `"`, `""`), seen, opened)
	}
	path := filepath.Join(dir, "seats.csv")
	if err := os.WriteFile(path, []byte(csv.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	types := `"WKT","Integer","String","Integer(Int16)","Real(Float32)","Real","String","DateTime","Date"`
	if err := os.WriteFile(filepath.Join(dir, "seats.csvt"), []byte(types), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// setMilliseconds gives the seats' SEEN the milliseconds of the CSV,
// which GDAL 3.6 does not write, and OPENED of the second seat an
// instant before 1970 with milliseconds.
func setMilliseconds(t *testing.T, dir string) {
	for i := 1; i < 40; i++ {
		if i%9 == 4 {
			continue // null
		}
		seen := time.Date(2000+i%30, time.Month(1+i%12), 1+i%28, i%24, i*7%60, i*13%60, i*37%1000*1e6, time.UTC)
		filegdb.SetDateTime(t, dir, "seats", int64(1+i), "SEEN", seen)
	}
	filegdb.SetDateTime(t, dir, "seats", 2, "OPENED", time.Date(1911, 2, 2, 23, 59, 59, 999e6, time.UTC))
}

// gdbCase is one geodatabase and the layer of it to compare.
type gdbCase struct {
	name, layer string
	srid, n     int
	build       func(t *testing.T, dir string) string // returns the .gdb folder
}

func gdbCases() []gdbCase {
	counties := filepath.Join(testdata, "arcgis", "nc_counties.geojson")
	boundaries := filepath.Join(testdata, "arcgis", "nc_boundaries.geojson")
	return []gdbCase{
		{"counties in NAD27", "counties", 4267, 100, func(t *testing.T, dir string) string {
			out := filepath.Join(dir, "Counties.gdb")
			gdaltest.OGR2OGR(t, "-f", "OpenFileGDB", "-t_srs", "EPSG:4267", out, counties, "-nln", "counties")
			return out
		}},
		{"counties with Z in State Plane feet", "counties_z", 2264, 100, func(t *testing.T, dir string) string {
			out := filepath.Join(dir, "Elevation.gdb")
			gdaltest.OGR2OGR(t, "-f", "OpenFileGDB", "-t_srs", "EPSG:2264", "-zfield", "BIR74", out, counties, "-nln", "counties_z")
			return out
		}},
		{"points with dates and long text", "seats", 4326, 100, func(t *testing.T, dir string) string {
			out := filepath.Join(dir, "Seats.gdb")
			gdaltest.OGR2OGR(t, "-f", "OpenFileGDB", "-a_srs", "EPSG:4326", out, pointsCSV(t, dir), "-nln", "seats", "-nlt", "POINT", "-oo", "KEEP_GEOM_COLUMNS=NO")
			setMilliseconds(t, out)
			return out
		}},
		{"multi-layer, its lines", "boundaries", 4326, 0, func(t *testing.T, dir string) string {
			out := filepath.Join(dir, "Multi.gdb")
			gdaltest.OGR2OGR(t, "-f", "OpenFileGDB", out, counties, "-nln", "counties")
			gdaltest.OGR2OGR(t, "-f", "OpenFileGDB", "-update", out, boundaries, "-nln", "boundaries")
			gdaltest.OGR2OGR(t, "-f", "OpenFileGDB", "-update", out, pointsCSV(t, dir), "-a_srs", "EPSG:4326", "-nln", "seats", "-nlt", "POINT", "-oo", "KEEP_GEOM_COLUMNS=NO")
			return out
		}},
		{"circular arcs", "arcs", 2264, 8, func(t *testing.T, dir string) string {
			out := filepath.Join(dir, "Arcs.gdb")
			gdaltest.OGR2OGR(t, "-f", "OpenFileGDB", "-a_srs", "EPSG:2264", out, curvesCSV(t, dir, arcs), "-nln", "arcs", "-nlt", "MULTICURVE", "-oo", "KEEP_GEOM_COLUMNS=NO")
			return out
		}},
		{"curved polygons", "lots", 2264, 5, func(t *testing.T, dir string) string {
			out := filepath.Join(dir, "Lots.gdb")
			gdaltest.OGR2OGR(t, "-f", "OpenFileGDB", "-a_srs", "EPSG:2264", out, curvesCSV(t, dir, curvedPolygons), "-nln", "lots", "-nlt", "MULTISURFACE", "-oo", "KEEP_GEOM_COLUMNS=NO")
			return out
		}},
		{"batch-machine's lake-man-gdb", "lake_man", 4326, 6, func(t *testing.T, dir string) string {
			return filepath.Join(testdata, "filegdb", "lake-man-gdb.gdb")
		}},
	}
}

// TestMatchesGDAL: every feature of each layer, read from the
// geodatabase zipped as counties zip it and from its folder, is GDAL's
// reading of it (gdaltest.Compare: the same order, properties equal,
// geometries of the same type and parts with coordinates within 1e-9,
// the SRID), and each field has the type ogrinfo gives it.
func TestMatchesGDAL(t *testing.T) {
	for _, tc := range gdbCases() {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.build(t, t.TempDir())
			for _, src := range []struct {
				name string
				fsys fs.FS
			}{{"zip", zipGDB(t, dir)}, {"folder", os.DirFS(dir)}} {
				t.Run(src.name, func(t *testing.T) {
					r, err := filegdb.OpenReader(src.fsys, filegdb.Options{Layer: tc.layer})
					if err != nil {
						t.Fatal(err)
					}
					defer r.Close()
					var got []string
					for _, f := range r.Fields() {
						if typ := f.Type.OGR(); typ != "" {
							got = append(got, f.Name+":"+typ)
						}
					}
					if want := gdaltest.OGRTypes(t, dir, tc.layer); !slices.Equal(got, want) {
						t.Errorf("field types\n got %v\nwant %v (ogrinfo's)", got, want)
					}
					n := compareWithGDAL(t, r, dir, tc.layer, tc.srid)
					if tc.n > 0 && n != tc.n {
						t.Errorf("%d features, want %d", n, tc.n)
					}
				})
			}
		})
	}
}

// TestLayers: a geodatabase of several layers lists them in its
// catalog's order with their CRSs, and reading it without saying which
// layer is an error naming them.
func TestLayers(t *testing.T) {
	dir := gdbCases()[3].build(t, t.TempDir())
	g, err := filegdb.Open(zipGDB(t, dir), filegdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range g.Layers() {
		names = append(names, fmt.Sprintf("%s:%d", l.Name, l.SRID))
	}
	if want := []string{"counties:4326", "boundaries:4326", "seats:4326"}; !slices.Equal(names, want) {
		t.Errorf("layers %v, want %v", names, want)
	}
	_, err = g.Reader(filegdb.Options{})
	if err == nil || !strings.Contains(err.Error(), `3 layers ("counties", "boundaries", "seats"): say which one with layer:`) {
		t.Errorf("no layer chosen: %v", err)
	}
	_, err = g.Reader(filegdb.Options{Layer: "parcels"})
	if err == nil || !strings.Contains(err.Error(), `no layer "parcels"`) {
		t.Errorf("a missing layer: %v", err)
	}
}

// TestDatesToTheMillisecond: a date-time reads as the instant the file
// holds, to the millisecond, before 1970 too (GDAL 3.6, the reference
// elsewhere, reads whole seconds only).
func TestDatesToTheMillisecond(t *testing.T) {
	dir := gdbCases()[2].build(t, t.TempDir())
	r, err := filegdb.OpenReader(os.DirFS(dir), filegdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := 0; i < 40; i++ {
		f, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		var p struct{ SEEN, OPENED *string }
		if err := json.Unmarshal(f.Properties, &p); err != nil {
			t.Fatal(err)
		}
		want := time.Date(2000+i%30, time.Month(1+i%12), 1+i%28, i%24, i*7%60, i*13%60, i*37%1000*1e6, time.UTC)
		if i == 0 {
			want = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC) // as GDAL wrote it
		}
		if i%9 == 4 {
			if p.SEEN != nil {
				t.Errorf("seat %d: SEEN %v, want null", i, *p.SEEN)
			}
			continue
		}
		if got, err := time.Parse(time.RFC3339Nano, *p.SEEN); err != nil || !got.Equal(want) {
			t.Errorf("seat %d: SEEN %s, want %s", i, *p.SEEN, want.Format(time.RFC3339Nano))
		}
		opened := time.Date(1910+i%90, time.Month(1+i%12), 1+i%28, 0, 0, 0, 0, time.UTC)
		if i == 1 {
			opened = time.Date(1911, 2, 2, 23, 59, 59, 999e6, time.UTC)
		}
		if got, err := time.Parse(time.RFC3339Nano, *p.OPENED); err != nil || !got.Equal(opened) {
			t.Errorf("seat %d: OPENED %s, want %s", i, *p.OPENED, opened.Format(time.RFC3339Nano))
		}
	}
}

// TestIDProperty: the OBJECTID is the feature id unless id_property
// names a field, whose text or number then is; a field the layer lacks is
// an error naming it.
func TestIDProperty(t *testing.T) {
	dir := gdbCases()[0].build(t, t.TempDir())
	for _, tc := range []struct{ prop, want string }{{"", "1825"}, {"FIPS", "37009"}, {"BIR74", "1091"}} {
		r, err := filegdb.OpenReader(os.DirFS(dir), filegdb.Options{IDProperty: tc.prop})
		if err != nil {
			t.Fatal(err)
		}
		f, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if f.ID != tc.want {
			t.Errorf("id_property %q: id %q, want %q", tc.prop, f.ID, tc.want)
		}
		r.Close()
	}
	_, err := filegdb.OpenReader(os.DirFS(dir), filegdb.Options{IDProperty: "PIN"})
	if err == nil || !strings.Contains(err.Error(), `id_property "PIN" is no field of the layer`) {
		t.Errorf("a missing id_property: %v", err)
	}
}

// TestSpooledTables: a compressed zip's tables are copied to TempDir to
// be read at offsets, the layer's two files while it is read, and removed
// by Close.
func TestSpooledTables(t *testing.T) {
	fsys := zipGDB(t, gdbCases()[0].build(t, t.TempDir()))
	tmp := t.TempDir()
	r, err := filegdb.OpenReader(fsys, filegdb.Options{TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 2 {
		t.Errorf("%d files in TempDir while the layer is open, want its .gdbtable and .gdbtablx", len(entries))
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("%d files left in TempDir after Close", len(entries))
	}
}

// arcs are curves as a county's centre lines and lot lines have them, in
// State Plane feet: arcs turning either way, of a few degrees to nearly a
// circle, alone and between straight segments, and whole circles of one
// arc.
var arcs = []string{
	"CIRCULARSTRING(2000000 700000,2000050 700050,2000100 700000)",
	"CIRCULARSTRING(2000000 700000,2000050 699950,2000100 700000)",
	"CIRCULARSTRING(2000000 700000,2000001.5 700010,2000000 700020)",
	"COMPOUNDCURVE((2000000 700000,2000100 700000),CIRCULARSTRING(2000100 700000,2000170.71 700029.29,2000200 700100),(2000200 700100,2000200 700300))",
	"MULTICURVE(CIRCULARSTRING(2000000 700000,2000100 700100,2000200 700000,2000300 699900,2000400 700000),(2000000 700500,2000100 700500))",
	"CIRCULARSTRING(2000000 700000,2000050 700049.99,2000000 700099.98)",
	"CIRCULARSTRING(2000000 700000,2000100 700000,2000000 700000)",
	"COMPOUNDCURVE((2000000 699900,2000000 700000),CIRCULARSTRING(2000000 700000,2000060 700080,2000000 700000))",
}

// curvedPolygons are lots and a cul-de-sac with arcs in their rings, one
// with a hole, and a roundabout's circle of one arc.
var curvedPolygons = []string{
	"CURVEPOLYGON(CIRCULARSTRING(2000000 700000,2000050 700050,2000100 700000,2000050 699950,2000000 700000))",
	"CURVEPOLYGON(COMPOUNDCURVE((2000000 700000,2000000 700200,2000100 700200),CIRCULARSTRING(2000100 700200,2000135 700100,2000100 700000),(2000100 700000,2000000 700000)))",
	"CURVEPOLYGON((2000000 700000,2000000 700400,2000400 700400,2000400 700000,2000000 700000),CIRCULARSTRING(2000150 700200,2000200 700250,2000250 700200,2000200 700150,2000150 700200))",
	"MULTISURFACE(CURVEPOLYGON(COMPOUNDCURVE(CIRCULARSTRING(2001000 700000,2001010 700010,2001020 700000),(2001020 700000,2001000 700000))),((2002000 700000,2002000 700010,2002010 700010,2002000 700000)))",
	"CURVEPOLYGON(CIRCULARSTRING(2000000 700000,2000030 699960,2000000 700000))",
}

// curvesCSV writes geometries as a CSV of WKT with an id and a name, for
// ogr2ogr to write as a File Geodatabase layer with its curves.
func curvesCSV(t *testing.T, dir string, wkts []string) string {
	t.Helper()
	var csv strings.Builder
	csv.WriteString("WKT,ID,NAME\n")
	for i, w := range wkts {
		fmt.Fprintf(&csv, "\"%s\",%d,curve %d\n", w, i+1, i+1)
	}
	p := filepath.Join(dir, fmt.Sprintf("curves%d.csv", len(wkts)))
	if err := os.WriteFile(p, []byte(csv.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
