package deadletter_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ingestd/ingestd/deadletter"
	"github.com/ingestd/ingestd/migrations/pgtest"
)

// recorder is a slog handler that keeps every message, so that a test can
// count the ones it must (or must not) see, and passes them on to the test
// log.
type recorder struct {
	mu   *sync.Mutex
	msgs *[]string
	next slog.Handler
}

func newRecorder(t *testing.T) (*slog.Logger, func(substr string) int) {
	rec := recorder{mu: &sync.Mutex{}, msgs: new([]string), next: logger(t).Handler()}
	count := func(substr string) int {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		n := 0
		for _, m := range *rec.msgs {
			if strings.Contains(m, substr) {
				n++
			}
		}
		return n
	}
	return slog.New(rec), count
}

func (h recorder) Enabled(context.Context, slog.Level) bool { return true }

func (h recorder) Handle(ctx context.Context, r slog.Record) error {
	h.mu.Lock()
	*h.msgs = append(*h.msgs, r.Message)
	h.mu.Unlock()
	return h.next.Handle(ctx, r)
}

func (h recorder) WithAttrs(as []slog.Attr) slog.Handler {
	h.next = h.next.WithAttrs(as)
	return h
}

func (h recorder) WithGroup(name string) slog.Handler {
	h.next = h.next.WithGroup(name)
	return h
}

