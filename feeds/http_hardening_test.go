package feeds_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/deadletter"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/wfs/wfstest"
)

// A 429 with `Retry-After: 999999999` used to hold the poll for its whole
// timeout. Now the call ends at once and the poll is parked until the
// policy's MaxRetryAfter (the cap on what a server may ask), not failed and
// not held. A poll held on the Retry-After would end at its timeout (2m)
// with a timeout error, not parked with the 429's ThrottledError: the
// error's type is the proof, not the wall time the poll took.
func TestHugeRetryAfterParksThePoll(t *testing.T) {
	t.Parallel()
	p := fastPolicy()
	p.MaxRetryAfter = 10 * time.Minute
	b := setupDL(t, config.BuiltinDeadLetter(), withPolicy(p), withFeeds(defaultFeeds+"        timeout: 2m\n"))
	b.server.AddLayer("parcels", layertest.Parcels{N: 25})
	b.server.SetFault(func(r wfstest.Request) *wfstest.Fault {
		if r.Page == 1 {
			return &wfstest.Fault{Status: 429, Body: "slow down", Header: map[string]string{"Retry-After": "999999999"}}
		}
		return nil
	})
	start := b.clock.Now() // the injected clock, which the poll does not move
	_, err := b.manager.Poll(b.ctx, "county/parcels")
	var de *deadletter.DeferError
	var te *breaker.ThrottledError
	if !errors.As(err, &de) || !errors.As(err, &te) || de.Reason != deadletter.ReasonFailed {
		t.Fatalf("poll error = %v, want parked wrapping a *breaker.ThrottledError", err)
	}
	l := b.letter(t, "parcels")
	// On the injected clock (PostgreSQL keeps microseconds).
	if wait := l.RetryAfter.Sub(start); wait <= 10*time.Minute-time.Microsecond || wait > 10*time.Minute+30*time.Second {
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

// A layer whose content is deterministically bad fails its poll, naming the
// feed and the cause, without parking it and without opening the breaker
// (which here trips on the first failure) of the server, whose other layer
// then loads.
func TestBadContentFailsTheFeedNotTheOrigin(t *testing.T) {
	t.Parallel()
	b := setupDL(t, config.BuiltinDeadLetter(), withFeeds(defaultFeeds+`
      - id: broken
        kind: wfs
        url: %[1]s/wfs
        type_name: broken
        page_size: 10
`))
	b.server.AddLayer("parcels", layertest.Parcels{N: 25})
	b.server.AddLayer("broken", layertest.Parcels{N: 25})
	b.server.SetFault(func(r wfstest.Request) *wfstest.Fault {
		if r.Layer == "broken" {
			return &wfstest.Fault{Status: 200, ContentType: "application/json", Body: `{"type":"FeatureCollection","features":{"a":1}}`}
		}
		return nil
	})
	for range 3 {
		_, err := b.manager.Poll(b.ctx, "county/broken")
		var pe *feeds.PollError
		var de *deadletter.DeferError
		if !errors.As(err, &pe) || errors.As(err, &de) || !strings.Contains(err.Error(), "county/broken") || !strings.Contains(err.Error(), "features") {
			t.Fatalf("poll of bad content: %v, want a failure naming the feed and the cause, not parked", err)
		}
	}
	if p := b.lastPoll(t, "broken"); p.Status != "failed" {
		t.Errorf("polls row %s, want failed", p.Status)
	}
	if ls, _ := b.queue.List(b.ctx, deadletter.Filter{Feed: "county/broken"}); len(ls) != 0 {
		t.Errorf("%d dead letters for bad content, want none", len(ls))
	}
	if st := b.originState(t); st.State != breaker.StateClosed || st.Counts.Failures != 0 {
		t.Errorf("breaker %s with %d failures, want closed with none", st.State, st.Counts.Failures)
	}
	if _, err := b.manager.Poll(b.ctx, "county/parcels"); err != nil {
		t.Fatalf("the healthy layer: %v", err)
	}
	if ids := b.featureIDs(t, "parcels"); len(ids) != 25 {
		t.Errorf("%d features, want 25", len(ids))
	}
}

// A poll that runs out of its timeout says so, with the pages it got,
// rather than quoting the rate limiter or a cancelled request. The time
// it waits for the rate limiter is time in line, not counted (a queued
// poll must not fail as a timeout of a server it never asked); the
// server's slow pages are its own work, and use up its second.
func TestPollTimeoutSaysSo(t *testing.T) {
	t.Parallel()
	p := fastPolicy()
	p.RateLimit, p.Burst = 5, 1
	b := setup(t, withPolicy(p), withFeeds(`
      - id: parcels
        kind: wfs
        url: %[1]s/wfs
        type_name: parcels
        page_size: 5
        sort_by: pin
        timeout: 1s
        request_timeout: 1s
`))
	b.server.AddLayer("parcels", layertest.Parcels{N: 500})
	b.server.SetFault(func(wfstest.Request) *wfstest.Fault { return &wfstest.Fault{Delay: 300 * time.Millisecond} })
	_, err := b.manager.Poll(b.ctx, "county/parcels")
	if err == nil || !strings.Contains(err.Error(), "poll timeout after") || strings.Contains(err.Error(), "rate:") {
		t.Fatalf("poll error %v, want a poll timeout naming its pages", err)
	}
	if row := b.lastPoll(t, "parcels"); row.Status != "failed" || !strings.Contains(row.Error, "poll timeout after") {
		t.Errorf("polls row %+v", row)
	}
}
