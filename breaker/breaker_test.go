package breaker_test

import (
	. "github.com/ingestd/ingestd/breaker"
	. "github.com/ingestd/ingestd/breaker/internal/breakertest"

	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestOpensOnSustainedFlap(t *testing.T) {
	t.Parallel()
	p := FastPolicy()
	p.ConsecutiveFailures = 0 // the ratio alone must catch a flap
	f := Setup(t, p)
	up := NewUpstream(t, 0)
	// Two of every three requests fail: never many in a row, but a sustained 67%.
	up.Set(func(n int64, w http.ResponseWriter, _ *http.Request) {
		if n%3 == 1 {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	for i := range p.MinCalls {
		if _, ok := AsOpen(f.Do(t.Context(), t, up.URL())); ok {
			t.Fatalf("refused at call %d, before MinCalls", i+1)
		}
	}
	if _, ok := AsOpen(f.Do(t.Context(), t, up.URL())); !ok {
		t.Fatalf("not open after %d calls at 67%% failures; transitions %v", p.MinCalls, f.Transitions())
	}
	if got := up.Hits.Load(); got != int64(p.MinCalls) {
		t.Errorf("server saw %d requests, want %d", got, p.MinCalls)
	}
	ev := f.Events()[0]
	if ev.From != StateClosed || ev.To != StateOpen || ev.Counts.Failures != 4 || ev.Counts.Successes != 2 || ev.RetryAfter <= 0 {
		t.Errorf("trip event = %+v", ev)
	}
}

func TestStaysClosedBelowThresholds(t *testing.T) {
	t.Parallel()
	t.Run("below failure ratio", func(t *testing.T) {
		t.Parallel()
		f := Setup(t, FastPolicy())
		up := NewUpstream(t, 0)
		// One in three fails: 33% < 50%, and never three in a row.
		up.Set(func(n int64, w http.ResponseWriter, _ *http.Request) {
			if n%3 == 0 {
				w.WriteHeader(http.StatusBadGateway)
				return
			}
			w.WriteHeader(http.StatusOK)
		})
		for range 30 {
			if _, ok := AsOpen(f.Do(t.Context(), t, up.URL())); ok {
				t.Fatal("refused below the failure ratio")
			}
		}
		if tr := f.Transitions(); len(tr) != 0 {
			t.Errorf("transitions %v, want none", tr)
		}
	})
	t.Run("below min calls", func(t *testing.T) {
		t.Parallel()
		p := FastPolicy()
		p.ConsecutiveFailures = 0
		f := Setup(t, p)
		up := NewUpstream(t, http.StatusServiceUnavailable)
		for range p.MinCalls - 1 {
			if _, ok := AsOpen(f.Do(t.Context(), t, up.URL())); ok {
				t.Fatal("refused with fewer than MinCalls calls")
			}
		}
		if s := f.State(t, up.Origin(t)); s.State != StateClosed || s.Counts.Failures != uint32(p.MinCalls-1) {
			t.Errorf("state %+v, want closed with %d failures", s, p.MinCalls-1)
		}
	})
	t.Run("below consecutive failures", func(t *testing.T) {
		t.Parallel()
		p := FastPolicy()
		p.FailureRatio = 0
		f := Setup(t, p)
		up := NewUpstream(t, 0)
		up.Set(func(n int64, w http.ResponseWriter, _ *http.Request) {
			if n%3 == 0 { // two failures, then a success resets the run
				w.WriteHeader(http.StatusOK)
				return
			}
			w.WriteHeader(http.StatusInternalServerError)
		})
		for range 30 {
			if _, ok := AsOpen(f.Do(t.Context(), t, up.URL())); ok {
				t.Fatal("refused below ConsecutiveFailures")
			}
		}
	})
}

func TestOpenMakesNoNetworkCalls(t *testing.T) {
	t.Parallel()
	// The fixture's clock stands still: the cooldown lasts however long the
	// machine takes, and every refusal names the whole of it.
	f := Setup(t, FastPolicy())
	up := NewUpstream(t, http.StatusServiceUnavailable)
	oe := f.TripOpen(t, up.URL())
	before := up.Hits.Load()
	for range 50 {
		oe2, ok := AsOpen(f.Do(t.Context(), t, up.URL()))
		if !ok {
			t.Fatal("open breaker admitted a call")
		}
		if oe2.RetryAfter <= 0 || oe2.RetryAfter != oe.RetryAfter {
			t.Fatalf("RetryAfter %s, want the whole cooldown %s", oe2.RetryAfter, oe.RetryAfter)
		}
		if oe2.Origin != up.Origin(t) {
			t.Fatalf("OpenError.Origin = %q", oe2.Origin)
		}
	}
	if after := up.Hits.Load(); after != before {
		t.Errorf("server saw %d requests while open", after-before)
	}
	s := f.State(t, up.Origin(t))
	if s.State != StateOpen || !s.OpenUntil.Equal(f.Clock.Now().Add(oe.RetryAfter)) || s.ConsecutiveOpens != 1 {
		t.Errorf("snapshot %+v", s)
	}
	// One nanosecond before the end of the cooldown it still refuses.
	f.Clock.Advance(oe.RetryAfter - time.Nanosecond)
	if oe2, ok := AsOpen(f.Do(t.Context(), t, up.URL())); !ok || oe2.RetryAfter != time.Nanosecond {
		t.Errorf("a nanosecond before the cooldown ends: %v, want refused for 1ns", oe2)
	}
	if after := up.Hits.Load(); after != before {
		t.Errorf("server saw %d requests while open", after-before)
	}
}

func TestHalfOpen(t *testing.T) {
	t.Parallel()
	t.Run("clean probe closes with a cleared window", func(t *testing.T) {
		t.Parallel()
		clock := NewFakeClock()
		f := Setup(t, FastPolicy(), RegistryClock(clock))
		up := NewUpstream(t, http.StatusServiceUnavailable)
		oe := f.TripOpen(t, up.URL())
		up.SetStatus(http.StatusOK)
		clock.Advance(oe.RetryAfter)
		before := up.Hits.Load()
		if err := f.Do(t.Context(), t, up.URL()); err != nil {
			t.Fatalf("probe: %v", err)
		}
		if up.Hits.Load() != before+1 {
			t.Fatal("the probe did not reach the server")
		}
		s := f.State(t, up.Origin(t))
		if s.State != StateClosed || s.Counts != (Counts{}) {
			t.Errorf("after a clean probe: %+v, want closed with zero counts", s)
		}
		want := []string{"closed>open", "open>half-open", "half-open>closed"}
		if got := f.Transitions(); !slices.Equal(got, want) {
			t.Errorf("transitions %v, want %v", got, want)
		}
	})
	t.Run("failed probe re-opens at once", func(t *testing.T) {
		t.Parallel()
		clock := NewFakeClock()
		f := Setup(t, FastPolicy(), RegistryClock(clock))
		up := NewUpstream(t, http.StatusServiceUnavailable)
		oe := f.TripOpen(t, up.URL())
		clock.Advance(oe.RetryAfter)
		before := up.Hits.Load()
		err := f.Do(t.Context(), t, up.URL())
		if _, ok := AsOpen(err); ok {
			t.Fatal("the probe was refused")
		}
		if _, ok := AsOpen(f.Do(t.Context(), t, up.URL())); !ok {
			t.Fatal("the call after a failed probe was admitted")
		}
		if up.Hits.Load() != before+1 {
			t.Errorf("server saw %d requests, want only the probe", up.Hits.Load()-before)
		}
		want := []string{"closed>open", "open>half-open", "half-open>open"}
		if got := f.Transitions(); !slices.Equal(got, want) {
			t.Errorf("transitions %v, want %v", got, want)
		}
	})
	t.Run("admits only the cap", func(t *testing.T) {
		t.Parallel()
		p := FastPolicy()
		p.HalfOpenMaxCalls = 2
		clock := NewFakeClock()
		f := Setup(t, p, RegistryClock(clock))
		up := NewUpstream(t, http.StatusServiceUnavailable)
		oe := f.TripOpen(t, up.URL())
		release := make(chan struct{})
		up.Set(func(_ int64, w http.ResponseWriter, _ *http.Request) {
			<-release
			w.WriteHeader(http.StatusOK)
		})
		clock.Advance(oe.RetryAfter)
		before := up.Hits.Load()
		const callers = 8
		var refused atomic.Int64
		refusals := make(chan struct{}, callers)
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				if _, ok := AsOpen(f.Do(t.Context(), t, up.URL())); ok {
					refused.Add(1)
					refusals <- struct{}{}
				}
			})
		}
		// The two probes Hang at the server until every other caller has
		// been refused: no probe ends early enough to let one more in.
		for range callers - 2 {
			Await(t, "a refusal beside the probes", refusals)
		}
		close(release)
		wg.Wait()
		if got := up.Hits.Load() - before; got != 2 {
			t.Errorf("%d probes reached the server, want 2", got)
		}
		if refused.Load() != callers-2 {
			t.Errorf("%d callers refused, want %d", refused.Load(), callers-2)
		}
		if s := f.State(t, up.Origin(t)); s.State != StateClosed {
			t.Errorf("state %s after two clean probes, want closed", s.State)
		}
	})
	t.Run("cancelled probe frees its slot", func(t *testing.T) {
		t.Parallel()
		clock := NewFakeClock()
		f := Setup(t, FastPolicy(), RegistryClock(clock))
		up := NewUpstream(t, http.StatusServiceUnavailable)
		oe := f.TripOpen(t, up.URL())
		started := make(chan struct{})
		up.Set(func(_ int64, _ http.ResponseWriter, r *http.Request) {
			close(started)
			<-r.Context().Done() // Hang until the caller gives up
		})
		clock.Advance(oe.RetryAfter)
		ctx, cancel := context.WithCancel(t.Context())
		probe := make(chan error, 1)
		go func() { probe <- f.Do(ctx, t, up.URL()) }()
		<-started
		if _, ok := AsOpen(f.Do(t.Context(), t, up.URL())); !ok {
			t.Fatal("a second call was admitted beside the probe")
		}
		cancel()
		err := <-probe
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled probe returned %v", err)
		}
		if s := f.State(t, up.Origin(t)); s.State != StateHalfOpen {
			t.Fatalf("after a cancelled probe the state is %s, want half-open", s.State)
		}
		up.SetStatus(http.StatusOK)
		if err := f.Do(t.Context(), t, up.URL()); err != nil {
			t.Fatalf("next probe: %v", err)
		}
		want := []string{"closed>open", "open>half-open", "half-open>closed"}
		if got := f.Transitions(); !slices.Equal(got, want) {
			t.Errorf("transitions %v, want %v", got, want)
		}
	})
}

