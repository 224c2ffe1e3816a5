package feeds_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/wfs"
	"github.com/ingestd/ingestd/wfs/wfstest"
)

func TestPollAppliesEveryPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.server.AddLayer("parcels", wfstest.Parcels{N: 45})

	res, err := b.manager.Poll(b.ctx, "county/parcels")
	if err != nil {
		t.Fatal(err)
	}
	if res.Pages != 5 || res.Features != 45 || res.Added != 45 {
		t.Errorf("poll: pages=%d features=%d added=%d, want 5, 45, 45", res.Pages, res.Features, res.Added)
	}
	for page := range 5 {
		if n := b.server.PageRequests("parcels", page); n != 1 {
			t.Errorf("page %d requested %d times, want 1", page, n)
		}
	}
	if ids := b.featureIDs(t, "parcels"); len(ids) != 45 {
		t.Errorf("stored %d features, want 45", len(ids))
	}
	if status, n := b.freshness(t, "parcels"); status != "fresh" || n != 45 {
		t.Errorf("feed_freshness: %s with %d features, want fresh with 45", status, n)
	}

	// The same snapshot again changes nothing.
	res, err = b.manager.Poll(b.ctx, "county/parcels")
	if err != nil {
		t.Fatal(err)
	}
	if res.Added+res.Modified+res.Removed != 0 || res.Unchanged != 45 {
		t.Errorf("second poll: %+v, want 45 unchanged and nothing else", res.ApplyResult)
	}

	// polls.bytes is what the poll read, as the log line says (issue 16:
	// it was NULL for every poll).
	var bytes *int64
	if err := b.pool.QueryRow(b.ctx, `SELECT bytes FROM polls WHERE id = $1`, res.PollID).Scan(&bytes); err != nil {
		t.Fatal(err)
	}
	if res.Bytes < 45*100 || bytes == nil || *bytes != res.Bytes {
		t.Errorf("polls.bytes = %v, want the poll's %d bytes (at least 100 per feature)", bytes, res.Bytes)
	}
}

