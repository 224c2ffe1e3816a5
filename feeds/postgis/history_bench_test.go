package postgis_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/jackc/pgx/v5/pgxpool"

	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/migrations/pgtest"
)

// BenchmarkHistoryStorage loads 250,000 parcels and polls them 30 times,
// each poll modifying another 1 % of them (properties, geometry or both),
// then prints the size of the history the polls kept against the layer's
// own, what the layer as of the first and the last poll costs to read, and
// what pruning half the history costs.
//
//	go test -run '^$' -bench HistoryStorage -benchtime 1x -timeout 30m ./feeds/postgis
//
// One iteration is the whole run (several minutes on two cores).
func BenchmarkHistoryStorage(b *testing.B) {
	const total, polls, every, pageSize = 250_000, 30, 100, 5_000
	for i := 0; i < b.N; i++ {
		pool := pgtest.Pool(b)
		ctx := b.Context()
		store := postgis.New(pool)
		feed := feedInfo("parcels")
		layer := generatePolygons(total)
		var applied []time.Time
		var applyTime time.Duration
		for p := range polls {
			if p > 0 {
				modifyOnePercent(layer, p, every)
			}
			id, err := store.BeginPoll(ctx, feed)
			if err != nil {
				b.Fatal(err)
			}
			for pg := 0; pg*pageSize < total; pg++ {
				if _, err := store.StagePage(ctx, id, pg, reader(layer[pg*pageSize:min((pg+1)*pageSize, total)]...)); err != nil {
					b.Fatal(err)
				}
			}
			start := time.Now()
			res, err := store.Apply(ctx, id, feed)
			if err != nil {
				b.Fatal(err)
			}
			if p > 0 {
				applyTime += time.Since(start)
				if res.Modified != total/every {
					b.Fatalf("poll %d modified %d, want %d", p, res.Modified, total/every)
				}
			}
			var at time.Time
			if err := pool.QueryRow(ctx, `SELECT finished_at FROM polls WHERE id = $1`, id).Scan(&at); err != nil {
				b.Fatal(err)
			}
			applied = append(applied, at)
			if p == 0 {
				if _, err := pool.Exec(ctx, `ANALYZE features`); err != nil {
					b.Fatal(err)
				}
			}
		}
		var hist string
		if err := pool.QueryRow(ctx, `SELECT ingestd_history_table($1, $2)::text`, feed.Jurisdiction, feed.Feed).Scan(&hist); err != nil {
			b.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `VACUUM ANALYZE `+hist); err != nil {
			b.Fatal(err)
		}
		var layerBytes, histBytes, histHeap, rows int64
		if err := pool.QueryRow(ctx, `SELECT pg_total_relation_size(ingestd_feed_view($1, $2)::regclass),
			pg_total_relation_size($3::regclass), pg_relation_size($3::regclass), (SELECT count(*) FROM feature_history)`,
			feed.Jurisdiction, feed.Feed, hist).Scan(&layerBytes, &histBytes, &histHeap, &rows); err != nil {
			b.Fatal(err)
		}
		asOf := func(at time.Time) time.Duration { return timeAsOf(b, pool, feed, at, total) }
		first, last := asOf(applied[0]), asOf(applied[polls-1])
		// Prune the first half: keep 90 days as of 90 days after poll 15.
		start := time.Now()
		pruned, err := store.PruneHistory(ctx, applied[15].Add(90*24*time.Hour))
		if err != nil {
			b.Fatal(err)
		}
		prune := time.Since(start)
		b.Logf("layer %d features: %s (table and indexes); history after %d polls modifying 1 %% each: %d versions, %s (%s heap) = %.2f× the layer",
			total, humanize.IBytes(uint64(layerBytes)), polls, rows, humanize.IBytes(uint64(histBytes)), humanize.IBytes(uint64(histHeap)),
			float64(histBytes)/float64(layerBytes))
		b.Logf("apply of a 1 %% change: %s mean; layer as of the first poll %s, of the last %s; prune of %d versions %s",
			(applyTime / (polls - 1)).Round(time.Millisecond), first.Round(time.Millisecond), last.Round(time.Millisecond),
			pruned, prune.Round(time.Millisecond))
		b.ReportMetric(float64(histBytes)/float64(layerBytes), "history/layer")
	}
}

// modifyOnePercent modifies every every-th parcel of layer from p on: its
// properties, its geometry or both, by the parcel's index.
func modifyOnePercent(layer []ft.Feature, p, every int) {
	for k := p % every; k < len(layer); k += every {
		f := &layer[k]
		switch k % 3 {
		case 0:
			f.Properties = props("pin", fmt.Sprintf("%010d", k), "owner", fmt.Sprintf("Owner %d", p), "acres", float64(k%97)/10)
		case 1:
			f.Geometry = square(-78.9+float64(k%1000)*1e-4, 35.7+float64(k/1000)*1e-4, 5e-5+float64(p)*1e-6)
		default:
			f.Properties = props("pin", fmt.Sprintf("%010d", k), "owner", fmt.Sprintf("Owner %d", p), "acres", float64(p))
			f.Geometry = square(-78.9+float64(k%1000)*1e-4, 35.7+float64(k/1000)*1e-4, 4e-5)
		}
	}
}

// timeAsOf times reading the whole layer as of at, which must hold want
// features.
func timeAsOf(b *testing.B, pool *pgxpool.Pool, feed feeds.FeedInfo, at time.Time, want int) time.Duration {
	start := time.Now()
	var n int
	if err := pool.QueryRow(b.Context(), `SELECT count(*) FROM ingestd_layer_as_of($1, $2, $3)`, feed.Jurisdiction, feed.Feed, at).Scan(&n); err != nil {
		b.Fatal(err)
	}
	if n != want {
		b.Fatalf("as of %s: %d features, want %d", at, n, want)
	}
	return time.Since(start)
}
