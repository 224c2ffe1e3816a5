package breaker_test

import (
	. "github.com/ingestd/ingestd/breaker"
	. "github.com/ingestd/ingestd/breaker/internal/breakertest"

	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// pacedFixture is a registry pacing by response times at target, no fixed
// rate and no per-origin cap, whose waits sleep on its fake clock, and an
// upstream that takes latency of that clock to answer, except for the
// requests whose number is in hold: those wait for their channel first.
func pacedFixture(t *testing.T, target float64, latency time.Duration, hold map[int64]chan struct{}) (*Fixture, *Upstream) {
	t.Helper()
	p := FastPolicy()
	p.TargetConcurrency = target
	f := Setup(t, p)
	SetSleep(f.Reg, f.Clock.Sleep)
	up := NewUpstream(t, 0)
	up.Set(func(n int64, w http.ResponseWriter, _ *http.Request) {
		if ch, ok := hold[n]; ok {
			<-ch
		}
		f.Clock.Advance(latency)
		w.WriteHeader(http.StatusOK)
	})
	return f, up
}

// TestAdaptivePacingSpacesConcurrentCalls: calls one after another are
// never held, however short of the gap they come (a single sequential poll
// runs at the server's pace); calls that meet another in flight start one
// gap (latency / TargetConcurrency) after the previous start, in order, and
// not before their start.
func TestAdaptivePacingSpacesConcurrentCalls(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	// Latency 200 ms, target 0.5: a gap of 400 ms, longer than the 200 ms
	// between two sequential starts.
	f, up := pacedFixture(t, 0.5, 200*time.Millisecond, map[int64]chan struct{}{3: release})
	SetSleep(f.Reg, ForbidSleep(t))
	for range 2 {
		if err := f.Do(t.Context(), t, up.URL()); err != nil {
			t.Fatal(err)
		}
	}
	SetSleep(f.Reg, f.Clock.Sleep)
	// Call 3 is held in flight by the upstream; 4 and 5 come meanwhile.
	done := make(chan error, 3)
	go func() { done <- f.Do(context.Background(), t, up.URL()) }()
	Eventually(t, "request 3 in flight", func() bool { return up.Hits.Load() == 3 })
	go func() { done <- f.Do(context.Background(), t, up.URL()) }()
	f.Clock.WaitSleeping(t, 1, done)
	go func() { done <- f.Do(context.Background(), t, up.URL()) }()
	f.Clock.WaitSleeping(t, 2, done)
	if w, want := f.Clock.Waits(), []time.Duration{400 * time.Millisecond, 800 * time.Millisecond}; !slices.Equal(w, want) {
		t.Fatalf("waits %v, want %v (one gap, then two)", w, want)
	}
	f.Clock.Advance(399 * time.Millisecond)
	if n := f.Clock.Sleeping(); n != 2 {
		t.Fatalf("%d calls still waiting 1 ms before the first start, want 2", n)
	}
	f.Clock.Advance(time.Millisecond)
	Eventually(t, "request 4 sent", func() bool { return up.Hits.Load() == 4 })
	if err := Await(t, "call 4", done); err != nil {
		t.Fatal(err)
	}
	// Call 4's answer moved the clock 200 ms: call 5's start is 200 ms on.
	if n, hits := f.Clock.Sleeping(), up.Hits.Load(); n != 1 || hits != 4 {
		t.Fatalf("%d waiting, %d requests after call 4; want call 5 still waiting", n, hits)
	}
	f.Clock.Advance(200 * time.Millisecond)
	if err := Await(t, "call 5", done); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := Await(t, "call 3", done); err != nil {
		t.Fatal(err)
	}
	if n := up.Hits.Load(); n != 5 {
		t.Errorf("%d requests, want 5", n)
	}
}

// TestAdaptivePacingPastDeadline: a call whose paced start would come after
// its deadline ends at once with ErrPastDeadline, sends nothing and gives
// its start back, so the next call waits one gap, not two.
func TestAdaptivePacingPastDeadline(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	f, up := pacedFixture(t, 1, time.Hour, map[int64]chan struct{}{2: release})
	if err := f.Do(t.Context(), t, up.URL()); err != nil { // latency: an hour
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() { done <- f.Do(context.Background(), t, up.URL()) }()
	Eventually(t, "request 2 in flight", func() bool { return up.Hits.Load() == 2 })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := f.Do(ctx, t, up.URL()); !errors.Is(err, ErrPastDeadline) || ctx.Err() != nil {
		t.Fatalf("err %v, want ErrPastDeadline before the deadline", err)
	}
	go func() { done <- f.Do(context.Background(), t, up.URL()) }()
	f.Clock.WaitSleeping(t, 1, done)
	if w := f.Clock.Waits(); !slices.Equal(w, []time.Duration{30 * time.Second}) {
		t.Errorf("waits %v, want one capped gap of 30s", w)
	}
	f.Clock.Advance(30 * time.Second)
	close(release)
	for range 2 {
		if err := Await(t, "a paced call", done); err != nil {
			t.Fatal(err)
		}
	}
	if n := up.Hits.Load(); n != 3 {
		t.Errorf("%d requests, want 3 (none from the refused call)", n)
	}
}

// TestRateLimitCapsAdaptivePacing: an explicit rate_limit still binds where
// the adaptive pacing would not (a lone sequential call).
func TestRateLimitCapsAdaptivePacing(t *testing.T) {
	t.Parallel()
	p := FastPolicy()
	p.TargetConcurrency = 1
	p.RateLimit, p.Burst = 1.0/3600, 1 // one token an hour
	f := Setup(t, p)
	SetSleep(f.Reg, ForbidSleep(t))
	up := NewUpstream(t, http.StatusOK)
	if err := f.Do(t.Context(), t, up.URL()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := f.Do(ctx, t, up.URL()); !errors.Is(err, ErrPastDeadline) {
		t.Fatalf("err %v, want ErrPastDeadline from the rate limit", err)
	}
	if n := up.Hits.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// TestDefaultPacing is the default pacing, in a synctest
// bubble whose clock moves only when every goroutine waits: a sequential
// poll of 50 pages from a server taking 50 ms a page sends each page the
// moment the previous one is answered (the old default, 5/s with a burst
// of 10, held every page after the 13th: ten tokens plus three refilled in
// 0.6 s), and eight polls at once have exactly two
// requests in flight until the last ones.
func TestDefaultPacing(t *testing.T) {
	t.Parallel()
	old := DefaultPolicy()
	old.RateLimit, old.Burst, old.MaxInFlightPerOrigin = 5, 10, 4
	for _, tc := range []struct {
		name   string
		p      Policy
		onTime int // pages sent the moment the previous one was answered
	}{{"default", DefaultPolicy(), 50}, {"old default", old, 13}} {
		t.Run(tc.name+": a sequential poll", func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				reg := NewRegistry(Config{Policy: tc.p}, nil)
				start := time.Now()
				var held []int
				for i := range 50 {
					err := reg.Do(t.Context(), "http://county.example:80", func(context.Context, int) Result {
						if at := time.Since(start); at != time.Duration(i)*50*time.Millisecond {
							held = append(held, i)
							start = time.Now().Add(-time.Duration(i) * 50 * time.Millisecond)
						}
						time.Sleep(50 * time.Millisecond) // the server's time to answer
						return Result{Outcome: Success}
					})
					if err != nil {
						t.Fatal(err)
					}
				}
				// Page 0 is on time by definition; a held page resets the
				// schedule, so each held page counts once.
				if got := 50 - len(held); got != tc.onTime {
					t.Errorf("%d pages on time, want %d; held: %v", got, tc.onTime, held)
				}
			})
		})
	}
	t.Run("default: eight polls at once", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			reg := NewRegistry(Config{Policy: DefaultPolicy()}, nil)
			h := newHeldCalls()
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					if err := reg.Do(t.Context(), "http://county.example:80", h.attempt); err != nil {
						t.Error(err)
					}
				})
			}
			for left := 8; left > 0; left-- {
				synctest.Wait()
				if cur, _, _ := h.inFlight(); cur != min(2, left) {
					t.Fatalf("%d requests in flight with %d polls left, want %d", cur, left, min(2, left))
				}
				h.release <- struct{}{}
			}
			wg.Wait()
			if _, peak, started := h.inFlight(); peak != 2 || started != 8 {
				t.Errorf("peak %d in flight of %d requests, want 2 of 8", peak, started)
			}
		})
	})
}
