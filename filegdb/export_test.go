package filegdb

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// SetDateTime rewrites, in the geodatabase folder dir, the DateTime value
// of field in row oid of layer to tm, to the millisecond: GDAL 3.6 writes
// whole seconds only, and the tests need the milliseconds a file from
// ArcGIS holds.
func SetDateTime(t testing.TB, dir, layer string, oid int64, field string, tm time.Time) {
	t.Helper()
	g, err := Open(os.DirFS(dir), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var table string
	for _, l := range g.Layers() {
		if l.Name == layer {
			table = l.Table
		}
	}
	off, n := valueAt(t, dir, table, oid, field)
	if n != 8 {
		t.Fatalf("%s is no DateTime", field)
	}
	days := float64(tm.Sub(epoch).Milliseconds()) / 86400000
	path := filepath.Join(dir, table+".gdbtable")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint64(b[off:], math.Float64bits(days))
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
