package postgis_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/migrations/pgtest"
)

// BenchmarkApplyOnePercentChanged times Apply alone (staging is outside the
// timer) of a 200,000-feature snapshot in which 1% of the features changed
// since the last one, and reports the tuples written to features and
// feature_changes: they must track the changed rows (2,000), not the layer.
//
//	go test -run '^$' -bench ApplyOnePercentChanged -benchtime 3x ./feeds/postgis
//
// ns/op (and ms/apply) is the time of Apply alone. Its setup loads the layer
// once (about 20 s on two cores). backend-cpu-ms/apply is the CPU time the
// database backend spent on Apply (from /proc, when the server runs on this
// machine; parallel workers' not counted): on a shared machine the wall
// time grows with everyone else's load, the backend's own CPU much less.
// Each apply is logged apart (-v): the first one reshapes the layer.
// INGESTD_BENCH_EXPLAIN_MS=250 logs the plan of each statement slower than
// that (explainPlans).
func BenchmarkApplyOnePercentChanged(b *testing.B) {
	const total, pageSize, every = 200_000, 5_000, 100
	cfg, err := pgxpool.ParseConfig(pgtest.URL(b))
	if err != nil {
		b.Fatal(err)
	}
	// One connection: the statistics read after each apply are those of the
	// backend that applied, flushed on demand.
	cfg.MaxConns = 1
	explainPlans(b, cfg)
	pool, err := pgxpool.NewWithConfig(b.Context(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	ctx := b.Context()
	store := postgis.New(pool)
	feed := feedInfo("parcels")
	layer := generatePolygons(total)

	stage := func(fs []ft.Feature) int64 {
		id, err := store.BeginPoll(ctx, feed)
		if err != nil {
			b.Fatal(err)
		}
		for p := 0; p*pageSize < len(fs); p++ {
			if _, err := store.StagePage(ctx, id, p, reader(fs[p*pageSize:min((p+1)*pageSize, len(fs))]...)); err != nil {
				b.Fatal(err)
			}
		}
		return id
	}
	tuples := func() (features, changes int64) { return tupleCounts(b, pool, feed) }
	clock := newBackendClock(b, pool)
	if _, err := store.Apply(ctx, stage(layer), feed); err != nil {
		b.Fatal(err)
	}
	// Statistics as the daemon's autovacuum would have them by the next
	// poll; without them the first diff is planned blind.
	var table string
	if err := pool.QueryRow(ctx, `SELECT ingestd_feed_view($1, $2)`, feed.Jurisdiction, feed.Feed).Scan(&table); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE `+table); err != nil {
		b.Fatal(err)
	}

	var written, logged, modified int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		snap := make([]ft.Feature, total)
		copy(snap, layer)
		// The same 1% each time, with a new value: exactly total/every
		// modified features per apply.
		for k := 0; k < total; k += every {
			snap[k].Properties = props("pin", k, "owner", "New Owner", "rev", i)
		}
		id := stage(snap)
		f0, c0 := tuples()
		var res feeds.ApplyResult
		// Logged apart: the first brings a new property (rev), a new
		// column, and rewrites the layer whole (OneCopyReshape).
		clock.measure(b, i+1, func() {
			if res, err = store.Apply(ctx, id, feed); err != nil {
				b.Fatal(err)
			}
		})
		f1, c1 := tuples()
		written += f1 - f0
		logged += c1 - c0
		modified += int64(res.Modified)
		b.StartTimer()
	}
	b.ReportMetric(float64(written)/float64(b.N), "rows-written/op")
	b.ReportMetric(float64(logged)/float64(b.N), "changes-logged/op")
	b.ReportMetric(float64(modified)/float64(b.N), "modified/op")
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/apply")
	clock.report(b)
}

// backendClock keeps the CPU time the database backend of a pool's one
// connection spends on each apply.
type backendClock struct {
	pid   int
	total time.Duration
	known bool
}

func newBackendClock(b *testing.B, pool *pgxpool.Pool) *backendClock {
	c := &backendClock{known: true}
	if err := pool.QueryRow(b.Context(), `SELECT pg_backend_pid()`).Scan(&c.pid); err != nil {
		b.Fatal(err)
	}
	return c
}

// measure runs apply, the benchmark's timer on around it alone, and logs
// its wall time and the backend's CPU time as apply n.
func (c *backendClock) measure(b *testing.B, n int, apply func()) {
	cpu0, ok0 := processCPU(c.pid)
	start := time.Now()
	b.StartTimer()
	apply()
	b.StopTimer()
	wall := time.Since(start)
	cpu1, ok1 := processCPU(c.pid)
	c.known = c.known && ok0 && ok1
	c.total += cpu1 - cpu0
	b.Logf("apply %d: %d ms, backend CPU %d ms", n, wall.Milliseconds(), (cpu1 - cpu0).Milliseconds())
}

// report reports the backend's CPU time per apply, if it could be read.
func (c *backendClock) report(b *testing.B) {
	if c.known {
		b.ReportMetric(float64(c.total.Milliseconds())/float64(b.N), "backend-cpu-ms/apply")
	}
}

// explainPlans, when INGESTD_BENCH_EXPLAIN_MS is set, has PostgreSQL's
// auto_explain send the benchmark the plan (EXPLAIN ANALYZE, BUFFERS) of
// every statement that ran longer than that many milliseconds, and logs
// them: where an apply's time goes, in the run that timed it.
func explainPlans(b *testing.B, cfg *pgxpool.Config) {
	ms := os.Getenv("INGESTD_BENCH_EXPLAIN_MS")
	if ms == "" {
		return
	}
	if _, err := strconv.Atoi(ms); err != nil {
		b.Fatalf("INGESTD_BENCH_EXPLAIN_MS: %v", err)
	}
	cfg.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		if strings.HasPrefix(n.Message, "duration:") {
			b.Log(n.Message)
		}
	}
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, "LOAD 'auto_explain'; SET auto_explain.log_min_duration = "+ms+
			"; SET auto_explain.log_analyze = on; SET auto_explain.log_buffers = on"+
			"; SET auto_explain.log_nested_statements = on; SET client_min_messages = log")
		return err
	}
}

// processCPU is the user and system CPU time process pid has used, from
// /proc/<pid>/stat (in clock ticks of 1/100 s, Linux's USER_HZ); ok is
// false when it cannot be read (a server on another machine).
func processCPU(pid int) (cpu time.Duration, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The fields after the command (in parentheses, which may hold
	// spaces): state is the first, utime and stime the 12th and 13th.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, true
}

// tupleCounts is how many tuples the feed's layer table and feature_changes have
// had written, as the backend of pool's one connection counts them.
func tupleCounts(b *testing.B, pool *pgxpool.Pool, feed feeds.FeedInfo) (features, changes int64) {
	ctx := b.Context()
	for _, q := range []string{`SELECT pg_stat_force_next_flush()`, `SELECT pg_stat_clear_snapshot()`} {
		if _, err := pool.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	if err := pool.QueryRow(ctx, `
		SELECT sum(n_tup_ins + n_tup_upd + n_tup_del) FILTER (WHERE relid = to_regclass(ingestd_feed_view($1, $2))),
		       sum(n_tup_ins) FILTER (WHERE relname = 'feature_changes')
		FROM pg_stat_user_tables`, feed.Jurisdiction, feed.Feed).Scan(&features, &changes); err != nil {
		b.Fatal(err)
	}
	return features, changes
}
