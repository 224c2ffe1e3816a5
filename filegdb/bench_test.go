package filegdb_test

import (
	"os"
	"testing"

	"github.com/ingestd/ingestd/filegdb"
	"github.com/ingestd/ingestd/internal/gdaltest"
)

// BenchmarkReader reads 250,000 generated parcels from a geodatabase GDAL
// writes at bench time: features/s, allocations per feature and the
// process's peak RSS, which stays that of one row however large the
// table.
//
//	go test ./filegdb -run '^$' -bench Reader -benchtime 3x
func BenchmarkReader(b *testing.B) {
	gdaltest.BenchReader(b, "OpenFileGDB", "parcels.gdb", func(path string) (gdaltest.Reader, error) {
		return filegdb.OpenReader(os.DirFS(path), filegdb.Options{})
	})
}
