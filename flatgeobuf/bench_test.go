package flatgeobuf_test

import (
	"testing"

	"github.com/ingestd/ingestd/internal/gdaltest"
)

// BenchmarkReader reads a FlatGeobuf file of 250,000 generated parcels (GDAL
// writes it once, at bench time): features/s, allocations per feature and
// the process's peak RSS.
func BenchmarkReader(b *testing.B) {
	gdaltest.BenchReader(b, "FlatGeobuf", "parcels.fgb", open)
}
