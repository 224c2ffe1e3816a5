package filegdb

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/internal/propjson"
)

// The fuzzers' seeds are under testdata/fuzz, cut from tables GDAL's
// OpenFileGDB driver wrote (TestWriteFuzzSeeds writes them again), and
// batch-machine's lake-man-gdb.gdb, which ArcGIS wrote, is added here.
// FuzzGeometry's arcgis-bikeinventory-* are two ArcGIS-written lines with
// arcs flagged straight, from the fgdb npm package's BikeInventory.gdb
// (MIT; scripts/fgdb-fixtures.sh fetches it).

const lakeMan = "../testdata/filegdb/lake-man-gdb.gdb"

// memFile is a file held in memory, as the fuzzers read their input.
func memFile(b []byte) *file { return &file{name: "fuzz", r: bytes.NewReader(b), size: int64(len(b))} }

// FuzzTable feeds field descriptors and a row to the table decoder: the
// descriptors, the row's split into values and each value's decoding
// (attributes and geometry) must fail cleanly or succeed, never panic.
func FuzzTable(f *testing.F) {
	for _, seed := range lakeManRows(f) {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, desc, row []byte) {
		tb := &table{label: "fuzz", geomIndex: -1}
		if err := tb.parseFields(desc); err != nil {
			return
		}
		r := &Reader{t: tb, limits: feature.DefaultLimits(), idIdx: -1}
		vals := make([]value, len(tb.fields))
		if err := tb.splitRow(row, vals, 1<<20); err != nil {
			return
		}
		for i := range tb.fields {
			switch tb.fields[i].Type {
			case ObjectID, Raster:
			case Geometry:
				if !vals[i].null {
					decodeGeometry(vals[i].b, tb.geom, 4326)
				}
			default:
				r.obj.Key(propjson.NewKeys([]string{tb.fields[i].Name}), 0)
				r.appendValue(&tb.fields[i], vals[i])
			}
		}
	})
}

// FuzzTablx feeds a .gdbtablx to the index decoder with a row count: its
// header, block map and every offset it leads to must be read within the
// file or refused.
func FuzzTablx(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join(lakeMan, "a00000009.gdbtablx")); err == nil {
		f.Add(b, uint32(6))
	}
	f.Fuzz(func(t *testing.T, index []byte, rows uint32) {
		tb := &table{label: "fuzz", index: memFile(index), validRows: rows}
		if err := tb.readIndexHeader(); err != nil {
			return
		}
		for i, n := tb.skipAbsent(0), 0; i < tb.slots && n < 1<<16; i, n = tb.skipAbsent(i+1), n+1 {
			tb.rowOffset(i)
		}
	})
}

// FuzzGeometry feeds a geometry blob to the geometry decoder, on a grid
// with Z and M.
func FuzzGeometry(f *testing.F) {
	for _, seed := range lakeManRows(f) {
		tb := &table{label: "seed", geomIndex: -1}
		if tb.parseFields(seed[0]) != nil || tb.geomIndex < 0 {
			continue
		}
		vals := make([]value, len(tb.fields))
		if tb.splitRow(seed[1], vals, 1<<20) == nil && !vals[tb.geomIndex].null {
			f.Add(vals[tb.geomIndex].b)
		}
	}
	g := &geomField{xOrig: -400, yOrig: -400, xyScale: 1e9, zOrig: -100000, zScale: 10000, mOrig: -100000, mScale: 10000}
	f.Fuzz(func(t *testing.T, blob []byte) {
		decodeGeometry(blob, g, 4326)
	})
}

// lakeManRows are the field descriptors and each row of lake-man's
// layer, as seeds.
func lakeManRows(f *testing.F) [][2][]byte {
	dir := lakeMan
	tb, err := openTable(os.DirFS(dir), ".", "a00000009", "seed", spool{limit: 1 << 30})
	if err != nil {
		f.Fatal(err)
	}
	defer tb.close()
	desc := descriptors(f, filepath.Join(dir, "a00000009.gdbtable"))
	var seeds [][2][]byte
	for i := int64(0); i < tb.slots; i++ {
		blob, ok, err := tb.readRow(i, nil, 1<<30)
		if err != nil {
			f.Fatal(err)
		}
		if ok {
			seeds = append(seeds, [2][]byte{desc, blob})
		}
	}
	return seeds
}

// descriptors are the field descriptors of the .gdbtable at path (after
// their length).
func descriptors(t testing.TB, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off := int(uint64(b[32]) | uint64(b[33])<<8 | uint64(b[34])<<16 | uint64(b[35])<<24)
	n := int(uint32(b[off]) | uint32(b[off+1])<<8 | uint32(b[off+2])<<16 | uint32(b[off+3])<<24)
	return b[off+4 : off+4+n]
}

