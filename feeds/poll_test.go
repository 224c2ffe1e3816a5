package feeds_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/wfs/wfstest"
)

func TestPollAppliesEveryPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.server.AddLayer("parcels", layertest.Parcels{N: 45})

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

	// polls.bytes is what the poll read, as the log line says (not NULL).
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
	b.server.AddLayer("parcels", layertest.Parcels{N: 50})
	if _, err := b.manager.Poll(b.ctx, "county/parcels"); err != nil {
		t.Fatal(err)
	}
	before := b.featureDigest(t, "parcels")

	// The next snapshot differs (feature 0 changes), and page 3 always dies.
	b.server.AddLayer("parcels", layertest.Parcels{N: 50, Version: 1})
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
	b.server.AddLayer("parcels", layertest.Parcels{N: 5})
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
	b.server.AddLayer("parcels", layertest.Parcels{N: 30})
	if _, err := b.manager.Poll(b.ctx, "county/parcels"); err != nil {
		t.Fatal(err)
	}
	before := b.featureDigest(t, "parcels")
	b.server.AddLayer("parcels", layertest.Parcels{N: 30, Version: 2})

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
	b.server.AddLayer("parcels", layertest.Parcels{N: 5})
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

// schedClock returns the fake clock of a scheduling test: the last noon UTC
// before the database's clock (07:00 or 08:00 in New York, the test
// jurisdiction's zone), so that the daily default "0 5 * * *" is 21 hours
// away and a success the database records now is not overdue on it.
func schedClock() *feeds.FakeClock {
	now := time.Now().UTC()
	noon := now.Truncate(24 * time.Hour).Add(12 * time.Hour)
	if noon.After(now) {
		noon = noon.Add(-24 * time.Hour)
	}
	return feeds.NewFakeClock(noon)
}

// hourlyRoads is a feed on "@every 1h" beside the default parcels (daily).
const hourlyRoads = defaultFeeds + `
      - id: roads
        kind: geojson
        url: %[1]s/geojson/roads.geojson
        schedule: "@every 1h"
`

// The scheduler catches up, at start, the feeds that never succeeded or
// whose last success is older than their interval, and only those; then
// it polls each feed once per tick of its schedule, at the tick's time on
// the manager's clock, and measures how late each tick started.
func TestSchedulerCatchesUpThenPollsOncePerTick(t *testing.T) {
	t.Parallel()
	var sig feeds.Signals
	reg := prometheus.NewRegistry()
	b := setup(t, withFeeds(hourlyRoads), withClock(schedClock()),
		withManagerOptions(feeds.WithMaxJitter(0), feeds.WithSignals(&sig), feeds.WithRegisterer(reg)))
	b.server.AddLayer("parcels", layertest.Parcels{N: 12})
	b.server.AddLayer("roads", layertest.Parcels{N: 3})
	// parcels succeeded just now: not overdue. roads never did.
	if _, err := b.manager.Poll(b.ctx, "county/parcels"); err != nil {
		t.Fatal(err)
	}

	if err := b.manager.Start(b.ctx); err != nil {
		t.Fatal(err)
	}
	if r := awaitRun(t, &sig); r != (feeds.TickRun{Key: "county/roads", Outcome: "polled"}) {
		t.Fatalf("first run after start: %+v, want the catch-up of county/roads", r)
	}
	// Ticks at the multiples of the hour; the second one starts 45s late.
	tick := b.clock.Now()
	for i, late := range []time.Duration{0, 45 * time.Second} {
		tick = tick.Add(time.Hour)
		b.advanceTo(t, tick.Add(late))
		if r := awaitRun(t, &sig); r != (feeds.TickRun{Key: "county/roads", Planned: tick, Outcome: "polled"}) {
			t.Fatalf("tick %d: %+v, want county/roads polled for %s", i+1, r, tick.Format(time.TimeOnly))
		}
	}
	// Stop waits for every tick and catch-up it started: what the signals
	// hold now is all there will be.
	b.manager.Stop()
	if rest := pending(sig.Ran); len(rest) != 0 {
		t.Errorf("more runs than the catch-up and two ticks of roads: %+v", rest)
	}
	if n := b.server.PageRequests("roads", 0); n != 3 {
		t.Errorf("roads requested %d times, want 3 (a catch-up and two ticks)", n)
	}
	if n := b.server.PageRequests("parcels", 0); n != 1 {
		t.Errorf("parcels requested %d times, want once (by the manual poll; it was not overdue)", n)
	}
	if h := histogram(t, reg, "ingestd_feeds_scheduler_lag_seconds"); h.GetSampleSum() != 45 || h.GetSampleCount() != 2 {
		t.Errorf("scheduler lag: %v s over %d ticks, want 45 s over 2", h.GetSampleSum(), h.GetSampleCount())
	}
}

