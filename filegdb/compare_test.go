package filegdb_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/twpayne/go-geom"

	"github.com/ingestd/ingestd/encoding/geojson"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/filegdb"
	"github.com/ingestd/ingestd/internal/gdaltest"
)

// compareWithGDAL reads every feature of r and checks it against GDAL's
// reading of layer in path (its GeoJSON export): the same count and
// order; every property equal (a Float32 as a float32, which GDAL writes
// to 8 digits; a Float64 to 13 digits, as GDAL rounds some; a date-time
// to the millisecond); the geometry of the same type, layout and parts,
// each coordinate within 1e-9 of GDAL's relative to its size, the
// centroid within 0.01 m and the area within 1e-6 of GDAL's; the SRID
// srid. It returns the number of features.
func compareWithGDAL(t *testing.T, r *filegdb.Reader, path, layer string, srid int) int {
	t.Helper()
	types := map[string]filegdb.FieldType{}
	for _, f := range r.Fields() {
		types[f.Name] = f.Type
	}
	export := filepath.Join(t.TempDir(), "gdal.json")
	gdaltest.OGR2OGR(t, "-f", "GeoJSON", export, path, layer)
	f, err := os.Open(export)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := geojson.NewReader(bufio.NewReader(f), feature.WithSRID(srid))
	for n := 0; ; n++ {
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
		gp, wp := props(t, g.Properties), props(t, w.Properties)
		if len(gp) != len(wp) {
			t.Errorf("feature %d: properties\n got %s\nwant %s", n, g.Properties, w.Properties)
		}
		for k, wv := range wp {
			if !sameValue(types[k], gp[k], wv) {
				t.Errorf("feature %d: property %s is %#v, GDAL's %#v", n, k, gp[k], wv)
			}
		}
		if err := sameGeometry(g.Geometry, w.Geometry, srid); err != nil {
			t.Errorf("feature %d: %v", n, err)
		}
	}
}

func props(t *testing.T, raw []byte) map[string]any {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("properties %s: %v", raw, err)
	}
	return m
}

func sameValue(typ filegdb.FieldType, got, want any) bool {
	if reflect.DeepEqual(got, want) {
		return true
	}
	switch typ {
	case filegdb.Float32, filegdb.Float64, filegdb.Int16, filegdb.Int32, filegdb.Int64:
		g, ok1 := got.(json.Number)
		w, ok2 := want.(json.Number)
		if !ok1 || !ok2 {
			return false
		}
		gf, err1 := g.Float64()
		wf, err2 := w.Float64()
		if err1 != nil || err2 != nil {
			return false
		}
		switch typ {
		case filegdb.Float32:
			return float32(gf) == float32(wf)
		case filegdb.Float64:
			// GDAL's GeoJSON writer rounds away a run of 9s or 0s at
			// the end of a double's 17 digits (266.71183999999556, in
			// BikeInventory.gdb, as 266.71184; ogrinfo shows the
			// double the file holds): a few units in the 14th digit.
			return math.Abs(gf-wf) <= 1e-13*math.Abs(wf)
		}
		return gf == wf
	case filegdb.DateTime:
		gs, ok1 := got.(string)
		ws, ok2 := want.(string)
		gt, err1 := time.Parse(time.RFC3339Nano, gs)
		wt, err2 := parseGDALTime(ws)
		if !ok1 || !ok2 || err1 != nil || err2 != nil {
			return false
		}
		d := wt.Sub(gt)
		// GDAL 3.6 reads whole seconds: the nearest one to an instant
		// with milliseconds (within 0.5 s), and that one second late
		// before 1970 (3654.0 days, 1910-01-01T00:00:00, as 00:00:01).
		// TestDatesToTheMillisecond checks those instants against what
		// the file holds.
		if gt.Before(time.Unix(0, 0)) {
			return d > 0 && d <= 1500*time.Millisecond
		}
		if gt.Nanosecond() != 0 {
			return d.Abs() <= 500*time.Millisecond
		}
		return d.Abs() < time.Millisecond
	}
	return false
}

func parseGDALTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("not a time")
}

// metresPer is the length of one unit of srid's coordinates, in metres
// (a degree of latitude for a geographic CRS: the larger of a degree's
// lengths, so that the bound holds in both directions).
func metresPer(srid int) float64 {
	switch srid {
	case 4267, 4269, 4326:
		return 111320
	case 2264:
		return 1200.0 / 3937
	}
	return 1
}

func sameGeometry(g, w geom.T, srid int) error {
	if g == nil || w == nil {
		if (g == nil) != (w == nil) {
			return errors.New("null geometry on one side only")
		}
		return nil
	}
	if reflect.TypeOf(g) != reflect.TypeOf(w) || g.Layout() != w.Layout() {
		return errorf("geometry %T %v, GDAL's %T %v", g, g.Layout(), w, w.Layout())
	}
	if g.SRID() != srid {
		return errorf("SRID %d, want %d", g.SRID(), srid)
	}
	if !reflect.DeepEqual(g.Ends(), w.Ends()) || !reflect.DeepEqual(g.Endss(), w.Endss()) || len(g.FlatCoords()) != len(w.FlatCoords()) {
		return errorf("parts %v %v, GDAL's %v %v", g.Ends(), g.Endss(), w.Ends(), w.Endss())
	}
	for i, c := range g.FlatCoords() {
		wc := w.FlatCoords()[i]
		if math.Abs(c-wc) > 1e-9*math.Max(1, math.Abs(wc)) {
			return errorf("coordinate %d is %v, GDAL's %v", i, c, wc)
		}
	}
	gx, gy, ga := centroid(g)
	wx, wy, wa := centroid(w)
	if d := math.Hypot(gx-wx, gy-wy) * metresPer(srid); d > 0.01 {
		return errorf("centroid %v m from GDAL's", d)
	}
	if wa != 0 && math.Abs(ga-wa)/math.Abs(wa) > 1e-6 {
		return errorf("area %v, GDAL's %v", ga, wa)
	}
	return nil
}

// centroid is the mean of a geometry's vertices (of its rings' vertices
// weighted by area for a polygon) and its planar area. A polygon's is
// computed about its first vertex: about the origin, the products of
// State Plane coordinates (10^12 square feet) swamp a small lot's area.
func centroid(g geom.T) (x, y, area float64) {
	flat, stride := g.FlatCoords(), g.Layout().Stride()
	if mp, ok := g.(*geom.MultiPolygon); ok && len(flat) > 0 {
		ox, oy := flat[0], flat[1]
		var cx, cy float64
		start := 0
		for _, ends := range mp.Endss() {
			for _, e := range ends {
				ring := flat[start:e]
				n := len(ring) / stride
				for i := 0; i < n; i++ {
					j := (i + 1) % n
					x0, y0, x1, y1 := ring[i*stride]-ox, ring[i*stride+1]-oy, ring[j*stride]-ox, ring[j*stride+1]-oy
					c := x0*y1 - x1*y0
					area += c / 2
					cx += (x0 + x1) * c / 6
					cy += (y0 + y1) * c / 6
				}
				start = e
			}
		}
		if area != 0 {
			return ox + cx/area, oy + cy/area, area
		}
	}
	n := len(flat) / stride
	for i := 0; i < n; i++ {
		x += flat[i*stride] / float64(n)
		y += flat[i*stride+1] / float64(n)
	}
	return x, y, 0
}

func errorf(format string, a ...any) error { return fmt.Errorf(format, a...) }
