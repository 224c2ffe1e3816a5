package breaker

import (
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
// sleep either.
func TestLongRetryAfterEndsTheCall(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name          string
		header        string
		maxRetryAfter time.Duration
		deadline      time.Duration
		wantRetry     time.Duration
		wantRequested time.Duration
	}{
		{"above the policy cap", "999999999", 700 * time.Millisecond, time.Minute, 700 * time.Millisecond, 999999999 * time.Second},
		{"past the deadline", "5", time.Minute, 500 * time.Millisecond, 5 * time.Second, 5 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := fastPolicy()
			p.MaxAttempts = 3
			p.MaxRetryAfter = tc.maxRetryAfter
			f := setup(t, p)
			up := newUpstream(t, 0)
			up.set(func(_ int64, w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Retry-After", tc.header)
				w.WriteHeader(http.StatusTooManyRequests)
			})
			ctx, cancel := context.WithTimeout(t.Context(), tc.deadline)
			defer cancel()
			start := time.Now()
			err := f.do(ctx, t, up.url())
			var te *ThrottledError
			if !errors.As(err, &te) || te.RetryAfter != tc.wantRetry || te.Requested != tc.wantRequested || te.Origin != up.origin(t) {
				t.Fatalf("err %v (%T); want *ThrottledError retry after %s", err, err, tc.wantRetry)
			}
			if d := time.Since(start); d > 300*time.Millisecond {
				t.Errorf("the call took %s: it slept on the Retry-After", d)
			}
			if n := up.hits.Load(); n != 1 {
				t.Errorf("%d requests, want 1 (no retry into a pause)", n)
			}
			if !strings.Contains(err.Error(), "asked to retry after") || !strings.Contains(err.Error(), up.origin(t)) {
				t.Errorf("message %q", err)
			}
			// The origin is paused: another call with a short deadline is
			// refused at once, without a request.
			ctx2, cancel2 := context.WithTimeout(t.Context(), 100*time.Millisecond)
			defer cancel2()
			start = time.Now()
			err = f.do(ctx2, t, up.url())
			if !errors.As(err, &te) || te.RetryAfter <= 0 || te.RetryAfter > min(tc.wantRetry, tc.maxRetryAfter) || te.Requested != 0 {
				t.Errorf("call into the pause: %v (%T), want *ThrottledError", err, err)
			}
			if d := time.Since(start); d > 50*time.Millisecond || up.hits.Load() != 1 {
				t.Errorf("call into the pause took %s and sent %d requests", d, up.hits.Load()-1)
			}
			if tr := f.transitions(); len(tr) != 0 {
				t.Errorf("transitions %v: pacing must never trip the breaker", tr)
			}
		})
	}
}

// TestRateLimitPastDeadline: a rate limiter that would delay an attempt past
// the caller's deadline ends the call with ErrPastDeadline (a deadline, not
// a "rate: Wait" failure), at once.
func TestRateLimitPastDeadline(t *testing.T) {
	t.Parallel()
	p := fastPolicy()
	p.RateLimit = 0.5 // one token per 2 s
	p.Burst = 1
	f := setup(t, p)
	up := newUpstream(t, http.StatusOK)
	if err := f.do(t.Context(), t, up.url()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := f.do(ctx, t, up.url())
	if !errors.Is(err, ErrPastDeadline) || !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "rate: Wait") {
		t.Fatalf("err %v, want ErrPastDeadline", err)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("took %s, want an immediate answer", d)
	}
	if up.hits.Load() != 1 {
		t.Errorf("%d requests, want 1", up.hits.Load())
	}
}
