package postgis

import (
	"fmt"
	"io"
	"testing"

	"github.com/twpayne/go-geom"

	"github.com/ingestd/ingestd/feature"
)

// sliceFeatures is a FeatureReader over features.
type sliceFeatures []feature.Feature

func (s *sliceFeatures) Next() (*feature.Feature, error) {
	if len(*s) == 0 {
		return nil, io.EOF
	}
	f := &(*s)[0]
	*s = (*s)[1:]
	return f, nil
}

// TestPageIDsStopCollectingPastMax: once a page has more distinct ids
// than StagePage counts, the set is dropped for the rest of the page, not
// refilled and dropped again (a 1M-feature page would rebuild a
// 65,536-id map 15 times). Below the bound every id is counted.
func TestPageIDsStopCollectingPastMax(t *testing.T) {
	t.Parallel()
	stage := func(n, max int) (*copySource, *pageIDs) {
		fs := make(sliceFeatures, n)
		for i := range fs {
			fs[i] = feature.Feature{ID: fmt.Sprint("id.", i),
				Geometry: geom.NewPointFlat(geom.XY, []float64{1, 2}).SetSRID(4326)}
		}
		src := &copySource{ids: make(map[string]struct{})}
		ids := &pageIDs{features: &fs, src: src, max: max}
		src.features = ids
		if _, err := io.Copy(io.Discard, src); err != nil {
			t.Fatal(err)
		}
		if src.n != n {
			t.Fatalf("encoded %d of %d features", src.n, n)
		}
		return src, ids
	}
	if src, ids := stage(8, 8); ids.overflow || len(src.ids) != 8 {
		t.Errorf("8 ids under a bound of 8: overflow %v, %d counted; want false, 8", ids.overflow, len(src.ids))
	}
	if src, ids := stage(100, 8); !ids.overflow || src.ids != nil {
		t.Errorf("100 ids under a bound of 8: overflow %v, %d ids still held; want true and none", ids.overflow, len(src.ids))
	}
}

// BenchmarkContentHash is what staging adds per row to hand the apply its
// content hash (decision 0221): one SHA-256 of 64 bytes.
//
//	go test -run '^$' -bench ContentHash ./feeds/postgis
func BenchmarkContentHash(b *testing.B) {
	g, p := geomHash([]byte("geometry")), emptyHash
	var sink byte
	for b.Loop() {
		h := contentHash(g, p)
		sink ^= h[0]
	}
	_ = sink
}
