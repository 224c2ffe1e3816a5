package gpkg_test

import (
	"testing"
	"time"

	"github.com/ingestd/ingestd/gpkg"
	"github.com/ingestd/ingestd/internal/gdaltest"
	"github.com/ingestd/ingestd/internal/memstat"
)

// BenchmarkReader reads a GeoPackage of 250,000 generated parcels (GDAL
// writes it once, at bench time): features/s, allocations per feature and
// the process's peak RSS.
func BenchmarkReader(b *testing.B) {
	path := gdaltest.Parcels(b, b.TempDir(), gdaltest.BenchParcels, "GPKG", "parcels.gpkg")
	b.ReportAllocs()
	var elapsed time.Duration
	runs := 0
	for b.Loop() {
		start := time.Now()
		r, err := gpkg.Open(path, gpkg.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if n := gdaltest.Drain(b, r); n != gdaltest.BenchParcels {
			b.Fatalf("%d features, want %d", n, gdaltest.BenchParcels)
		}
		r.Close()
		elapsed += time.Since(start)
		runs++
	}
	b.ReportMetric(float64(runs*gdaltest.BenchParcels)/elapsed.Seconds(), "features/s")
	b.ReportMetric(float64(memstat.PeakRSS())/(1<<20), "peak-RSS-MB")
}
