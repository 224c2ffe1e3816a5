package feeds_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/deadletter"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/migrations/pgtest"
	"github.com/ingestd/ingestd/source"
)

// poolHoggingFetcher takes every connection of pool (none when pool is
// nil), then fails the fetch as an origin that failed after its retries: a
// poll to park while the instance's other polls hold the whole pool.
type poolHoggingFetcher struct {
	pool *pgxpool.Pool
	held chan<- []*pgxpool.Conn
}

func (poolHoggingFetcher) Prepare(_ context.Context, l source.Layer) (source.Layer, []string, error) {
	return l, nil, nil
}

func (f poolHoggingFetcher) Fetch(ctx context.Context, _ source.Layer, _ int, _ source.PageFunc) (source.FetchStats, error) {
	var conns []*pgxpool.Conn
	for f.pool != nil && len(conns) < int(f.pool.Config().MaxConns) {
		c, err := f.pool.Acquire(ctx)
		if err != nil {
			return source.FetchStats{}, err
		}
		conns = append(conns, c)
	}
	f.held <- conns
	return source.FetchStats{}, &breaker.RetryError{Origin: "http://origin.test", Attempts: 3, Outcome: breaker.Failure,
		Err: errors.New("HTTP 503")}
}

// TestReservedPoolParksAndBeatsWhenPollsHoldThePool: with both connections
// of an instance's pool held by its polls, a poll that fails after its
// retries is still ended, parked in the dead-letter queue and its claim
// released, and the instance's heartbeat still beats: all of that goes
// through the reserved pool.
func TestReservedPoolParksAndBeatsWhenPollsHoldThePool(t *testing.T) {
	t.Parallel()
	u := pgtest.URLFor(t, 2+postgis.ReservedConns+1)
	ctx := t.Context()
	newPool := func(conns int) *pgxpool.Pool {
		p, err := pgxpool.New(ctx, pgtest.PoolURL(u, conns))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		return p
	}
	pool, reserved, observer := newPool(2), newPool(postgis.ReservedConns), newPool(1)

	cfg, err := config.Parse("test.yaml", []byte(`
defaults:
  schedule: "0 5 * * *"
jurisdictions:
  - id: county
    timezone: America/New_York
    feeds:
      - {id: parcels, kind: wfs, url: "http://origin.test/wfs", type_name: parcels}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	const beat = time.Minute
	clock := feeds.NewFakeClock(time.Now())
	held := make(chan []*pgxpool.Conn, 1)
	store := postgis.New(pool, postgis.WithOwner("testhost:1"), postgis.WithReservedPool(reserved))
	var sig feeds.Signals
	m := feeds.NewManager(store, poolHoggingFetcher{pool: pool, held: held}, feeds.WithInstanceID("testhost:1"),
		feeds.WithRecovery(store, beat), feeds.WithClock(clock), feeds.WithSignals(&sig),
		feeds.WithDeadLetters(deadletter.NewQueue(reserved), config.BuiltinDeadLetter()),
		feeds.WithLogger(slog.New(slog.NewTextHandler(testWriter{t}, nil))))
	t.Cleanup(m.Stop)
	if err := m.Update(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	conns := await(t, held, "the poll holding the pool")
	t.Cleanup(func() {
		for _, c := range conns {
			c.Release()
		}
	})
	if run := awaitRun(t, &sig); run.Outcome != "polled" {
		t.Fatalf("the catch-up: %+v", run)
	}

	var letters int
	var status, owner string
	if err := observer.QueryRow(ctx, `SELECT (SELECT count(*)::int FROM dead_letter WHERE feed = 'parcels' AND status = 'pending'),
		(SELECT status FROM polls WHERE feed = 'parcels'), coalesce((SELECT poll_owner FROM feed_status WHERE feed = 'parcels'), '')`).
		Scan(&letters, &status, &owner); err != nil {
		t.Fatal(err)
	}
	if letters != 1 || status != "failed" || owner != "" {
		t.Fatalf("with the pool held: %d pending dead letters, poll %s, claim owner %q; want the poll parked (one letter, poll failed) and its claim released",
			letters, status, owner)
	}

	expires := func() time.Time {
		t.Helper()
		var at time.Time
		if err := observer.QueryRow(ctx, `SELECT expires_at FROM instances WHERE owner = 'testhost:1'`).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	before := expires()
	clock.Advance(beat)
	waitFor(t, hangCeiling, "the heartbeat of an instance whose pool is held", func() bool { return expires().After(before) })
}

// flakyLetters is a real dead-letter queue whose first Park fails, as a
// write refused by a database that is busy or away for a moment.
type flakyLetters struct {
	*deadletter.Queue
	parks chan<- error // each Park's outcome
	fails int
}

func (q *flakyLetters) Park(ctx context.Context, p deadletter.Parking) (int64, error) {
	if q.fails > 0 {
		q.fails--
		err := errors.New("the database refused the write")
		q.parks <- err
		return 0, err
	}
	id, err := q.Queue.Park(ctx, p)
	q.parks <- err
	return id, err
}

// TestFailedParkingIsRetried: a dead letter whose write fails is written
// again after the retry wait (on the manager's clock), not dropped: the
// poll ends parked, its staging kept for the replay.
func TestFailedParkingIsRetried(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	cfg, err := config.Parse("test.yaml", []byte(`
defaults:
  schedule: "0 5 * * *"
jurisdictions:
  - id: county
    timezone: America/New_York
    feeds:
      - {id: parcels, kind: wfs, url: "http://origin.test/wfs", type_name: parcels}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	clock := feeds.NewFakeClock(time.Now())
	parks := make(chan error, 4)
	letters := &flakyLetters{Queue: deadletter.NewQueue(pool), parks: parks, fails: 1}
	var sig feeds.Signals
	m := feeds.NewManager(postgis.New(pool), poolHoggingFetcher{held: make(chan []*pgxpool.Conn, 1)}, feeds.WithClock(clock),
		feeds.WithSignals(&sig), feeds.WithDeadLetters(letters, config.BuiltinDeadLetter()),
		feeds.WithLogger(slog.New(slog.NewTextHandler(testWriter{t}, nil))))
	t.Cleanup(m.Stop)
	if err := m.Update(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := await(t, parks, "the first parking"); err == nil {
		t.Fatal("the first parking succeeded; the test's queue fails it")
	}
	// The retry waits for the manager's clock: a second or more.
	clock.Advance(time.Minute)
	if err := await(t, parks, "the parking retried"); err != nil {
		t.Fatalf("the retried parking: %v", err)
	}
	if run := awaitRun(t, &sig); run.Outcome != "polled" {
		t.Fatalf("the catch-up: %+v", run)
	}
	var letterCount int
	if err := pool.QueryRow(ctx, `SELECT count(*)::int FROM dead_letter WHERE feed = 'parcels' AND status = 'pending'`).Scan(&letterCount); err != nil {
		t.Fatal(err)
	}
	if letterCount != 1 {
		t.Fatalf("%d pending dead letters after a failed then retried parking, want 1", letterCount)
	}
}