// A server that cuts the connection on page 3 of 5: the poll fails, says so,
// and the previous snapshot stays exactly as it was.
func TestConnectionCutOnPage3KeepsPreviousFeatures(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.server.AddLayer("parcels", wfstest.Parcels{N: 50})
	if _, err := b.manager.Poll(b.ctx, "county/parcels"); err != nil {
		t.Fatal(err)
	}
	before := b.featureDigest(t, "parcels")

	// The next snapshot differs (feature 0 changes), and page 3 always dies.
	b.server.AddLayer("parcels", wfstest.Parcels{N: 50, Version: 1})
	b.server.SetFault(func(r wfstest.Request) *wfstest.Fault {
		if r.Page == 2 {
			return &wfstest.Fault{CutAfter: 700}
		}
		return nil
	})
	_, err := b.manager.Poll(b.ctx, "county/parcels")
	var pe *feeds.PollError
	if !errors.As(err, &pe) {
		t.Fatalf("poll error = %v, want a *feeds.PollError", err)
	}
	msg := err.Error()
	for _, want := range []string{"county/parcels", "page 2", "startIndex=20"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
	if after := b.featureDigest(t, "parcels"); after != before {
		t.Error("a failed poll changed the stored features")
	}
	if p := b.lastPoll(t, "parcels"); p.Status != "failed" || !strings.Contains(p.Error, "page 2") {
		t.Errorf("polls row: %+v, want failed with the page in the error", p)
	}
	if status, n := b.freshness(t, "parcels"); status != "failing" || n != 50 {
		t.Errorf("feed_freshness: %s with %d features, want failing with the previous 50", status, n)
	}
	if n := b.server.PageRequests("parcels", 3); n != 1 {
		t.Errorf("page 4 requested %d times, want 1 (by the first poll only)", n)
	}
	var staged int
	if err := b.pool.QueryRow(b.ctx, `SELECT (SELECT count(*) FROM staged_features) + (SELECT count(*) FROM staged_pages)`).Scan(&staged); err != nil {
		t.Fatal(err)
	}
	if staged != 0 {
		t.Errorf("%d staged rows left behind by the failed poll", staged)
	}

	// The server recovers: the next poll applies the new snapshot.
	b.server.SetFault(nil)
	res, err := b.manager.Poll(b.ctx, "county/parcels")
	if err != nil {
		t.Fatal(err)
	}
	if res.Modified != 1 || res.Added != 0 || res.Removed != 0 {
		t.Errorf("recovery poll: %+v, want exactly feature 0 modified", res.ApplyResult)
	}
}

// An HTML error page with status 200 is a failure, never an empty layer.
func TestHTMLPageWithStatus200FailsThePoll(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.server.AddLayer("parcels", wfstest.Parcels{N: 5})
	if _, err := b.manager.Poll(b.ctx, "county/parcels"); err != nil {
		t.Fatal(err)
	}
	b.server.SetFault(func(wfstest.Request) *wfstest.Fault {
		return &wfstest.Fault{Status: 200, Body: "<!DOCTYPE html><html><head><title>Service Unavailable</title></head><body>Maintenance</body></html>"}
	})
	if _, err := b.manager.Poll(b.ctx, "county/parcels"); err == nil {
		t.Fatal("poll of an HTML page succeeded")
	}
	if ids := b.featureIDs(t, "parcels"); len(ids) != 5 {
		t.Errorf("%d features after the failed poll, want the previous 5", len(ids))
	}
}

// Cancelling a poll mid-way (shutdown, or Ctrl-C on `ingestd poll`) applies
// nothing and records the poll as failed.
func TestCancelledPollAppliesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.server.AddLayer("parcels", wfstest.Parcels{N: 30})
	if _, err := b.manager.Poll(b.ctx, "county/parcels"); err != nil {
		t.Fatal(err)
	}
	before := b.featureDigest(t, "parcels")
	b.server.AddLayer("parcels", wfstest.Parcels{N: 30, Version: 2})

	reached := make(chan struct{})
	var once atomic.Bool
	b.server.SetFault(func(r wfstest.Request) *wfstest.Fault {
		if r.Page == 2 {
			if once.CompareAndSwap(false, true) {
				close(reached)
			}
			return &wfstest.Fault{Hang: true}
		}
		return nil
	})
	ctx, cancel := context.WithCancel(b.ctx)
	go func() {
		<-reached
		cancel()
	}()
	_, err := b.manager.Poll(ctx, "county/parcels")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("poll error = %v, want context.Canceled", err)
	}
	if b.featureDigest(t, "parcels") != before {
		t.Error("a cancelled poll changed the stored features")
	}
	if p := b.lastPoll(t, "parcels"); p.Status != "failed" {
		t.Errorf("cancelled poll recorded as %q, want failed", p.Status)
	}
}

// One feed never has two polls running at once in one process.
func TestPollWhileRunningIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.server.AddLayer("parcels", wfstest.Parcels{N: 5})
	release := make(chan struct{})
	reached := make(chan struct{}, 1)
	b.server.SetFault(func(r wfstest.Request) *wfstest.Fault {
		select {
		case reached <- struct{}{}:
		default:
		}
		<-release
		return nil
	})
	done := make(chan error, 1)
	go func() {
		_, err := b.manager.Poll(b.ctx, "county/parcels")
		done <- err
	}()
	<-reached
	if _, err := b.manager.Poll(b.ctx, "county/parcels"); !errors.Is(err, feeds.ErrPollInProgress) {
		t.Errorf("second poll: %v, want ErrPollInProgress", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("first poll: %v", err)
	}
}

