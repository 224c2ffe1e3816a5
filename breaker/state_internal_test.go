package breaker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"
)

// stepClock is a clock the test moves (breakertest's FakeClock cannot be
// imported here: it imports this package).
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// gobreaker, not a copy of its state machine, decides the verdict: its
// counts see content errors of a healthy server as successes
// (IsSuccessful), its ReadyToTrip trips it, its half-open admits the probe
// after the wrapper's cooldown, and its close is what callers then see.
func TestGobreakerDecidesTheVerdict(t *testing.T) {
	t.Parallel()
	clock := &stepClock{now: time.Now()}
	p := DefaultPolicy()
	p.ConsecutiveFailures, p.MaxAttempts, p.RateLimit, p.Window = 2, 1, 0, time.Hour
	r := NewRegistry(Config{Policy: p, Clock: clock, Jitter: func() float64 { return 0.5 }}, nil)
	const origin = "http://gis.example.org:80"
	answer := func(res Result) AttemptFunc { return func(context.Context, int) Result { return res } }
	notFound := answer(Result{Outcome: Success, Err: errors.New("HTTP 404")})
	failed := answer(Result{Outcome: Failure, Err: errors.New("HTTP 503")})
	ok := answer(Result{Outcome: Success})

	for range 3 {
		if err := r.Do(t.Context(), origin, notFound); err == nil {
			t.Fatal("the 404's error was not returned")
		}
		if err := r.Do(t.Context(), origin, failed); err == nil {
			t.Fatal("a failure returned nil")
		}
	}
	o := r.origin(origin)
	c := o.cb.Counts()
	if c.TotalSuccesses != 3 || c.TotalFailures != 3 || c.ConsecutiveFailures != 1 {
		t.Fatalf("gobreaker counts %+v, want the three 404s as successes between the failures", c)
	}
	err := r.Do(t.Context(), origin, failed) // the second failure in a row
	if _, refused := errors.AsType[*OpenError](r.Do(t.Context(), origin, ok)); !refused || err == nil {
		t.Fatalf("not open after two failures in a row: %v", err)
	}
	open := o.snapshot()
	if open.State != StateOpen || open.OpenUntil.Sub(clock.Now()) != p.OpenBase {
		t.Fatalf("snapshot %+v, want open for OpenBase (jitter pinned)", open)
	}

	clock.advance(p.OpenBase)
	if err := r.Do(t.Context(), origin, ok); err != nil {
		t.Fatalf("probe after the cooldown: %v", err)
	}
	o.gate.Lock()
	st := o.cb.State()
	o.gate.Unlock()
	if st != gobreaker.StateClosed || o.snapshot().State != StateClosed {
		t.Fatalf("gobreaker %s after a successful probe, want closed", st)
	}
}
