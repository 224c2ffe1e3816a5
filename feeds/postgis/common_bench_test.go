package postgis_test

import (
	"fmt"
	"testing"
	"time"

	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/migrations/pgtest"
)

// BenchmarkCommonApply times the Apply of a 50,000-address first load and
// of a poll that then modifies 100 of them, each without a conform and
// with one (a join of three fields, a plain field), staging outside the
// timer: what conforming into common.addresses adds to an apply.
//
//	go test -run '^$' -bench CommonApply -benchtime 3x ./feeds/postgis
func BenchmarkCommonApply(b *testing.B) {
	const total, pageSize, changed = 50_000, 5_000, 100
	layer := make([]ft.Feature, total)
	for i := range layer {
		layer[i] = wakeAddress(fmt.Sprintf("a%06d", i), i%2 == 0, i, fmt.Sprintf("STREET %d", i%977), "RALEIGH")
	}
	edited := append([]ft.Feature(nil), layer...)
	for i := 0; i < changed; i++ {
		j := i * (total / changed)
		edited[j] = wakeAddress(layer[j].ID, false, j+1, "RENAMED", "RALEIGH")
	}
	for _, withConform := range []bool{false, true} {
		b.Run(fmt.Sprintf("conform=%v", withConform), func(b *testing.B) {
			pool := pgtest.Pool(b)
			ctx := b.Context()
			store := postgis.New(pool)
			var first, incr time.Duration
			for i := 0; i < b.N; i++ {
				feed := feedInfo(fmt.Sprintf("addr-%d", i))
				if withConform {
					feed.Common = addressConform(b, wakeConform)
				}
				for round, fs := range [][]ft.Feature{layer, edited} {
					id, err := store.BeginPoll(ctx, feed)
					if err != nil {
						b.Fatal(err)
					}
					for p := 0; p*pageSize < total; p++ {
						if _, err := store.StagePage(ctx, id, p, reader(fs[p*pageSize:min((p+1)*pageSize, total)]...)); err != nil {
							b.Fatal(err)
						}
					}
					start := time.Now()
					if _, err := store.Apply(ctx, id, feed); err != nil {
						b.Fatal(err)
					}
					if round == 0 {
						first += time.Since(start)
					} else {
						incr += time.Since(start)
					}
				}
			}
			b.ReportMetric(float64(first.Milliseconds())/float64(b.N), "ms/first-load")
			b.ReportMetric(float64(incr.Milliseconds())/float64(b.N), "ms/100-modified")
		})
	}
}