// The scheduler polls on its cron schedule, catches up overdue feeds on start,
// and Stop cancels a poll in flight without applying it.
func TestSchedulerCatchUpAndStop(t *testing.T) {
	t.Parallel()
	b := setup(t, withFeeds(`
      - id: parcels
        kind: wfs
        url: %[1]s/wfs
        type_name: parcels
        page_size: 10
        sort_by: pin
      - id: roads
        kind: geojson
        url: %[1]s/geojson/roads.geojson
        schedule: "@every 1s"
`), withManagerOptions(feeds.WithMaxJitter(0)))
	b.server.AddLayer("parcels", wfstest.Parcels{N: 12})
	b.server.AddLayer("roads", wfstest.Parcels{N: 3})

	// parcels runs daily at 05:00: only the catch-up on start can poll it now.
	if err := b.manager.Update(b.ctx, b.cfg); err != nil {
		t.Fatal(err)
	}
	if err := b.manager.Start(b.ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "catch-up poll of parcels", func() bool {
		status, n := b.freshness(t, "parcels")
		return status == "fresh" && n == 12
	})
	// roads runs every second: it is polled again and again.
	waitFor(t, 10*time.Second, "three scheduled polls of roads", func() bool {
		return b.server.PageRequests("roads", 0) >= 3
	})

	// A scheduled poll hangs on the server; Stop cancels it and returns.
	b.server.SetFault(func(r wfstest.Request) *wfstest.Fault {
		if r.Layer == "roads" {
			return &wfstest.Fault{Hang: true}
		}
		return nil
	})
	n := b.server.PageRequests("roads", 0)
	waitFor(t, 5*time.Second, "a hanging roads poll", func() bool { return b.server.PageRequests("roads", 0) > n })
	stopped := make(chan struct{})
	go func() { b.manager.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return while a poll was hanging")
	}
	if p := b.lastPoll(t, "roads"); p.Status != "failed" {
		t.Errorf("the poll cancelled by Stop is %q, want failed", p.Status)
	}
	after := b.server.Requests()
	time.Sleep(1500 * time.Millisecond)
	if b.server.Requests() != after {
		t.Error("requests were sent after Stop")
	}
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Two instances against one database fire the same tick: the feed is polled
// once. (Their catch-up on start is the same tick for both.)
func TestTwoInstancesPollAFeedOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, withManagerOptions(feeds.WithInstanceID("a:1")))
	b.server.AddLayer("parcels", wfstest.Parcels{N: 25})
	other := feeds.NewManager(b.store, wfs.NewClient(nil, b.breakers, nil), feeds.WithInstanceID("b:2"))
	t.Cleanup(other.Stop)

	errs := make(chan error, 2)
	for _, m := range []*feeds.Manager{b.manager, other} {
		go func() {
			if err := m.Update(b.ctx, b.cfg); err != nil {
				errs <- err
				return
			}
			errs <- m.Start(b.ctx)
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "the catch-up poll", func() bool {
		status, _ := b.freshness(t, "parcels")
		return status == "fresh"
	})
	time.Sleep(500 * time.Millisecond) // a second poll, if any, would have started by now
	for page := range 3 {
		if n := b.server.PageRequests("parcels", page); n != 1 {
			t.Errorf("page %d requested %d times by two instances, want 1", page, n)
		}
	}
	var polls int
	if err := b.pool.QueryRow(b.ctx, `SELECT count(*) FROM polls`).Scan(&polls); err != nil {
		t.Fatal(err)
	}
	if polls != 1 {
		t.Errorf("%d polls recorded, want 1", polls)
	}

	// A manual poll while another instance's claim is held is refused.
	if _, err := b.pool.Exec(b.ctx, `UPDATE feed_status SET poll_owner = 'b:2', poll_lease_until = now() + interval '1 minute'`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.manager.Poll(b.ctx, "county/parcels"); !errors.Is(err, feeds.ErrPollInProgress) {
		t.Errorf("poll during another instance's claim: %v, want ErrPollInProgress", err)
	}
}

// A poll reads the manager's clock, not the wall clock: with a clock that
// moves a minute at every reading, the poll's duration is whole minutes.
func TestPollReadsTheInjectedClock(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	at := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		at = at.Add(time.Minute)
		return at
	}
	b := setup(t, withManagerOptions(feeds.WithClock(clock)))
	b.server.AddLayer("parcels", wfstest.Parcels{N: 12})
	res, err := b.manager.Poll(b.ctx, "county/parcels")
	if err != nil {
		t.Fatal(err)
	}
	if res.Duration < time.Minute || res.Duration%time.Minute != 0 {
		t.Errorf("poll duration %s, want whole minutes of the injected clock", res.Duration)
	}
}