// A tick that finds the feed's previous poll still running is skipped, and
// counted as such; the next tick polls again.
func TestTickWhilePollRunsIsSkipped(t *testing.T) {
	t.Parallel()
	var sig feeds.Signals
	reg := prometheus.NewRegistry()
	b := setup(t, withFeeds(hourlyRoads), withClock(schedClock()),
		withManagerOptions(feeds.WithMaxJitter(0), feeds.WithCatchUp(false), feeds.WithSignals(&sig), feeds.WithRegisterer(reg)))
	b.server.AddLayer("roads", layertest.Parcels{N: 3})
	reached, release := make(chan struct{}, 1), make(chan struct{})
	var hung atomic.Bool
	b.server.SetFault(func(r wfstest.Request) *wfstest.Fault {
		if r.Layer == "roads" && hung.CompareAndSwap(false, true) {
			reached <- struct{}{}
			select {
			case <-release:
			case <-r.HTTP.Context().Done(): // the test failed and stops the manager
			}
		}
		return nil
	})
	if err := b.manager.Start(b.ctx); err != nil {
		t.Fatal(err)
	}
	t1 := b.clock.Now().Add(time.Hour)
	b.advanceTo(t, t1)
	await(t, reached, "request of the first tick's poll")
	t2 := t1.Add(time.Hour)
	b.advanceTo(t, t2)
	if r := awaitRun(t, &sig); r != (feeds.TickRun{Key: "county/roads", Planned: t2, Outcome: "running"}) {
		t.Fatalf("second tick: %+v, want it skipped (running)", r)
	}
	close(release)
	if r := awaitRun(t, &sig); r != (feeds.TickRun{Key: "county/roads", Planned: t1, Outcome: "polled"}) {
		t.Fatalf("after the release: %+v, want the first tick's poll", r)
	}
	t3 := t2.Add(time.Hour)
	b.advanceTo(t, t3)
	if r := awaitRun(t, &sig); r != (feeds.TickRun{Key: "county/roads", Planned: t3, Outcome: "polled"}) {
		t.Fatalf("third tick: %+v, want a poll", r)
	}
	var polls int
	if err := b.pool.QueryRow(b.ctx, `SELECT count(*) FROM polls WHERE feed = 'roads' AND status = 'succeeded'`).Scan(&polls); err != nil {
		t.Fatal(err)
	}
	if polls != 2 {
		t.Errorf("%d successful polls of roads, want 2 (the second tick skipped)", polls)
	}
	if n := counter(t, reg, "ingestd_feeds_ticks_skipped_total", "reason", "running"); n != 1 {
		t.Errorf("ticks skipped as running: %v, want 1", n)
	}
}

