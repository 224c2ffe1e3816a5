package breaker_test

import (
	. "github.com/ingestd/ingestd/breaker"
	. "github.com/ingestd/ingestd/breaker/internal/breakertest"

	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestLongRetryAfterEndsTheCall: a 429 whose Retry-After exceeds
// MaxRetryAfter, or would end after the caller's deadline, ends the call at
// once with a *ThrottledError carrying the capped wait, instead of holding
// the caller (a poll) for its whole timeout. The pause still spares the
// origin, and a later call whose deadline falls inside it is not made to
// sleep either. The registry's sleep fails the test if any call waits, and
// its clock stands still, so the remaining pause is exact.
func TestLongRetryAfterEndsTheCall(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name          string
		header        string
		maxRetryAfter time.Duration
		deadline      time.Duration // of the first call; 0: none
		wantRetry     time.Duration
		wantRequested time.Duration
	}{
		{"above the policy cap", "999999999", 2 * time.Hour, 0, 2 * time.Hour, 999999999 * time.Second},
		{"past the deadline", "7200", 3 * time.Hour, time.Hour, 2 * time.Hour, 2 * time.Hour},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := FastPolicy()
			p.MaxAttempts = 3
			p.MaxRetryAfter = tc.maxRetryAfter
			f := Setup(t, p)
			SetSleep(f.Reg, ForbidSleep(t))
			up := NewUpstream(t, 0)
			up.Set(func(_ int64, w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Retry-After", tc.header)
				w.WriteHeader(http.StatusTooManyRequests)
			})
			ctx := t.Context()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			err := f.Do(ctx, t, up.URL())
			var te *ThrottledError
			if !errors.As(err, &te) || te.RetryAfter != tc.wantRetry || te.Requested != tc.wantRequested || te.Origin != up.Origin(t) {
				t.Fatalf("err %v (%T); want *ThrottledError retry after %s", err, err, tc.wantRetry)
			}
			if n := up.Hits.Load(); n != 1 {
				t.Errorf("%d requests, want 1 (no retry into a pause)", n)
			}
			if !strings.Contains(err.Error(), "asked to retry after") || !strings.Contains(err.Error(), up.Origin(t)) {
				t.Errorf("message %q", err)
			}
			if s := f.State(t, up.Origin(t)); !s.PausedUntil.Equal(f.Clock.Now().Add(tc.wantRetry)) {
				t.Errorf("paused until %s, want %s from now", s.PausedUntil, tc.wantRetry)
			}
			// The origin is paused: another call whose deadline falls inside
			// the pause is refused at once, without a request, with what is
			// left of the pause (all of it: the clock has not moved).
			ctx2, cancel2 := context.WithTimeout(t.Context(), time.Hour)
			defer cancel2()
			err = f.Do(ctx2, t, up.URL())
			if !errors.As(err, &te) || te.RetryAfter != tc.wantRetry || te.Requested != 0 {
				t.Errorf("call into the pause: %v (%T), want *ThrottledError retry after %s", err, err, tc.wantRetry)
			}
			if n := up.Hits.Load(); n != 1 {
				t.Errorf("the call into the pause sent %d requests", n-1)
			}
			if tr := f.Transitions(); len(tr) != 0 {
				t.Errorf("transitions %v: pacing must never trip the breaker", tr)
			}
		})
	}
}

// TestRateLimitPastDeadline: a rate limiter that would delay an attempt past
// the caller's deadline ends the call with ErrPastDeadline (a deadline, not
// a "rate: Wait" failure), at once: ErrPastDeadline is returned only while
// the caller's context is still live, so the call did not wait for it.
func TestRateLimitPastDeadline(t *testing.T) {
	t.Parallel()
	p := FastPolicy()
	p.RateLimit = 1.0 / 3600 // one token an hour
	p.Burst = 1
	f := Setup(t, p)
	up := NewUpstream(t, http.StatusOK)
	if err := f.Do(t.Context(), t, up.URL()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	err := f.Do(ctx, t, up.URL())
	if !errors.Is(err, ErrPastDeadline) || !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "rate: Wait") {
		t.Fatalf("err %v, want ErrPastDeadline", err)
	}
	if up.Hits.Load() != 1 {
		t.Errorf("%d requests, want 1", up.Hits.Load())
	}
}