// A replay that re-parks (or finishes) its letter while another letter of
// the same run is still replaying logs no "lease lost": the hostile run saw
// 54 such false alarms in 4.5 minutes, one per finished letter and renewal
// while a slow letter held the batch.
func TestFinishedLettersLogNoLeaseLost(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.Pool(t)
	q := deadletter.NewQueue(pool)
	due := time.Now().Add(-time.Second)
	for i, f := range []string{"reparked", "done", "slow"} {
		p := parking(f, due)
		p.Origin = []string{"http://a.example:80", "http://b.example:80", "http://c.example:80"}[i]
		if _, err := q.Park(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	log, count := newRecorder(t)
	later := parking("reparked", time.Now().Add(time.Hour))
	finished := func(feed string, st deadletter.Status) func() (bool, error) {
		return func() (bool, error) {
			ls, err := q.List(ctx, deadletter.Filter{Feed: "county/" + feed})
			return err == nil && len(ls) == 1 && ls[0].Status == st, err
		}
	}
	r := deadletter.NewReplayer(pool, func(ctx context.Context, l *deadletter.Letter) error {
		switch l.Feed {
		case "reparked":
			return &deadletter.DeferError{Parking: later}
		case "slow":
			// Holds the run until the two other letters have finished here
			// and its own lease (150 ms) has been renewed twice since: by
			// then a whole renewal period has passed for every letter of
			// the run, finished or not.
			if err := until(ctx, finished("done", deadletter.StatusDone)); err != nil {
				return err
			}
			if err := until(ctx, finished("reparked", deadletter.StatusPending)); err != nil {
				return err
			}
			lease := l.LeaseUntil
			for range 2 {
				if err := until(ctx, func() (bool, error) {
					cur, err := q.Get(ctx, l.ID)
					if err != nil || !cur.LeaseUntil.After(lease) {
						return false, err
					}
					lease = cur.LeaseUntil
					return true, nil
				}); err != nil {
					return err
				}
			}
		}
		return nil
	}, deadletter.WithLease(150*time.Millisecond), deadletter.WithLogger(log))
	claimed, err := r.RunOnce(ctx)
	if err != nil || len(claimed) != 3 {
		t.Fatalf("claimed %d (%v), want 3", len(claimed), err)
	}
	if n := count("lease lost"); n != 0 {
		t.Errorf("%d \"lease lost\" messages for letters this replayer finished itself, want 0", n)
	}
	for f, want := range map[string]deadletter.Status{"reparked": deadletter.StatusPending,
		"done": deadletter.StatusDone, "slow": deadletter.StatusDone} {
		ls, err := q.List(ctx, deadletter.Filter{Feed: "county/" + f})
		if err != nil || len(ls) != 1 || ls[0].Status != want {
			t.Errorf("%s: %+v (%v), want one row %s", f, ls, err, want)
		}
	}
}

// A letter that another instance took while this one replayed it (its lease
// ran out) is reported as lost once, its replay here is stopped, and the
// other instance's claim is left alone.
func TestStolenLetterLogsLeaseLost(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.Pool(t)
	q := deadletter.NewQueue(pool)
	id, err := q.Park(ctx, parking("parcels", time.Now().Add(-time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	log, count := newRecorder(t)
	started := make(chan struct{})
	stopped := make(chan error, 1)
	r := deadletter.NewReplayer(pool, func(ctx context.Context, l *deadletter.Letter) error {
		close(started)
		select {
		case <-ctx.Done():
			stopped <- ctx.Err()
			return ctx.Err()
		case <-time.After(hang): // only a replay never stopped gets here
			stopped <- nil
			return nil
		}
	}, deadletter.WithLease(150*time.Millisecond), deadletter.WithLogger(log))
	result := make(chan error, 1)
	go func() {
		_, err := r.RunOnce(ctx)
		result <- err
	}()
	await(t, "the replay to start", started)
	// What requeueExpired and a claim by another instance do once this
	// lease has run out, in one statement so that a renewal cannot slip in
	// between.
	if _, err := pool.Exec(ctx, `UPDATE dead_letter SET claimed_by = 'instance-b',
		lease_until = now() + interval '1 minute' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	if err := await(t, "RunOnce", result); err != nil {
		t.Fatal(err)
	}
	if err := await(t, "the replay to stop", stopped); !errors.Is(err, context.Canceled) {
		t.Errorf("the replay ended with %v, want it cancelled when the lease was lost", err)
	}
	if n := count("lease lost"); n != 1 {
		t.Errorf("%d \"lease lost\" messages, want 1", n)
	}
	l, err := q.Get(ctx, id)
	if err != nil || l.Status != deadletter.StatusReplaying || l.ClaimedBy != "instance-b" {
		t.Errorf("row %+v (%v), want still replaying by instance-b", l, err)
	}
}

// A slow replay holds neither the letters of other origins nor, once it
// ends, the next letter of its own origin. A letter of another origin that
// becomes due while it runs starts beside it at a following tick (the
// hostile run saw one due 07:02:31 start at 07:04:22, behind its batch's
// slowest), while the slow origin's next letter, due sooner, waits for it.
// How late either starts is a figure of `scripts/bench.sh breaker`
// (BenchmarkDispatchLateness), not a test.
func TestSlowReplayHoldsOnlyItsOrigin(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.Pool(t)
	q := deadletter.NewQueue(pool)
	now := time.Now()
	ids := map[string]int64{}
	for _, p := range []deadletter.Parking{
		parking("slow", now.Add(-2*time.Second)),
		parking("next", now.Add(-time.Second)), // same origin as slow
		func() deadletter.Parking {
			p := parking("other", now.Add(time.Hour)) // due when the test says
			p.Origin = "http://city.example:80"
			return p
		}(),
	} {
		id, err := q.Park(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		ids[p.Feed] = id
	}

	began, release, replay := slowReplay("slow", "next", "other")
	r := deadletter.NewReplayer(pool, replay, deadletter.WithInterval(20*time.Millisecond), deadletter.WithLogger(logger(t)))
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)

	await(t, "the slow letter to start", began["slow"])
	// The other origin's letter becomes due while the slow replay runs.
	if _, err := pool.Exec(ctx, `UPDATE dead_letter SET retry_after = now() WHERE id = $1`, ids["other"]); err != nil {
		t.Fatal(err)
	}
	await(t, "the other origin's letter to start beside the slow replay", began["other"])
	// The claim that took "other" passed over "next", due sooner: its
	// origin was busy.
	select {
	case <-began["next"]:
		t.Error("the slow origin's next letter started while its replay ran: the origin's probe would be raced")
	default:
	}
	close(release)
	await(t, "the slow origin's next letter to start after the slow replay", began["next"])
}

// When a replay ends, the next due letter of its origin is claimed at once,
// not at the next tick: with an hour between ticks, only the end of the
// replay can start it.
func TestEndedReplayClaimsItsOriginsNextAtOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.Pool(t)
	q := deadletter.NewQueue(pool)
	now := time.Now()
	for _, p := range []deadletter.Parking{parking("slow", now.Add(-2*time.Second)), parking("next", now.Add(-time.Second))} {
		if _, err := q.Park(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	began, release, replay := slowReplay("slow", "next")
	r := deadletter.NewReplayer(pool, replay, deadletter.WithInterval(time.Hour), deadletter.WithLogger(logger(t)))
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	await(t, "the slow letter to start (the first tick)", began["slow"])
	close(release)
	await(t, "the next letter to start when the slow replay ended", began["next"])
}

// slowReplay is a replay func for letters of the feeds named: each closes
// its feed's channel in began when its replay begins, and the replay of the
// feed "slow" holds until release is closed (or its context ends).
func slowReplay(feeds ...string) (began map[string]chan struct{}, release chan struct{}, replay func(context.Context, *deadletter.Letter) error) {
	began = map[string]chan struct{}{}
	for _, f := range feeds {
		began[f] = make(chan struct{})
	}
	release = make(chan struct{})
	replay = func(ctx context.Context, l *deadletter.Letter) error {
		close(began[l.Feed])
		if l.Feed == "slow" {
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	return began, release, replay
}