func TestNeverTrips(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status int
	}{{"404", http.StatusNotFound}, {"429", http.StatusTooManyRequests}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := FastPolicy()
			p.ConsecutiveFailures, p.MinCalls, p.MaxAttempts = 1, 1, 2
			f := Setup(t, p)
			up := NewUpstream(t, tc.status)
			for range 20 {
				err := f.Do(t.Context(), t, up.URL())
				if _, ok := AsOpen(err); ok {
					t.Fatal("refused")
				}
				var se ErrHTTPStatus
				if !errors.As(err, &se) || int(se) != tc.status {
					t.Fatalf("error %v, want the status %d", err, tc.status)
				}
			}
			want := int64(20) // a 404 is final
			if tc.status == http.StatusTooManyRequests {
				want = 40 // a 429 is retried
			}
			if got := up.Hits.Load(); got != want {
				t.Errorf("server saw %d requests, want %d", got, want)
			}
			if tr := f.Transitions(); len(tr) != 0 {
				t.Errorf("transitions %v, want none", tr)
			}
		})
	}
}

func TestTrips(t *testing.T) {
	t.Parallel()
	slow := func(t *testing.T) string {
		up := NewUpstream(t, 0)
		stop := make(chan struct{})
		t.Cleanup(func() { close(stop) }) // before the server closes
		up.Set(func(_ int64, w http.ResponseWriter, r *http.Request) {
			// Never answers: only AttemptTimeout can end the attempt.
			select {
			case <-r.Context().Done():
			case <-stop:
			}
		})
		return up.URL()
	}
	for _, tc := range []struct {
		name   string
		target func(t *testing.T) string
	}{
		{"503", func(t *testing.T) string { return NewUpstream(t, http.StatusServiceUnavailable).URL() }},
		{"connection refused", func(t *testing.T) string { return ClosedAddr(t) }},
		{"attempt timeout", slow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := FastPolicy()
			// The slow server never answers, so only this ends its attempts;
			// a 503 or a refusal that a loaded machine delays past it is a
			// Failure all the same.
			p.AttemptTimeout = 30 * time.Millisecond
			f := Setup(t, p)
			target := tc.target(t)
			for i := range p.ConsecutiveFailures {
				err := f.Do(t.Context(), t, target)
				var re *RetryError
				if !errors.As(err, &re) || re.Outcome != Failure {
					t.Fatalf("call %d: %v, want a *RetryError after a failure", i+1, err)
				}
				if tc.name == "attempt timeout" && !errors.Is(err, ErrAttemptTimeout) {
					t.Fatalf("call %d: %v, want ErrAttemptTimeout", i+1, err)
				}
			}
			if _, ok := AsOpen(f.Do(t.Context(), t, target)); !ok {
				t.Fatalf("not open after %d failures", p.ConsecutiveFailures)
			}
		})
	}
}

