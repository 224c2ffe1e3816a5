package gdaltest

import (
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/internal/memstat"
	"github.com/ingestd/ingestd/schema"
)

// Reader is what the tests here need of a file format's reader.
type Reader interface {
	feature.FeatureReader
	Declared() *schema.Declared
	Close() error
}

// OpenFunc opens the file at path with the format's default options.
type OpenFunc func(path string) (Reader, error)

// ReadAll reads every feature of r, an Open's results, and returns the
// first error (Open's own included); it closes r.
func ReadAll(r Reader, err error) error {
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		if _, err := r.Next(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// MixedMatchesGDAL writes Mixed as format (a GDAL driver name) at a file
// named name, in XY and in XYZ, and checks that open reads its declared
// columns and its want features as GDAL reads them.
func MixedMatchesGDAL(t *testing.T, format, name string, open OpenFunc, want int) {
	for _, dim := range []string{"XY", "XYZ"} {
		t.Run(dim, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, name)
			OGR2OGR(t, "-f", format, path, Mixed(t, dir), "-nln", "mixed", "-dim", dim)
			r, err := open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			CheckDeclared(t, r.Declared(), path, "mixed")
			if n := Compare(t, r, path, "mixed", 4326); n != want {
				t.Errorf("%d features, want %d", n, want)
			}
		})
	}
}

// BenchParcels is the feature count of the readers' benchmarks: a
// county's parcels.
const BenchParcels = 250000

// BenchReader reads a file of BenchParcels generated parcels, written by
// GDAL as format at a file named name once, at bench time, with open:
// features/s, allocations per feature and the process's peak RSS.
func BenchReader(b *testing.B, format, name string, open OpenFunc) {
	path := Parcels(b, b.TempDir(), BenchParcels, format, name)
	b.ReportAllocs()
	var elapsed time.Duration
	runs := 0
	for b.Loop() {
		start := time.Now()
		r, err := open(path)
		if err != nil {
			b.Fatal(err)
		}
		if n := drain(b, r); n != BenchParcels {
			b.Fatalf("%d features, want %d", n, BenchParcels)
		}
		r.Close()
		elapsed += time.Since(start)
		runs++
	}
	b.ReportMetric(float64(runs*BenchParcels)/elapsed.Seconds(), "features/s")
	b.ReportMetric(float64(memstat.PeakRSS())/(1<<20), "peak-RSS-MB")
}

// drain reads r to its end and returns the features read.
func drain(b testing.TB, r feature.FeatureReader) int {
	b.Helper()
	n := 0
	for {
		_, err := r.Next()
		if errors.Is(err, io.EOF) {
			return n
		}
		if err != nil {
			b.Fatal(err)
		}
		n++
	}
}
