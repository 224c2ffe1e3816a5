package filegdb

import (
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/feature"
)

// pointsGDB writes a small points layer with GDAL (Int32, text, a
// date-time) and returns the .gdb folder and its layer's table file.
func pointsGDB(t *testing.T) (dir, table string) {
	t.Helper()
	if _, err := exec.LookPath("ogr2ogr"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("ogr2ogr not found")
		}
		t.Skip("ogr2ogr not found (Debian gdal-bin)")
	}
	tmp := t.TempDir()
	src := filepath.Join(tmp, "p.geojson")
	var b strings.Builder
	b.WriteString(`{"type":"FeatureCollection","features":[`)
	for i := range 5 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"type":"Feature","properties":{"n":` + string(rune('0'+i)) + `,"s":"` + strings.Repeat("x", 200*(i+1)) + `","d":"2024-02-29T12:34:56.789Z"},"geometry":{"type":"Point","coordinates":[-78.` + string(rune('1'+i)) + `,35.5]}}`)
	}
	b.WriteString("]}")
	if err := os.WriteFile(src, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(tmp, "P.gdb")
	out, err := exec.CommandContext(t.Context(), "ogr2ogr", "-f", "OpenFileGDB", dir, src, "-nln", "pts").CombinedOutput()
	if err != nil {
		t.Fatalf("ogr2ogr: %v: %s", err, out)
	}
	g, err := Open(os.DirFS(dir), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return dir, g.Layers()[0].Table
}

// readAll reads the layer of dir to its end; it returns the features
// read and the error that ended the read (nil at io.EOF).
func readAll(dir string, opts Options) (int, error) {
	r, err := OpenReader(os.DirFS(dir), opts)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	for n := 0; ; n++ {
		if _, err := r.Next(); err != nil {
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, err
		}
	}
}

// offSize is the size of the .gdbtablx's offsets.
func offSize(t *testing.T, dir, table string) int64 {
	b, err := os.ReadFile(filepath.Join(dir, table+".gdbtablx"))
	if err != nil {
		t.Fatal(err)
	}
	return int64(binary.LittleEndian.Uint32(b[12:]))
}

// patch rewrites n bytes of file at off with fn's result.
func patch(t *testing.T, file string, off int64, fn func(b []byte)) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	fn(b[off:])
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// geometryAt is the offset in the .gdbtable of row oid's geometry blob
// (after its length) and the blob's length.
func geometryAt(t *testing.T, dir, table string, oid int64) (int64, int) {
	t.Helper()
	return valueAt(t, dir, table, oid, "")
}

// valueAt is the offset in the .gdbtable of row oid's value of field
// (the geometry for "") and the value's length.
func valueAt(t testing.TB, dir, table string, oid int64, field string) (int64, int) {
	t.Helper()
	tb, err := openTable(os.DirFS(dir), ".", table, "test", spool{limit: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.close()
	off, err := tb.rowOffset(oid - 1)
	if err != nil {
		t.Fatal(err)
	}
	blob, _, err := tb.readRow(oid-1, nil, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]value, len(tb.fields))
	if err := tb.splitRow(blob, vals, 1<<30); err != nil {
		t.Fatal(err)
	}
	i := tb.geomIndex
	if field != "" {
		i = tb.fieldIndex(field)
	}
	if i < 0 || vals[i].null {
		t.Fatalf("row %d has no value of %q", oid, field)
	}
	g := vals[i].b
	return off + 4 + int64(cap(blob)-cap(g)), len(g)
}

// TestHostile: each lie a damaged or hostile table can tell fails the
// read with an error naming the layer's table and, for a row's fault,
// the row; none ends in io.EOF as if the layer were whole.
func TestHostile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   Options
		break_ func(t *testing.T, dir, table string)
		want   []string
		limit  string
	}{
		{name: "a row count that lies", break_: func(t *testing.T, dir, table string) {
			patch(t, filepath.Join(dir, table+".gdbtable"), 4, func(b []byte) { binary.LittleEndian.PutUint32(b, 6) })
		}, want: []string{`layer "pts" (a00000009.gdbtable)`, "header counts 6 rows, its index leads to 5"}},
		{name: "an offset past the file", break_: func(t *testing.T, dir, table string) {
			patch(t, filepath.Join(dir, table+".gdbtablx"), 16+2*offSize(t, dir, table), func(b []byte) { binary.LittleEndian.PutUint32(b, 0x7FFFFFF0) })
		}, want: []string{`layer "pts"`, "row 3:", "past the end of the .gdbtable"}},
		{name: "a row longer than its file", break_: func(t *testing.T, dir, table string) {
			tb, err := openTable(os.DirFS(dir), ".", table, "test", spool{limit: 1 << 30})
			if err != nil {
				t.Fatal(err)
			}
			rowOff, _ := tb.rowOffset(1)
			tb.close()
			patch(t, filepath.Join(dir, table+".gdbtable"), rowOff, func(b []byte) { binary.LittleEndian.PutUint32(b, 1<<24) })
		}, want: []string{"row 2:", "claims 16777216 bytes", "past the end of the .gdbtable"}},
		{name: "a varint that never ends", break_: func(t *testing.T, dir, table string) {
			off, n := geometryAt(t, dir, table, 4)
			patch(t, filepath.Join(dir, table+".gdbtable"), off, func(b []byte) {
				b[0] = shpPoint
				for i := 1; i < n; i++ {
					b[i] = 0xFF
				}
			})
		}, want: []string{`layer "pts"`, "row 4:", "geometry: point:", "never ends"}},
		{name: "a 2^31-point geometry", break_: func(t *testing.T, dir, table string) {
			off, _ := geometryAt(t, dir, table, 5)
			patch(t, filepath.Join(dir, table+".gdbtable"), off, func(b []byte) {
				copy(b, []byte{shpMultiPoint, 0x80, 0x80, 0x80, 0x80, 0x08})
			})
		}, want: []string{"row 5:", "claims 2147483648 points, more than the 16777216 a geometry may have"}},
		{name: "a field past limits.value_bytes", opts: Options{Limits: feature.Limits{ValueBytes: 500}},
			want: []string{`layer "pts" (a00000009.gdbtable), row 3: field s of 600 bytes`}, limit: "value_bytes"},
		{name: "a row past limits.feature_bytes", opts: Options{Limits: feature.Limits{FeatureBytes: 300}},
			want: []string{`layer "pts" (a00000009.gdbtable), row 2 (`}, limit: "feature_bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, table := pointsGDB(t)
			if tc.break_ != nil {
				tc.break_(t, dir, table)
			}
			_, err := readAll(dir, tc.opts)
			if err == nil {
				t.Fatal("read to its end")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			var le *feature.LimitError
			if tc.limit != "" && (!errors.As(err, &le) || le.Name != tc.limit) {
				t.Errorf("error %v is not limits.%s", err, tc.limit)
			}
		})
	}
}

// TestDeletedRows: a row the .gdbtablx no longer leads to (what a
// deletion leaves) is skipped, the header counting one row fewer, and
// the others keep their OBJECTIDs.
func TestDeletedRows(t *testing.T) {
	dir, table := pointsGDB(t)
	patch(t, filepath.Join(dir, table+".gdbtablx"), 16+1*offSize(t, dir, table), func(b []byte) { copy(b, make([]byte, offSize(t, dir, table))) })
	patch(t, filepath.Join(dir, table+".gdbtable"), 4, func(b []byte) { binary.LittleEndian.PutUint32(b, 4) })
	r, err := OpenReader(os.DirFS(dir), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var ids []string
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, f.ID)
	}
	if got := strings.Join(ids, ","); got != "1,3,4,5" {
		t.Errorf("ids %s, want 1,3,4,5", got)
	}
}

// TestGeometryRefusedByName: Bézier curves, elliptic arcs and
// multipatches are refused with what they are, never read wrong; a curve
// that lies about its segment is the row's error.
func TestGeometryRefusedByName(t *testing.T) {
	g := &geomField{xyScale: 1e9, zScale: 1, mScale: 1}
	line := []byte{0x80 | shpGeneralLine, 0x80, 0x80, 0x80, 0x02, // with the curves flag
		2, 1, 1, 0, 0, 0, 0, 2, 2, 2, 2} // 2 points, 1 part, 1 curve, the extent, the points
	for _, tc := range []struct {
		name  string
		curve []byte
		want  string
	}{
		{"Bézier", append([]byte{0, segBezier}, make([]byte, 32)...), "curve 1: a Bézier segment: curved segments that ingestd does not densify"},
		{"elliptic arc", append([]byte{0, segEllipticArc}, make([]byte, 44)...), "curve 1: an elliptic arc: curved segments"},
		{"spiral", append([]byte{0, 3}, make([]byte, 32)...), "curve 1: unknown segment type 3"},
		{"past the last point", append([]byte{1, segCircularArc}, make([]byte, 20)...), "curve 1 starts at point 1 of 2: no segment follows it"},
		{"cut short", []byte{0, segCircularArc, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "curve 1: cut short"},
	} {
		_, err := decodeGeometry(append(slices.Clone(line), tc.curve...), g, 4326)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		if strings.HasPrefix(tc.name, "B") || strings.HasPrefix(tc.name, "e") {
			if !errors.Is(err, ErrCurves) {
				t.Errorf("%s: %v is not ErrCurves", tc.name, err)
			}
		}
	}
	if _, err := decodeGeometry([]byte{shpMultiPatch, 0}, g, 4326); !errors.Is(err, ErrMultiPatch) {
		t.Errorf("multipatch: %v", err)
	}
}

// TestArcByCentre: an arc given by its centre turns the way its flags
// say, its vertices on its circle, 45 steps for a half circle as GDAL
// strokes it.
func TestArcByCentre(t *testing.T) {
	g := &geomField{xyScale: 1, zScale: 1, mScale: 1}
	blob := []byte{0x80 | shpGeneralLine, 0x80, 0x80, 0x80, 0x02,
		2, 1, 1, 0, 0, 0, 0, 0, 0, 2, 0, // (0 0) to (2 0)
		0, segCircularArc}
	blob = binary.LittleEndian.AppendUint64(blob, math.Float64bits(1))
	blob = binary.LittleEndian.AppendUint64(blob, math.Float64bits(0))
	for _, tc := range []struct {
		bits uint32
		side float64
	}{{arcCCW, -1}, {0, 1}} {
		geomT, err := decodeGeometry(binary.LittleEndian.AppendUint32(slices.Clone(blob), tc.bits), g, 0)
		if err != nil {
			t.Fatal(err)
		}
		flat := geomT.FlatCoords()
		if len(flat) != 46*2 {
			t.Errorf("bits %#x: %d vertices, want 46", tc.bits, len(flat)/2)
		}
		for i := 0; i < len(flat); i += 2 {
			x, y := flat[i], flat[i+1]
			if math.Abs(math.Hypot(x-1, y)-1) > 1e-12 || y*tc.side < -1e-12 {
				t.Fatalf("bits %#x: vertex %d (%v %v) off its half circle", tc.bits, i/2, x, y)
			}
		}
	}
}

// TestStraightArc: an arc flagged straight keeps the point on it that it
// is given, as GDAL keeps it (ArcGIS writes such arcs with the chord's
// midpoint); flagged straight, empty or a point when given by its
// centre, it is the straight segment, the centre ignored.
func TestStraightArc(t *testing.T) {
	g := &geomField{xyScale: 1, zScale: 1, mScale: 1}
	blob := []byte{0x80 | shpGeneralLine, 0x80, 0x80, 0x80, 0x02,
		2, 1, 1, 0, 0, 0, 0, 0, 0, 2, 0, // (0 0) to (2 0)
		0, segCircularArc}
	blob = binary.LittleEndian.AppendUint64(blob, math.Float64bits(1))
	blob = binary.LittleEndian.AppendUint64(blob, math.Float64bits(0))
	for _, tc := range []struct {
		bits uint32
		want []float64
	}{
		{arcDefinedIP | arcIsLine | 1<<8, []float64{0, 0, 1, 0, 2, 0}},
		{arcIsLine, []float64{0, 0, 2, 0}},
		{arcIsEmpty, []float64{0, 0, 2, 0}},
		{arcIsPoint | arcCCW, []float64{0, 0, 2, 0}},
	} {
		geomT, err := decodeGeometry(binary.LittleEndian.AppendUint32(slices.Clone(blob), tc.bits), g, 0)
		if err != nil {
			t.Fatalf("bits %#x: %v", tc.bits, err)
		}
		if got := geomT.FlatCoords(); !slices.Equal(got, tc.want) {
			t.Errorf("bits %#x: %v, want %v", tc.bits, got, tc.want)
		}
	}
}

// TestArcOfNoLength: an arc whose ends and given point are one point is
// drawn as nothing and its end kept once, as GDAL reads it (a line of
// four points with such an arc in the middle is three points in
// ogr2ogr's export); a part left one point by it is refused.
func TestArcOfNoLength(t *testing.T) {
	g := &geomField{xyScale: 1, zScale: 1, mScale: 1}
	arc := func(start byte, x, y float64) []byte {
		b := []byte{start, segCircularArc}
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(y))
		return binary.LittleEndian.AppendUint32(b, arcDefinedIP|arcIsPoint)
	}
	// (0 0) (1 0) (1 0) (2 0), the arc from point 1.
	line := append([]byte{0x80 | shpGeneralLine, 0x80, 0x80, 0x80, 0x02,
		4, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0},
		arc(1, 1, 0)...)
	geomT, err := decodeGeometry(line, g, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := geomT.FlatCoords(), []float64{0, 0, 1, 0, 2, 0}; !slices.Equal(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
	// (1 0) (1 0) alone.
	lone := append([]byte{0x80 | shpGeneralLine, 0x80, 0x80, 0x80, 0x02,
		2, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0},
		arc(0, 1, 0)...)
	if _, err := decodeGeometry(lone, g, 0); err == nil || !strings.Contains(err.Error(), "one point") {
		t.Errorf("a part of one arc of no length: %v", err)
	}
}