func TestCallerCancellationNeverTrips(t *testing.T) {
	t.Parallel()
	p := FastPolicy()
	p.ConsecutiveFailures, p.MinCalls = 1, 1
	f := Setup(t, p)
	up := NewUpstream(t, 0)
	up.Set(func(_ int64, _ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	for range 5 {
		// The server never answers: the caller's deadline ends every call,
		// however long the machine takes to get there.
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
		err := f.Do(ctx, t, up.URL())
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want the caller's deadline", err)
		}
	}
	if tr := f.Transitions(); len(tr) != 0 {
		t.Errorf("transitions %v, want none", tr)
	}
}

func TestRetriesAreOneLogicalCall(t *testing.T) {
	t.Parallel()
	p := FastPolicy()
	p.MaxAttempts = 3
	p.ConsecutiveFailures, p.MinCalls = 2, 2 // counting attempts would trip at once
	f := Setup(t, p)
	up := NewUpstream(t, 0)
	// Every request fails twice, then answers.
	var mu sync.Mutex
	seen := map[string]int{}
	up.Set(func(_ int64, w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path]++
		n := seen[r.URL.Path]
		mu.Unlock()
		if n <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	var ok, refused int
	for i := range 10 {
		target := up.Srv.URL + "/page/" + string(rune('a'+i))
		switch err := f.Do(t.Context(), t, target); {
		case err == nil:
			ok++
		case errors.As(err, new(*OpenError)):
			refused++
		default:
			t.Errorf("call %d: %v", i, err)
		}
	}
	if ok != 10 || refused != 0 {
		t.Errorf("%d successes, %d refusals; want 10, 0", ok, refused)
	}
	if tr := f.Transitions(); len(tr) != 0 {
		t.Errorf("transitions %v, want none", tr)
	}
	if got := up.Hits.Load(); got != 30 {
		t.Errorf("server saw %d attempts, want 30", got)
	}
}

func TestIsolation(t *testing.T) {
	t.Parallel()
	p := FastPolicy()
	p.MaxAttempts = 2
	f := Setup(t, p)
	bad := NewUpstream(t, http.StatusServiceUnavailable)
	good := []*Upstream{NewUpstream(t, http.StatusOK), NewUpstream(t, http.StatusOK)}
	var wg sync.WaitGroup
	var goodRefused, goodFailed, badRefused atomic.Int64
	for range 4 {
		wg.Go(func() {
			for range 25 {
				if _, ok := AsOpen(f.Do(t.Context(), t, bad.URL())); ok {
					badRefused.Add(1)
				}
			}
		})
		for _, g := range good {
			wg.Go(func() {
				for range 25 {
					err := f.Do(t.Context(), t, g.URL())
					if _, ok := AsOpen(err); ok {
						goodRefused.Add(1)
					} else if err != nil {
						goodFailed.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	if goodRefused.Load() != 0 || goodFailed.Load() != 0 {
		t.Errorf("healthy origins: %d refusals, %d failures; want 0, 0", goodRefused.Load(), goodFailed.Load())
	}
	if badRefused.Load() == 0 {
		t.Error("the failing origin was never refused")
	}
	for _, g := range good {
		if s := f.State(t, g.Origin(t)); s.State != StateClosed || s.Counts.Successes != 100 {
			t.Errorf("healthy origin %+v", s)
		}
	}
}

func TestRetryBudget(t *testing.T) {
	t.Parallel()
	p := FastPolicy()
	p.MaxAttempts = 5
	p.ConsecutiveFailures, p.FailureRatio = 1000, 0 // keep it closed: budget only
	p.RetryBudgetRatio, p.RetryBudgetMin = 0.2, 3
	f := Setup(t, p)
	up := NewUpstream(t, http.StatusServiceUnavailable)
	budgetStops := 0
	for range 20 {
		var re *RetryError
		if err := f.Do(t.Context(), t, up.URL()); !errors.As(err, &re) {
			t.Fatalf("got %v, want a *RetryError", err)
		} else if re.BudgetExhausted {
			budgetStops++
		}
	}
	// Without a budget: 20 × 5 = 100 attempts. With it: 20 calls plus at
	// most max(3, 0.2 × 20) = 4 retries.
	if got := up.Hits.Load(); got != 24 {
		t.Errorf("server saw %d attempts, want 24", got)
	}
	if budgetStops == 0 {
		t.Error("no call reported an exhausted budget")
	}
}

// TestRetryAfterPausesTheOrigin: a 429's Retry-After pauses its origin, and
// only its origin: the call that got it and a later caller both wait on the
// fixture's clock, and no request goes out before the clock has passed the
// pause; a call to another origin meanwhile does not wait at all.
func TestRetryAfterPausesTheOrigin(t *testing.T) {
	t.Parallel()
	const pause = 300 * time.Millisecond
	p := FastPolicy()
	p.MaxAttempts = 2
	p.MaxRetryAfter = time.Second
	f := Setup(t, p)
	SetSleep(f.Reg, f.Clock.Sleep)
	SetJitter(f.Reg, func() float64 { return 0.5 }) // each waiter's jitter: a tenth of the pause
	start := f.Clock.Now()
	up := NewUpstream(t, 0)
	var mu sync.Mutex
	var at []time.Duration // the fixture's clock at each request, from the 429 on
	up.Set(func(n int64, w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		at = append(at, f.Clock.Now().Sub(start))
		mu.Unlock()
		if n == 1 {
			w.Header().Set("Retry-After", "0.3")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	other := NewUpstream(t, http.StatusOK)

	first := make(chan error, 1)
	go func() { first <- f.Do(t.Context(), t, up.URL()) }()
	f.Clock.WaitSleeping(t, 1, first) // the 429 landed and its caller waits out the pause
	if s := f.State(t, up.Origin(t)); !s.PausedUntil.Equal(start.Add(pause)) {
		t.Errorf("paused until %s after the start, want %s", s.PausedUntil.Sub(start), pause)
	}
	// Another origin is not paused: its call returns while the paused
	// caller still sleeps, without a wait of its own.
	otherDone := make(chan error, 1)
	go func() { otherDone <- f.Do(t.Context(), t, other.URL()) }()
	if err := Await(t, "the call to another origin", otherDone); err != nil {
		t.Fatal(err)
	}
	if w := f.Clock.Waits(); len(w) != 1 {
		t.Errorf("waits %v: the call to another origin waited", w)
	}
	// A second caller of the paused origin waits too.
	second := make(chan error, 1)
	go func() { second <- f.Do(t.Context(), t, up.URL()) }()
	f.Clock.WaitSleeping(t, 2, second)
	if n := up.Hits.Load(); n != 1 {
		t.Fatalf("%d requests during the pause, want only the 429", n)
	}
	want := pause + pause/10
	if w := f.Clock.Waits(); len(w) != 2 || w[0] != want || w[1] != want {
		t.Errorf("waits %v, want two of the pause plus jitter, %s", w, want)
	}

	// A nanosecond short of the longest wait nobody wakes; past it both go.
	f.Clock.Advance(want - time.Nanosecond)
	if n := f.Clock.Sleeping(); n != 2 {
		t.Fatalf("%d callers still waiting a nanosecond before the pause and its jitter end, want 2", n)
	}
	f.Clock.Advance(time.Nanosecond)
	if err := Await(t, "the first caller", first); err != nil {
		t.Fatal(err)
	}
	if err := Await(t, "the second caller", second); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(at) != 3 {
		t.Fatalf("server saw %d requests, want 3", len(at))
	}
	for _, d := range at[1:] {
		if d < pause {
			t.Errorf("a request went out %s after the 429, inside its %s pause", d, pause)
		}
	}
	if tr := f.Transitions(); len(tr) != 0 {
		t.Errorf("transitions %v, want none", tr)
	}
}

func TestOpenDurationGrowsAndDecays(t *testing.T) {
	t.Parallel()
	p := FastPolicy()
	p.ConsecutiveFailures = 1
	p.OpenBase, p.OpenMax, p.OpenDecay = 120*time.Millisecond, 300*time.Millisecond, 250*time.Millisecond
	clock := NewFakeClock()
	f := Setup(t, p, RegistryClock(clock))
	SetJitter(f.Reg, func() float64 { return 0.5 }) // no jitter: factor 1.0
	up := NewUpstream(t, http.StatusServiceUnavailable)
	oe := f.TripOpen(t, up.URL())
	for range 3 {
		clock.Advance(oe.RetryAfter)
		if _, ok := AsOpen(f.Do(t.Context(), t, up.URL())); ok { // the failing probe
			t.Fatal("probe refused")
		}
		var ok bool
		if oe, ok = AsOpen(f.Do(t.Context(), t, up.URL())); !ok {
			t.Fatal("not re-opened after a failed probe")
		}
	}
	// The events carry the open durations exactly (jitter is pinned); a
	// refusal's RetryAfter is what is left of them.
	want := []time.Duration{120, 240, 300, 300} // OpenBase × opens, capped by OpenMax
	for i, d := range f.OpenDurations() {
		if i >= len(want) || d != want[i]*time.Millisecond {
			t.Errorf("open durations %v, want %v ms", f.OpenDurations(), want)
			break
		}
	}
	if oe.RetryAfter <= 0 || oe.RetryAfter > 300*time.Millisecond {
		t.Errorf("RetryAfter %s, want in (0, 300ms]", oe.RetryAfter)
	}
	if s := f.State(t, up.Origin(t)); s.ConsecutiveOpens != 4 {
		t.Errorf("ConsecutiveOpens %d, want 4", s.ConsecutiveOpens)
	}
	// Recover, stay healthy for two OpenDecay periods: 4 halves twice to 1,
	// so the next trip is the second consecutive open.
	clock.Advance(oe.RetryAfter)
	up.SetStatus(http.StatusOK)
	if err := f.Do(t.Context(), t, up.URL()); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2*p.OpenDecay + 10*time.Millisecond)
	up.SetStatus(http.StatusServiceUnavailable)
	f.TripOpen(t, up.URL())
	if ds := f.OpenDurations(); ds[len(ds)-1] != 240*time.Millisecond {
		t.Errorf("after a healthy spell the open duration is %s, want 240ms", ds[len(ds)-1])
	}
	if s := f.State(t, up.Origin(t)); s.ConsecutiveOpens != 2 {
		t.Errorf("ConsecutiveOpens %d after decay, want 2", s.ConsecutiveOpens)
	}
}

// TestOpenedMeanwhileStopsRetries: a call backing off before a retry looks
// at the breaker again when its wait ends, and stops with an *OpenError if
// other calls opened the origin meanwhile: one wait, no further attempt.
func TestOpenedMeanwhileStopsRetries(t *testing.T) {
	t.Parallel()
	p := FastPolicy()
	p.ConsecutiveFailures = 1
	p.MaxAttempts = 5
	p.BackoffBase, p.BackoffMax = 400*time.Millisecond, 400*time.Millisecond
	p.OpenBase, p.OpenMax = time.Second, time.Second
	p.RetryBudgetRatio, p.RetryBudgetMin = 0, 1 // A takes the only retry
	f := Setup(t, p)
	SetSleep(f.Reg, f.Clock.Sleep)
	SetJitter(f.Reg, func() float64 { return 0.99 })
	up := NewUpstream(t, http.StatusServiceUnavailable)
	a := make(chan error, 1)
	go func() { a <- f.Do(t.Context(), t, up.URL()) }()
	f.Clock.WaitSleeping(t, 1, a) // A failed once and is backing off now
	// B fails without a retry (the budget is spent) and trips the breaker.
	var re *RetryError
	if err := f.Do(t.Context(), t, up.URL()); !errors.As(err, &re) || !re.BudgetExhausted {
		t.Fatalf("B: %v, want a budget-exhausted *RetryError", err)
	}
	backoff := time.Duration(0.99 * float64(p.BackoffMax))
	f.Clock.Advance(backoff)
	err := Await(t, "A", a)
	oe, ok := AsOpen(err)
	if !ok {
		t.Fatalf("A: %v, want an *OpenError", err)
	}
	if want := p.OpenMax - backoff; oe.RetryAfter != want {
		t.Errorf("A refused with retry after %s, want the rest of the cooldown, %s", oe.RetryAfter, want)
	}
	if w := f.Clock.Waits(); len(w) != 1 || w[0] != backoff {
		t.Errorf("waits %v, want A's one backoff of %s", w, backoff)
	}
	if got := up.Hits.Load(); got != 2 {
		t.Errorf("server saw %d requests, want 2 (A's first attempt and B)", got)
	}
}

// heldCalls is an AttemptFunc that counts the attempts in flight and holds
// each one until the test lets one go; pacing is what these tests are
// about, so they need no server.
type heldCalls struct {
	cur, peak, started int
	mu                 sync.Mutex
	release            chan struct{}
}

func newHeldCalls() *heldCalls { return &heldCalls{release: make(chan struct{})} }

func (h *heldCalls) attempt(ctx context.Context, _ int) Result {
	h.mu.Lock()
	h.cur++
	h.started++
	h.peak = max(h.peak, h.cur)
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.cur--
		h.mu.Unlock()
	}()
	select {
	case <-h.release:
		return Result{Outcome: Success}
	case <-ctx.Done():
		return Result{Outcome: Ignored, Err: ctx.Err()}
	}
}

func (h *heldCalls) inFlight() (cur, peak, started int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur, h.peak, h.started
}

// TestPacing runs in synctest bubbles: synctest.Wait returns once every
// caller is blocked (on a slot, the rate limiter or the held attempt), which
// proves who waits without sleeping, and the bubble's clock, which the
// registry and its rate limiter read, moves only when everyone waits.
func TestPacing(t *testing.T) {
	t.Parallel()
	// releaseOneByOne lets the held attempts go one at a time and checks,
	// each time every caller is blocked again, that exactly min(limit,
	// callers left) attempts are in flight.
	// A failure cancels the callers still blocked, so that they end with
	// the test.
	releaseOneByOne := func(t *testing.T, h *heldCalls, callers, limit int, cancel context.CancelFunc) {
		for left := callers; left > 0; left-- {
			synctest.Wait()
			if cur, _, _ := h.inFlight(); cur != min(limit, left) {
				t.Errorf("%d attempts in flight with %d callers left, want %d", cur, left, min(limit, left))
				cancel()
				return
			}
			h.release <- struct{}{}
		}
	}
	// callDo runs one call as a caller of these tests: an error is a
	// failure unless the test cancelled the callers.
	callDo := func(ctx context.Context, t *testing.T, reg *Registry, origin string, h *heldCalls) {
		if err := reg.Do(ctx, origin, h.attempt); err != nil && ctx.Err() == nil {
			t.Error(err)
		}
	}
	t.Run("in-flight cap per origin", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			p := FastPolicy()
			p.MaxInFlightPerOrigin = 2
			reg := NewRegistry(Config{Policy: p}, nil)
			h := newHeldCalls()
			ctx, cancel := context.WithCancel(t.Context())
			var wg sync.WaitGroup
			for range 10 {
				wg.Go(func() { callDo(ctx, t, reg, "http://county.example:80", h) })
			}
			releaseOneByOne(t, h, 10, 2, cancel)
			wg.Wait()
			if _, peak, started := h.inFlight(); peak != 2 || started != 10 {
				t.Errorf("peak in flight %d of %d attempts, want 2 of 10", peak, started)
			}
		})
	})
	t.Run("global in-flight bound", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			reg := NewRegistry(Config{MaxInFlight: 3, Policy: FastPolicy()}, nil)
			h := newHeldCalls()
			ctx, cancel := context.WithCancel(t.Context())
			var wg sync.WaitGroup
			for i := range 3 {
				for range 4 {
					wg.Go(func() { callDo(ctx, t, reg, fmt.Sprintf("http://county%d.example:80", i), h) })
				}
			}
			releaseOneByOne(t, h, 12, 3, cancel)
			wg.Wait()
			if _, peak, started := h.inFlight(); peak != 3 || started != 12 {
				t.Errorf("peak in flight across origins %d of %d attempts, want 3 of 12", peak, started)
			}
		})
	})
	t.Run("rate limit", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			p := FastPolicy()
			p.RateLimit, p.Burst = 50, 1
			reg := NewRegistry(Config{Policy: p}, nil)
			start := time.Now()
			var at []time.Duration
			for range 6 {
				err := reg.Do(t.Context(), "http://county.example:80", func(context.Context, int) Result {
					at = append(at, time.Since(start))
					return Result{Outcome: Success}
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			// The burst's token at once, then one every 20 ms, never sooner.
			for i, d := range at {
				if want := time.Duration(i) * 20 * time.Millisecond; d != want {
					t.Errorf("attempt %d went out at %s, want %s (50/s, burst 1): all %v", i+1, d, want, at)
					break
				}
			}
		})
	})
	t.Run("a wait for a token ends with ctx", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			p := FastPolicy()
			p.RateLimit, p.Burst = 1.0/3600, 1 // the second token comes in an hour
			var transitions atomic.Int64
			reg := NewRegistry(Config{Policy: p, OnStateChange: func(StateChange) { transitions.Add(1) }}, nil)
			var attempts atomic.Int64
			call := func(context.Context, int) Result {
				attempts.Add(1)
				return Result{Outcome: Success}
			}
			if err := reg.Do(t.Context(), "http://county.example:80", call); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			held := make(chan error, 1)
			go func() { held <- reg.Do(ctx, "http://county.example:80", call) }()
			synctest.Wait() // the second call is blocked on the limiter
			if n := attempts.Load(); n != 1 {
				t.Fatalf("%d attempts, want 1: the second call did not wait for its token", n)
			}
			cancel()
			if err := <-held; !errors.Is(err, context.Canceled) {
				t.Errorf("held call ended with %v, want the caller's cancellation", err)
			}
			if n := attempts.Load(); n != 1 || transitions.Load() != 0 {
				t.Errorf("%d attempts and %d transitions, want 1 and none", n, transitions.Load())
			}
		})
	})
}
