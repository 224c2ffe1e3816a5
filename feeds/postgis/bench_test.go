package postgis_test

import (
	"fmt"
	"testing"

	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/migrations/pgtest"
)

// BenchmarkStageAndApply polls a layer of 50,000 small polygons in pages of
// 1,000 and reports features/s for the whole poll (stage every page, apply).
//
//	go test -run '^$' -bench StageAndApply -benchtime 5x ./feeds/postgis
//
// "new": every feature is added (a first poll); "unchanged": the same
// snapshot again, the common case of a layer that did not change;
// "modified": every feature's properties changed.
func BenchmarkStageAndApply(b *testing.B) {
	const total, pageSize = 50_000, 1_000
	pool := pgtest.Pool(b)
	store := postgis.New(pool)
	ctx := b.Context()
	layer := generatePolygons(total)
	alt := generatePolygons(total)
	for i := range alt {
		alt[i].Properties = props("pin", i, "owner", "Someone Else", "acres", 1.5)
	}

	pollOnce := func(b *testing.B, feedName string, fs []ft.Feature) {
		feed := feedInfo(feedName)
		id, err := store.BeginPoll(ctx, feed)
		if err != nil {
			b.Fatal(err)
		}
		for p := 0; p*pageSize < len(fs); p++ {
			if _, err := store.StagePage(ctx, id, p, reader(fs[p*pageSize:min((p+1)*pageSize, len(fs))]...)); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := store.Apply(ctx, id, feed); err != nil {
			b.Fatal(err)
		}
	}

	b.Run("new", func(b *testing.B) {
		i := 0
		for b.Loop() {
			pollOnce(b, fmt.Sprintf("new-%d", i), layer)
			i++
		}
		b.ReportMetric(float64(total*b.N)/b.Elapsed().Seconds(), "features/s")
	})
	b.Run("unchanged", func(b *testing.B) {
		pollOnce(b, "same", layer)
		for b.Loop() {
			pollOnce(b, "same", layer)
		}
		b.ReportMetric(float64(total*b.N)/b.Elapsed().Seconds(), "features/s")
	})
	b.Run("modified", func(b *testing.B) {
		pollOnce(b, "flip", layer)
		i := 0
		for b.Loop() {
			if i%2 == 0 {
				pollOnce(b, "flip", alt)
			} else {
				pollOnce(b, "flip", layer)
			}
			i++
		}
		b.ReportMetric(float64(total*b.N)/b.Elapsed().Seconds(), "features/s")
	})
}
