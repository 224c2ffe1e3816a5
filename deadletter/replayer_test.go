package deadletter_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/deadletter"
	"github.com/ingestd/ingestd/internal/testwait"
	"github.com/ingestd/ingestd/migrations/pgtest"
)

// TestMain runs up to 8 tests at once: each waits on a database of its own
// and on the replayer's timers far more than it computes (see pgtest.Main).
func TestMain(m *testing.M) {
	os.Exit(pgtest.Main(m, 8))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func logger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// hang bounds every wait of these tests for an event: reaching it means a
// hang, not a slow machine.
const hang = testwait.Hang

// await returns the next value of ch, or fails t after hang.
func await[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	return testwait.Await(t, what, ch)
}

// until polls cond (state in the database, which announces no change) until
// it holds, cond fails, ctx ends or hang passes; it may run on any
// goroutine.
func until(ctx context.Context, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, hang)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond) // paces the polls; nothing is timed
	defer tick.Stop()
	for {
		if ok, err := cond(); ok || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func parking(feed string, due time.Time) deadletter.Parking {
	return deadletter.Parking{Jurisdiction: "county", Feed: feed, URL: "http://county.example/wfs?startIndex=20",
		Origin: "http://county.example:80", Reason: deadletter.ReasonCircuitOpen, RetryAfter: due,
		Checkpoint: deadletter.Checkpoint{PollID: 7, Page: 2}, Err: errors.New("breaker: open")}
}

func TestParkKeepsOneOpenRowPerFeed(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	q := deadletter.NewQueue(pgtest.Pool(t))
	id1, err := q.Park(ctx, parking("parcels", time.Now().Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	p := parking("parcels", time.Now().Add(2*time.Hour))
	p.Checkpoint.Page = 3
	id2, err := q.Park(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if id1 != id2 {
		t.Fatalf("parking a feed twice made rows %d and %d, want one row updated", id1, id2)
	}
	l, err := q.Open(ctx, "county", "parcels")
	if err != nil || l == nil {
		t.Fatalf("Open: %v, %v", l, err)
	}
	if l.Checkpoint.Page != 3 || l.Status != deadletter.StatusPending {
		t.Errorf("open row %+v, want pending at page 3", l)
	}
	if l, err := q.Open(ctx, "county", "roads"); err != nil || l != nil {
		t.Errorf("Open of a feed never parked: %v, %v; want nil, nil", l, err)
	}
}

// A deferral re-parks with one more attempt; the max_attempts-th deferral
// abandons the row; any other error abandons at once; ErrNotNow releases.
func TestReplayOutcomes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.Pool(t)
	q := deadletter.NewQueue(pool)
	var mu sync.Mutex
	results := map[string]error{}
	var sawLast []bool
	replay := func(ctx context.Context, l *deadletter.Letter) error {
		mu.Lock()
		defer mu.Unlock()
		sawLast = append(sawLast, l.LastAttempt)
		return results[l.Feed]
	}
	r := deadletter.NewReplayer(pool, replay, deadletter.WithMaxAttempts(2), deadletter.WithLogger(logger(t)))
	now := time.Now().Add(-time.Second)
	for _, f := range []string{"deferred", "broken", "busy", "fine"} {
		if _, err := q.Park(ctx, parking(f, now)); err != nil {
			t.Fatal(err)
		}
	}
	again := parking("deferred", now) // due again at once
	again.Reason, again.Checkpoint.Page = deadletter.ReasonFailed, 4
	results["deferred"] = &deadletter.DeferError{Parking: again}
	results["broken"] = errors.New("404")
	results["busy"] = fmt.Errorf("%w: polling", deadletter.ErrNotNow)

	if claimed, err := r.RunOnce(ctx); err != nil || len(claimed) != 4 {
		t.Fatalf("first tick claimed %d (err %v), want 4", len(claimed), err)
	}
	want := map[string]struct {
		status   deadletter.Status
		attempts int
	}{
		"deferred": {deadletter.StatusPending, 1},
		"broken":   {deadletter.StatusAbandoned, 1},
		"busy":     {deadletter.StatusPending, 0},
		"fine":     {deadletter.StatusDone, 0},
	}
	for f, w := range want {
		ls, err := q.List(ctx, deadletter.Filter{Feed: "county/" + f})
		if err != nil || len(ls) != 1 {
			t.Fatalf("%s: %d rows, %v", f, len(ls), err)
		}
		if l := ls[0]; l.Status != w.status || l.Attempts != w.attempts {
			t.Errorf("%s: %s with %d attempts, want %s with %d", f, l.Status, l.Attempts, w.status, w.attempts)
		}
	}
	if l, _ := q.Open(ctx, "county", "deferred"); l == nil || l.Checkpoint.Page != 4 || l.Reason != deadletter.ReasonFailed {
		t.Errorf("re-parked row %+v, want the deferral's checkpoint and reason", l)
	}

	results["busy"] = nil
	if _, err := r.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := q.List(ctx, deadletter.Filter{Feed: "county/deferred"})
	if err != nil || l[0].Status != deadletter.StatusAbandoned || l[0].Attempts != 2 || l[0].FinishedAt.IsZero() {
		t.Errorf("after the second deferral: %+v (%v), want abandoned after 2 attempts", l[0], err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := len(sawLast); n != 6 || !sawLast[4] && !sawLast[5] {
		t.Errorf("replays saw LastAttempt %v, want the second replay of the deferred row marked last", sawLast)
	}
}

// A row whose instance died mid-replay (its lease ran out) is taken over.
func TestExpiredLeaseIsReclaimed(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.Pool(t)
	q := deadletter.NewQueue(pool)
	id, err := q.Park(ctx, parking("parcels", time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE dead_letter SET status = 'replaying', claimed_by = 'dead:1:x',
		lease_until = now() + interval '1 hour' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	var replays atomic.Int32
	r := deadletter.NewReplayer(pool, func(context.Context, *deadletter.Letter) error {
		replays.Add(1)
		return nil
	}, deadletter.WithLogger(logger(t)))
	if claimed, err := r.RunOnce(ctx); err != nil || len(claimed) != 0 {
		t.Fatalf("claimed %d rows under a live lease (err %v), want 0", len(claimed), err)
	}
	// The lease runs out: the database's clock cannot be moved, so its end is.
	if _, err := pool.Exec(ctx, `UPDATE dead_letter SET lease_until = now() - interval '1 millisecond' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	if claimed, err := r.RunOnce(ctx); err != nil || len(claimed) != 1 {
		t.Fatalf("claimed %d rows after the lease expired (err %v), want 1", len(claimed), err)
	}
	l, err := q.Get(ctx, id)
	if err != nil || l.Status != deadletter.StatusDone || replays.Load() != 1 || l.ClaimedBy != r.ID() {
		t.Errorf("row %+v (%v), %d replays; want done by %s after one replay", l, err, replays.Load(), r.ID())
	}
}

// Two replayers with their own pools (two instances) working through one due
// set never replay a row twice, and replay every row.
func TestTwoReplayersNeverReplayARowTwice(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	u := pgtest.URLFor(t, 2*pgtest.PoolConns)
	pools := make([]*pgxpool.Pool, 2)
	for i := range pools {
		p, err := pgxpool.New(ctx, pgtest.PoolURL(u, pgtest.PoolConns))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		pools[i] = p
	}
	q := deadletter.NewQueue(pools[0])
	const rows = 60
	for i := range rows {
		p := parking(fmt.Sprintf("feed%02d", i), time.Now().Add(-time.Second))
		p.Origin = fmt.Sprintf("http://county%d.example:80", i%7)
		if _, err := q.Park(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	replays := map[int64][]string{}
	var wg sync.WaitGroup
	for i, pool := range pools {
		var r *deadletter.Replayer
		r = deadletter.NewReplayer(pool, func(ctx context.Context, l *deadletter.Letter) error {
			mu.Lock()
			replays[l.ID] = append(replays[l.ID], r.ID())
			mu.Unlock()
			return nil
		}, deadletter.WithBatchSize(7), deadletter.WithInstanceID(fmt.Sprintf("instance-%d", i)))
		wg.Go(func() {
			for {
				claimed, err := r.RunOnce(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if len(claimed) == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	by := map[string]int{}
	for id, rs := range replays {
		if len(rs) != 1 {
			t.Errorf("row %d replayed %d times (by %v), want once", id, len(rs), rs)
		}
		by[rs[0]]++
	}
	if len(replays) != rows {
		t.Errorf("%d rows replayed, want %d", len(replays), rows)
	}
	t.Logf("rows replayed per instance: %v", by)
	done, err := q.List(ctx, deadletter.Filter{Status: deadletter.StatusDone})
	if err != nil || len(done) != rows {
		t.Errorf("%d rows done (%v), want %d", len(done), err, rows)
	}
}

func TestPurgeOnlyFinishedRows(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.Pool(t)
	q := deadletter.NewQueue(pool)
	for _, f := range []string{"old", "recent", "open"} {
		if _, err := q.Park(ctx, parking(f, time.Now())); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE dead_letter SET status = 'done', finished_at = now() - interval '40 days' WHERE feed = 'old';
		UPDATE dead_letter SET status = 'done', finished_at = now() WHERE feed = 'recent'`); err != nil {
		t.Fatal(err)
	}
	n, err := q.Purge(ctx, []deadletter.Status{deadletter.StatusDone}, 30*24*time.Hour)
	if err != nil || n != 1 {
		t.Fatalf("purged %d (%v), want 1", n, err)
	}
	if _, err := q.Purge(ctx, []deadletter.Status{deadletter.StatusPending}, 0); err == nil {
		t.Error("purging pending rows was allowed")
	}
}

// Stop ends the loop and releases what it was replaying.
func TestStartStop(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.Pool(t)
	q := deadletter.NewQueue(pool)
	id, err := q.Park(ctx, parking("parcels", time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	r := deadletter.NewReplayer(pool, func(ctx context.Context, l *deadletter.Letter) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	}, deadletter.WithInterval(10*time.Millisecond), deadletter.WithLogger(logger(t)))
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	<-started
	r.Stop()
	l, err := q.Get(ctx, id)
	if err != nil || l.Status != deadletter.StatusPending || l.Attempts != 0 {
		t.Errorf("after Stop: %+v (%v), want pending with no attempt counted", l, err)
	}
}

// ReplayNow revives an abandoned row the operator names by ID, and only
// such a row: one it selects by feed stays abandoned.
func TestReplayNowRevivesOnlyNamedAbandonedRows(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.Pool(t)
	q := deadletter.NewQueue(pool)
	named, err := q.Park(ctx, parking("parcels", time.Now().Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	other, err := q.Park(ctx, parking("roads", time.Now().Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE dead_letter SET status = 'abandoned', attempts = 10, finished_at = now()
		WHERE id = ANY($1)`, []int64{named, other}); err != nil {
		t.Fatal(err)
	}
	var replays atomic.Int32
	r := deadletter.NewReplayer(pool, func(context.Context, *deadletter.Letter) error {
		replays.Add(1)
		return nil
	}, deadletter.WithLogger(logger(t)), deadletter.WithInstanceID("operator:1"))

	if claimed, err := r.ReplayNow(ctx, deadletter.Filter{Status: deadletter.StatusPending, Feed: "county/roads"}); err != nil || len(claimed) != 0 {
		t.Fatalf("ReplayNow by feed claimed %d rows (err %v), want 0: an abandoned row is revived only by ID", len(claimed), err)
	}
	claimed, err := r.ReplayNow(ctx, deadletter.Filter{Status: deadletter.StatusPending, IDs: []int64{named}})
	if err != nil || len(claimed) != 1 || replays.Load() != 1 {
		t.Fatalf("ReplayNow by ID claimed %d rows, %d replays (err %v), want 1 and 1", len(claimed), replays.Load(), err)
	}
	if l, err := q.Get(ctx, named); err != nil || l.Status != deadletter.StatusDone || l.ClaimedBy != "operator:1" {
		t.Errorf("named row %+v (%v), want done by operator:1", l, err)
	}
	if l, err := q.Get(ctx, other); err != nil || l.Status != deadletter.StatusAbandoned {
		t.Errorf("row not named %+v (%v), want still abandoned", l, err)
	}
	if _, err := r.ReplayNow(ctx, deadletter.Filter{IDs: []int64{named + other + 100}}); !errors.Is(err, deadletter.ErrNotFound) {
		t.Errorf("ReplayNow of an unknown ID: %v, want ErrNotFound", err)
	}
}