// TestWriteFuzzSeeds writes the fuzzers' seed corpus under testdata/fuzz
// from tables GDAL writes now (a polygon layer in NAD27, one with Z, a
// points layer, a line layer, lines and polygons with circular arcs): run
// with INGESTD_FILEGDB_WRITE_SEEDS=1.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("INGESTD_FILEGDB_WRITE_SEEDS") == "" {
		t.Skip("set INGESTD_FILEGDB_WRITE_SEEDS=1 to write the fuzz seeds again")
	}
	dir := t.TempDir()
	src := "../testdata/arcgis/"
	// Circular arcs, in lines and in polygons' rings, for the curve reader.
	curves := filepath.Join(dir, "curves.csv")
	if err := os.WriteFile(curves, []byte("WKT,ID\n"+
		"\"CIRCULARSTRING(2000000 700000,2000050 700050,2000100 700000)\",1\n"+
		"\"COMPOUNDCURVE((2000000 700000,2000100 700000),CIRCULARSTRING(2000100 700000,2000170.71 700029.29,2000200 700100))\",2\n"+
		"\"MULTICURVE(CIRCULARSTRING(2000000 700000,2000100 700100,2000200 700000,2000300 699900,2000400 700000),(2000000 700500,2000100 700500))\",3\n"),
		0o600); err != nil {
		t.Fatal(err)
	}
	polys := filepath.Join(dir, "curvepolys.csv")
	if err := os.WriteFile(polys, []byte("WKT,ID\n"+
		"\"CURVEPOLYGON(CIRCULARSTRING(2000000 700000,2000050 700050,2000100 700000,2000050 699950,2000000 700000))\",1\n"+
		"\"CURVEPOLYGON((2000000 700000,2000000 700400,2000400 700400,2000400 700000,2000000 700000),CIRCULARSTRING(2000150 700200,2000200 700250,2000250 700200,2000200 700150,2000150 700200))\",2\n"),
		0o600); err != nil {
		t.Fatal(err)
	}
	for i, args := range [][]string{
		{"-t_srs", "EPSG:4267", src + "nc_counties.geojson", "-nln", "counties"},
		{"-t_srs", "EPSG:2264", "-zfield", "BIR74", src + "nc_counties.geojson", "-nln", "counties_z"},
		{src + "nc_points.geojson", "-nln", "points"},
		{src + "nc_boundaries.geojson", "-nln", "lines"},
		{"-a_srs", "EPSG:2264", curves, "-nln", "arcs", "-nlt", "MULTICURVE", "-oo", "KEEP_GEOM_COLUMNS=NO"},
		{"-a_srs", "EPSG:2264", polys, "-nln", "lots", "-nlt", "MULTISURFACE", "-oo", "KEEP_GEOM_COLUMNS=NO"},
	} {
		out := filepath.Join(dir, strconv.Itoa(i)+".gdb")
		cmd := exec.CommandContext(t.Context(), "ogr2ogr", append([]string{"-f", "OpenFileGDB", out}, args...)...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("ogr2ogr: %v: %s", err, b)
		}
		g, err := Open(os.DirFS(out), Options{})
		if err != nil {
			t.Fatal(err)
		}
		table := g.Layers()[0].Table
		tb, err := openTable(os.DirFS(out), ".", table, "seed", spool{limit: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		desc := descriptors(t, filepath.Join(out, table+".gdbtable"))
		n := 0
		for j := int64(0); j < tb.slots && n < 3; j++ {
			blob, ok, err := tb.readRow(j, nil, 1<<30)
			if err != nil || !ok {
				continue
			}
			n++
			writeSeed(t, "FuzzTable", fmt.Sprintf("gdal-%d-%d", i, n), desc, blob)
			vals := make([]value, len(tb.fields))
			if err := tb.splitRow(blob, vals, 1<<30); err != nil {
				t.Fatal(err)
			}
			if g := vals[tb.geomIndex]; !g.null && len(g.b) < 4096 {
				writeSeed(t, "FuzzGeometry", fmt.Sprintf("gdal-%d-%d", i, n), g.b)
			}
		}
		tb.close()
		index, err := os.ReadFile(filepath.Join(out, table+".gdbtablx"))
		if err != nil {
			t.Fatal(err)
		}
		writeSeed(t, "FuzzTablx", fmt.Sprintf("gdal-%d", i), index, tb.validRows)
	}
}

func writeSeed(t *testing.T, fuzzer, name string, args ...any) {
	t.Helper()
	text := "go test fuzz v1\n"
	for _, a := range args {
		switch a := a.(type) {
		case []byte:
			text += "[]byte(" + strconv.Quote(string(a)) + ")\n"
		case uint32:
			text += "uint32(" + strconv.FormatUint(uint64(a), 10) + ")\n"
		}
	}
	dir := filepath.Join("testdata", "fuzz", fuzzer)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
