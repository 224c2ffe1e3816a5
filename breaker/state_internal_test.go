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

// rollWindow stands for gobreaker's rolling window having rolled past every
// call so far, as it does when the origin is asked less often than once per
// Window: its counts start again from nothing (rollingCounts.grow clears
// them once a whole window has passed). gobreaker reads the real clock for
// its window, so the test replaces it with a fresh one of the same
// generation instead of waiting a Window.
func rollWindow(o *origin) {
	o.gate.Lock()
	o.mu.Lock()
	gen := o.gen
	o.mu.Unlock()
	o.cb = o.newBreaker(gen)
	o.gate.Unlock()
}

// A dead origin polled by its feeds minutes apart fails one logical call per
// window: the run of failures is the wrapper's, so the fifth failure in a
// row opens it whatever the windows between them, and a success anywhere in
// the run (a 404 is the server's answer, so a success) starts it again.
// Calls that decide nothing (cancelled, throttled) neither lengthen nor end
// the run.
func TestRunOfFailuresOutlivesTheWindow(t *testing.T) {
	t.Parallel()
	clock := &stepClock{now: time.Now()}
	p := DefaultPolicy()
	p.MaxAttempts, p.MaxInFlightPerOrigin = 1, 0
	r := NewRegistry(Config{Policy: p, Clock: clock, Jitter: func() float64 { return 0.5 }}, nil)
	const origin = "http://gis.county.example:8093"
	answer := func(res Result) AttemptFunc { return func(context.Context, int) Result { return res } }
	refused := answer(Result{Outcome: Failure, Err: errors.New("dial tcp: connection refused")})
	notFound := answer(Result{Outcome: Success, Err: errors.New("HTTP 404")})
	cancelled := answer(Result{Outcome: Ignored, Err: context.Canceled})
	o := r.origin(origin)

	fail := func(what string) {
		t.Helper()
		clock.advance(6 * time.Minute)
		rollWindow(o)
		if err := r.Do(t.Context(), origin, refused); err == nil {
			t.Fatalf("%s: a refused call returned nil", what)
		} else if _, open := errors.AsType[*OpenError](err); open {
			t.Fatalf("%s: refused by the breaker, want the call made: %v", what, err)
		}
	}
	for i := range 4 {
		fail("failure " + string(rune('1'+i)))
	}
	if s := o.snapshot(); s.State != StateClosed || s.Counts.ConsecutiveFailures != 4 {
		t.Fatalf("after four failures 6 min apart: %s with a run of %d, want closed with 4", s.State, s.Counts.ConsecutiveFailures)
	}
	// A success ends the run; a cancelled call does not touch it.
	if err := r.Do(t.Context(), origin, notFound); err == nil {
		t.Fatal("the 404's error was not returned")
	}
	for i := range 4 {
		fail("after the success, failure " + string(rune('1'+i)))
		if err := r.Do(t.Context(), origin, cancelled); err == nil {
			t.Fatal("a cancelled call returned nil")
		}
	}
	if s := o.snapshot(); s.State != StateClosed || s.Counts.ConsecutiveFailures != 4 {
		t.Fatalf("four failures after the success: %s with a run of %d, want closed with 4", s.State, s.Counts.ConsecutiveFailures)
	}
	fail("the fifth failure in a row")
	s := o.snapshot()
	if s.State != StateOpen || s.OpenUntil.Sub(clock.Now()) != p.OpenBase {
		t.Fatalf("after the fifth failure in a row: %+v, want open for OpenBase", s)
	}
	if _, open := errors.AsType[*OpenError](r.Do(t.Context(), origin, refused)); !open {
		t.Fatal("an open origin admitted a call")
	}
}

// gobreaker drops the outcome of a call that began in an earlier window of
// its own (its generation rolled while the call ran), so a dead origin's
// fifth failure in a row, if its window rolled during it, would not reach
// ReadyToTrip and the origin would stay closed until a sixth. The wrapper
// trips on the run itself. Each call here outlasts the window: gobreaker
// reads the real clock, so the call sleeps past it (the sleep makes the
// window roll; it proves no absence).
func TestRunTripsWhenTheWindowRollsDuringTheCall(t *testing.T) {
	t.Parallel()
	p := DefaultPolicy()
	p.MaxAttempts, p.MaxInFlightPerOrigin, p.FailureRatio = 1, 0, 0
	p.Window = time.Millisecond
	clock := &stepClock{now: time.Now()}
	r := NewRegistry(Config{Policy: p, Clock: clock, Jitter: func() float64 { return 0.5 }}, nil)
	const origin = "http://gis.county.example:8093"
	slowRefusal := func(context.Context, int) Result {
		time.Sleep(3 * p.Window) // past gobreaker's window, on its clock
		return Result{Outcome: Failure, Err: errors.New("dial tcp: connection refused")}
	}
	for i := range p.ConsecutiveFailures {
		if err := r.Do(t.Context(), origin, slowRefusal); err == nil {
			t.Fatal("a refused call returned nil")
		} else if _, open := errors.AsType[*OpenError](err); open {
			t.Fatalf("call %d refused by the breaker before the run was complete", i+1)
		}
	}
	if s := r.origin(origin).snapshot(); s.State != StateOpen {
		t.Fatalf("after %d failures in a row, each across a window: %s with a run of %d, want open",
			p.ConsecutiveFailures, s.State, s.Counts.ConsecutiveFailures)
	}
}
