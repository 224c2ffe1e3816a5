package postgis_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/internal/namedsql"
	"github.com/ingestd/ingestd/migrations/pgtest"
)

// BenchmarkReadsAtScale builds a database of many small feeds (through the
// store's own polls: each feed first loaded, one in ten polled again with
// a feature modified and one removed, so history and the change feed have
// rows) and then runs every query an operator, `ingestd status` or the
// status page runs, and the history and change-feed functions, on one of
// them. For each it prints the planning and execution time (EXPLAIN
// ANALYZE, after the statement ran seven times in the session, as a pooled
// connection runs it all day: from the sixth run PostgreSQL weighs a
// generic plan, which a partitioned table must plan over every partition),
// the time of those seven runs, the shared buffers it touched, and the
// relation locks the statement's transaction held. It also prints the
// relations per feed. The figures are printed, none asserted.
//
//	INGESTD_READS_FEEDS  feeds (default 5000), 50 per jurisdiction
func BenchmarkReadsAtScale(b *testing.B) {
	nFeeds := 5000
	if s := os.Getenv("INGESTD_READS_FEEDS"); s != "" {
		if _, err := fmt.Sscan(s, &nFeeds); err != nil {
			b.Fatalf("INGESTD_READS_FEEDS: %v", err)
		}
	}
	const workers = 8
	pool, err := pgxpool.New(b.Context(), pgtest.PoolURL(pgtest.URLFor(b, workers+1), workers+1))
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	ctx := b.Context()
	store := postgis.New(pool)

	var before int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_class`).Scan(&before); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	readsLoad(b, ctx, store, nFeeds, workers)
	var after int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_class`).Scan(&after); err != nil {
		b.Fatal(err)
	}
	fmt.Printf("\nreads at scale: %d feeds loaded in %s; relations %d (%.1f per feed)\n",
		nFeeds, time.Since(start).Round(time.Second), after, float64(after-before)/float64(nFeeds))

	status := namedsql.MustLoad(os.DirFS("../../statuspage"), "sql/status.sql")
	own := namedsql.MustLoad(os.DirFS("."), "sql/freshness.sql")
	j, f := "j0", "f0" // polled twice: history and changes
	statements := []struct {
		name, sql string
		args      []any
	}{
		{"ingestd status (Freshness)", own.Get("Freshness"), nil},
		{"status page: feeds", status.Get("feeds"), nil},
		{"status page: metric_feeds", status.Get("metric_feeds"), nil},
		{"status page: feed", status.Get("feed"), []any{j, f}},
		{"status page: polls", status.Get("polls"), []any{j, f, 20}},
		{"status page: thumbnail, prepared", status.Get("thumbnail"), []any{j, f, 100.0, 2000, 100000}},
		{"status page: thumbnail, unnamed", status.Get("thumbnail"), []any{pgx.QueryExecModeExec, j, f, 100.0, 2000, 100000}},
		{"features of one feed, prepared", `SELECT count(*) FROM features WHERE jurisdiction = $1 AND feed = $2`, []any{j, f}},
		{"features of one feed, unnamed", `SELECT count(*) FROM features WHERE jurisdiction = $1 AND feed = $2`, []any{pgx.QueryExecModeExec, j, f}},
		{"ingestd_layer_as_of", `SELECT count(*) FROM ingestd_layer_as_of($1, $2, now())`, []any{j, f}},
		{"ingestd_changes_since", `SELECT count(*) FROM ingestd_changes_since($1, $2, 0)`, []any{j, f}},
		{"ingestd_feature_history", `SELECT count(*) FROM ingestd_feature_history($1, $2, 'parcel.1')`, []any{j, f}},
		{"feature_changes_expanded of one feed", `SELECT count(*) FROM feature_changes_expanded WHERE jurisdiction = $1 AND feed = $2`, []any{j, f}},
		{"features, no feed named", `SELECT count(*) FROM features`, nil},
	}
	fmt.Printf("%-38s %10s %10s %9s %7s %10s  %s\n", "statement", "plan_ms", "exec_ms", "buffers", "locks", "7runs_ms", "note")
	for _, s := range statements {
		r := readsExplain(ctx, pool, s.sql, s.args)
		fmt.Printf("%-38s %10.2f %10.2f %9d %7d %10.1f  %s\n", s.name, r.plan, r.exec, r.buffers, r.locks, r.runs, r.note)
	}
	b.ReportMetric(float64(after-before)/float64(nFeeds), "relations/feed")

	readsDropAll(b, ctx, pool)
}

