package feeds_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/deadletter"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/wfs/wfstest"
)

// A 429 with `Retry-After: 999999999` used to hold the poll for its whole
// timeout. Now the call ends at once and the poll is parked until the
// policy's MaxRetryAfter (the cap on what a server may ask), not failed and
// not held.
func TestHugeRetryAfterParksThePoll(t *testing.T) {
	t.Parallel()
	p := fastPolicy()
	p.MaxRetryAfter = 10 * time.Minute
	b := setupDL(t, feeds.BuiltinDeadLetter(), withPolicy(p))
	b.server.AddLayer("parcels", wfstest.Parcels{N: 25})
	b.server.SetFault(func(r wfstest.Request) *wfstest.Fault {
		if r.Page == 1 {
			return &wfstest.Fault{Status: 429, Body: "slow down", Header: map[string]string{"Retry-After": "999999999"}}
		}
		return nil
	})
	start := time.Now()
	_, err := b.manager.Poll(b.ctx, "county/parcels")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the poll took %s: it slept on the Retry-After", d)
	}
	var de *deadletter.DeferError
	var te *breaker.ThrottledError
	if !errors.As(err, &de) || !errors.As(err, &te) || de.Reason != deadletter.ReasonFailed {
		t.Fatalf("poll error = %v, want parked wrapping a *breaker.ThrottledError", err)
	}
	l := b.letter(t, "parcels")
	if wait := l.RetryAfter.Sub(start); wait < 10*time.Minute || wait > 10*time.Minute+31*time.Second {
		t.Errorf("retry_after is %s away, want max_retry_after (10m) plus at most 30s of jitter", wait)
	}
	if l.Checkpoint.Page != 1 {
		t.Errorf("checkpoint page %d, want 1 (page 0 is kept)", l.Checkpoint.Page)
	}
	if n := b.server.PageRequests("parcels", 1); n != 1 {
		t.Errorf("page 1 was requested %d times, want once", n)
	}
	if st := b.originState(t); st.State != breaker.StateClosed {
		t.Errorf("breaker %s after a 429, want closed", st.State)
	}
}
