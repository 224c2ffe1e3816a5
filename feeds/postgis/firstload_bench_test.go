package postgis_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/migrations/pgtest"
)

// BenchmarkFirstLoadWrites times the Apply of a 250,000-parcel first load
// (staging outside the timer) and reports the WAL it wrote and the rows it
// logged in feature_changes: what a first load writes beyond the layer's
// own table. WAL bytes do not depend on the machine's load (the server's,
// shared by other databases, writes some too: take the smallest); the time
// does.
//
//	go test -run '^$' -bench FirstLoadWrites -benchtime 3x ./feeds/postgis
func BenchmarkFirstLoadWrites(b *testing.B) {
	const total, pageSize = 250_000, 5_000
	pool := pgtest.Pool(b)
	ctx := b.Context()
	store := postgis.New(pool)
	layer := generatePolygons(total)
	var wal, logged int64
	var applyTime time.Duration
	for i := 0; i < b.N; i++ {
		feed := feedInfo(fmt.Sprintf("load-%d", i))
		id, err := store.BeginPoll(ctx, feed)
		if err != nil {
			b.Fatal(err)
		}
		for p := 0; p*pageSize < total; p++ {
			if _, err := store.StagePage(ctx, id, p, reader(layer[p*pageSize:min((p+1)*pageSize, total)]...)); err != nil {
				b.Fatal(err)
			}
		}
		var before string
		if err := pool.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&before); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if _, err := store.Apply(ctx, id, feed); err != nil {
			b.Fatal(err)
		}
		applyTime += time.Since(start)
		var w, n int64
		if err := pool.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn)::bigint,
			(SELECT count(*) FROM feature_changes WHERE poll_id = $2)`, before, id).Scan(&w, &n); err != nil {
			b.Fatal(err)
		}
		wal += w
		logged += n
	}
	b.ReportMetric(float64(applyTime.Milliseconds())/float64(b.N), "ms/apply")
	b.ReportMetric(float64(wal)/float64(b.N)/(1<<20), "WAL-MiB/op")
	b.ReportMetric(float64(logged)/float64(b.N), "changes-logged/op")
}