// readsLoad polls nFeeds feeds of 8 polygons through workers goroutines,
// 50 feeds to a jurisdiction, every tenth twice (one feature modified, one
// removed) so that history and changes have rows.
func readsLoad(b *testing.B, ctx context.Context, store *postgis.Store, nFeeds, workers int) {
	info := func(i int) feeds.FeedInfo {
		f := feedInfo(fmt.Sprintf("f%d", i))
		f.Jurisdiction = fmt.Sprintf("j%d", i/50)
		f.Origin = fmt.Sprintf("https://gis%d.example.org:443", i%1000)
		return f
	}
	layer := generatePolygons(8)
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				err := readsPoll(ctx, store, info(i), layer)
				if err == nil && i%10 == 0 {
					// A second snapshot: one feature modified, one removed.
					next := append(layer[:0:0], layer[1:]...)
					next[0].Properties = props("pin", "changed")
					err = readsPoll(ctx, store, info(i), next)
				}
				if err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range nFeeds {
		work <- i
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
}

// readsDropAll drops the feeds' tables and layers, a jurisdiction at a
// time: the database's drop at cleanup would take longer than its timeout
// with every feed's tables in it. INGESTD_TEST_KEEP_DB=1 keeps the
// database whole, to look at.
func readsDropAll(b *testing.B, ctx context.Context, pool *pgxpool.Pool) {
	if os.Getenv("INGESTD_TEST_KEEP_DB") == "1" {
		return
	}
	rows, _ := pool.Query(ctx, `SELECT DISTINCT ingestd_jurisdiction_partition(jurisdiction), (ingestd_feed_layer(jurisdiction, feed))[1]
		FROM feed_status`)
	drops, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([2]string, error) {
		var d [2]string
		err := r.Scan(&d[0], &d[1])
		return d, err
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, d := range drops {
		if _, err := pool.Exec(ctx, `DROP TABLE IF EXISTS `+pgx.Identifier{d[0]}.Sanitize()+`; DROP SCHEMA IF EXISTS `+pgx.Identifier{d[1]}.Sanitize()+` CASCADE`); err != nil {
			b.Fatal(err)
		}
	}
}

// readsPoll runs one whole successful poll of feed with one page.
func readsPoll(ctx context.Context, store *postgis.Store, feed feeds.FeedInfo, page []ft.Feature) error {
	id, err := store.BeginPoll(ctx, feed)
	if err != nil {
		return err
	}
	if _, err := store.StagePage(ctx, id, 0, reader(page...)); err != nil {
		return err
	}
	_, err = store.Apply(ctx, id, feed)
	return err
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// readsResult is one statement's figures.
type readsResult struct {
	plan, exec float64 // ms, as EXPLAIN ANALYZE reports them (plan: the statement's own)
	buffers    int64   // shared buffers hit and read
	locks      int     // relation locks held by the statement's transaction
	runs       float64 // ms, the seven runs as a client runs them (prepared, then perhaps a generic plan)
	note       string  // the error, if it failed
}

// readsExplain runs sql on one connection seven times (a pooled connection
// prepares it once and then may use a generic plan; args may start with
// pgx.QueryExecModeExec, an unnamed statement planned at each run), then once more in a
// transaction that counts the relation locks it holds, then EXPLAIN
// (ANALYZE, BUFFERS) of it.
func readsExplain(ctx context.Context, pool *pgxpool.Pool, sql string, args []any) readsResult {
	var r readsResult
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return readsResult{note: err.Error()}
	}
	defer conn.Release()
	start := time.Now()
	for range 7 {
		rows, _ := conn.Query(ctx, sql, args...)
		rows.Close()
		if err := rows.Err(); err != nil {
			return readsResult{note: firstLine(err.Error())}
		}
	}
	r.runs = float64(time.Since(start).Microseconds()) / 1000
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, sql, args...)
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'relation'`).Scan(&r.locks)
	})
	if err != nil {
		return readsResult{note: firstLine(err.Error())}
	}
	// EXPLAIN takes no parameters of a prepared statement: the arguments
	// are written in as literals, which is how a custom plan sees them.
	lit := sql
	if len(args) > 0 && args[0] == pgx.QueryExecModeExec {
		args = args[1:]
	}
	for i := len(args); i >= 1; i-- {
		var v string
		switch a := args[i-1].(type) {
		case string:
			v = "'" + strings.ReplaceAll(a, "'", "''") + "'"
		default:
			v = fmt.Sprint(a)
		}
		lit = strings.ReplaceAll(lit, fmt.Sprintf("$%d", i), v)
	}
	var plan []byte
	if err := conn.QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+lit).Scan(&plan); err != nil {
		r.note = firstLine(err.Error())
		return r
	}
	var out []struct {
		Plan struct {
			SharedHit  int64 `json:"Shared Hit Blocks"`
			SharedRead int64 `json:"Shared Read Blocks"`
		} `json:"Plan"`
		Planning struct {
			SharedHit  int64 `json:"Shared Hit Blocks"`
			SharedRead int64 `json:"Shared Read Blocks"`
		} `json:"Planning"`
		PlanningTime  float64 `json:"Planning Time"`
		ExecutionTime float64 `json:"Execution Time"`
	}
	if err := json.Unmarshal(plan, &out); err != nil || len(out) != 1 {
		r.note = fmt.Sprintf("explain: %v", err)
		return r
	}
	o := out[0]
	r.plan, r.exec = o.PlanningTime, o.ExecutionTime
	r.buffers = o.Plan.SharedHit + o.Plan.SharedRead + o.Planning.SharedHit + o.Planning.SharedRead
	return r
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