// Stop cancels a scheduled poll in flight without applying it, and nothing
// is polled after it returns, whatever the clock does.
func TestStopCancelsAScheduledPoll(t *testing.T) {
	t.Parallel()
	var sig feeds.Signals
	b := setup(t, withFeeds(hourlyRoads), withClock(schedClock()),
		withManagerOptions(feeds.WithMaxJitter(0), feeds.WithCatchUp(false), feeds.WithSignals(&sig)))
	b.server.AddLayer("roads", layertest.Parcels{N: 3})
	reached := make(chan struct{}, 1)
	b.server.SetFault(func(r wfstest.Request) *wfstest.Fault {
		if r.Layer == "roads" {
			select {
			case reached <- struct{}{}:
			default:
			}
			return &wfstest.Fault{Hang: true}
		}
		return nil
	})
	if err := b.manager.Start(b.ctx); err != nil {
		t.Fatal(err)
	}
	tick := b.clock.Now().Add(time.Hour)
	b.advanceTo(t, tick)
	await(t, reached, "request of the tick's poll")
	stopped := make(chan struct{})
	go func() { b.manager.Stop(); close(stopped) }()
	await(t, stopped, "return of Stop while a poll hangs")
	if p := b.lastPoll(t, "roads"); p.Status != "failed" {
		t.Errorf("the poll cancelled by Stop is %q, want failed", p.Status)
	}
	if runs := pending(sig.Ran); len(runs) != 1 || runs[0] != (feeds.TickRun{Key: "county/roads", Planned: tick, Outcome: "polled"}) {
		t.Errorf("runs until Stop: %+v, want the one cancelled tick", runs)
	}
	// Stop returned: the scheduler's loop has ended. Ticks that would come
	// now start nothing.
	after := b.server.Requests()
	b.clock.Advance(3 * time.Hour)
	if runs := pending(sig.Ran); len(runs) != 0 {
		t.Errorf("runs after Stop: %+v", runs)
	}
	if n := b.server.Requests(); n != after {
		t.Errorf("%d requests were sent after Stop", n-after)
	}
}

// Two instances against one database fire the same tick: the feed is polled
// once. (Their catch-up on start is the same tick for both.)
func TestTwoInstancesPollAFeedOnce(t *testing.T) {
	t.Parallel()
	var sigA, sigB feeds.Signals
	b := setup(t, withManagerOptions(feeds.WithInstanceID("a:1"), feeds.WithSignals(&sigA)))
	b.server.AddLayer("parcels", layertest.Parcels{N: 25})
	other := feeds.NewManager(b.store, feeds.NewFetchers(kindconf.FetcherDeps{Breakers: b.breakers}), feeds.WithInstanceID("b:2"), feeds.WithSignals(&sigB))
	t.Cleanup(other.Stop)

	// No page is served until both have started: a catch-up that applied
	// before the other instance looked would leave it nothing overdue.
	gate := make(chan struct{})
	var open sync.Once
	opened := func() { open.Do(func() { close(gate) }) }
	t.Cleanup(opened)
	b.server.SetFault(func(wfstest.Request) *wfstest.Fault { <-gate; return nil })
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
	opened()
	// Each instance's catch-up ends, one way or the other: what proves that
	// the loser did not poll is its own outcome, not a pause.
	outcomes := []string{awaitRun(t, &sigA).Outcome, awaitRun(t, &sigB).Outcome}
	slices.Sort(outcomes)
	if want := []string{"claimed", "polled"}; !slices.Equal(outcomes, want) {
		t.Errorf("the two instances' catch-ups: %v, want %v", outcomes, want)
	}
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

// counter returns the counter name{label=value} in reg (0 when absent).
func counter(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if f.GetName() == name && l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// A poll reads the manager's clock, not the wall clock: with a clock that
// moves a minute at every reading, the poll's duration is whole minutes.
func TestPollReadsTheInjectedClock(t *testing.T) {
	t.Parallel()
	b := setup(t, withManagerOptions(feeds.WithClock(&steppingClock{at: time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)})))
	b.server.AddLayer("parcels", layertest.Parcels{N: 12})
	res, err := b.manager.Poll(b.ctx, "county/parcels")
	if err != nil {
		t.Fatal(err)
	}
	if res.Duration < time.Minute || res.Duration%time.Minute != 0 {
		t.Errorf("poll duration %s, want whole minutes of the injected clock", res.Duration)
	}
}

// steppingClock moves a minute at every reading (a poll that is not
// scheduled waits on nothing: At is never called).
type steppingClock struct {
	mu sync.Mutex
	at time.Time
}

func (c *steppingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = c.at.Add(time.Minute)
	return c.at
}

func (c *steppingClock) At(time.Time) <-chan time.Time { return nil }
