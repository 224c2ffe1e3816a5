package feeds_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/breaker/pgshare"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/deadletter"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/wfs/wfstest"
)

// lateQueue lets a test hand the manager a dead-letter queue on the pool that
// setup creates after the manager's options are fixed.
type lateQueue struct{ q *deadletter.Queue }

func (l *lateQueue) Park(ctx context.Context, p deadletter.Parking) (int64, error) {
	return l.q.Park(ctx, p)
}

func (l *lateQueue) Open(ctx context.Context, jurisdiction, feed string) (*deadletter.Letter, error) {
	return l.q.Open(ctx, jurisdiction, feed)
}

// dlBundle is a poll bundle with a dead-letter queue and a replayer.
type dlBundle struct {
	*bundle
	queue    *deadletter.Queue
	replayer *deadletter.Replayer
	origin   string
}

// trippingPolicy opens on the first failed call, for one second.
func trippingPolicy() breaker.Policy {
	p := fastPolicy()
	p.ConsecutiveFailures = 1
	p.FailureRatio = 0
	p.MaxAttempts = 2
	p.OpenBase = time.Second
	p.OpenMax = 2 * time.Second
	return p
}

// dlClock returns the fake clock of a dead-letter test: an hour ahead of the
// database's clock, so that a retry_after read from it stays in the
// database's future (the queue claims by now()) until the test moves the
// clock past it (advanceTo).
func dlClock() *feeds.FakeClock { return feeds.NewFakeClock(time.Now().Add(time.Hour)) }

func setupDL(t *testing.T, cfg config.DeadLetter, opts ...setupOption) *dlBundle {
	t.Helper()
	lq := &lateQueue{}
	opts = append([]setupOption{withPolicy(trippingPolicy()), withClock(dlClock())}, opts...)
	opts = append(opts, withManagerOptions(feeds.WithDeadLetters(lq, cfg)))
	b := setup(t, opts...)
	lq.q = deadletter.NewQueue(b.pool)
	u, _ := url.Parse(b.url)
	return &dlBundle{bundle: b, queue: lq.q, origin: breaker.Origin(u),
		replayer: deadletter.NewReplayer(b.pool, b.manager.Replay, deadletter.WithMaxAttempts(cfg.MaxAttempts))}
}

// trip opens the origin's breaker without a request to the server.
func (b *dlBundle) trip(t *testing.T) {
	t.Helper()
	_ = b.breakers.Do(context.Background(), b.origin, func(context.Context, int) breaker.Result {
		return breaker.Result{Outcome: breaker.Failure, Err: errors.New("tripped by the test")}
	})
	if st := b.originState(t); st.State != breaker.StateOpen {
		t.Fatalf("breaker of %s is %s after the trip, want open", b.origin, st.State)
	}
}

func (b *dlBundle) originState(t *testing.T) breaker.OriginState {
	t.Helper()
	for _, s := range b.breakers.Snapshot() {
		if s.Origin == b.origin {
			return s
		}
	}
	t.Fatalf("no breaker for %s", b.origin)
	return breaker.OriginState{}
}

func (b *dlBundle) letter(t *testing.T, feed string) *deadletter.Letter {
	t.Helper()
	ls, err := b.queue.List(b.ctx, deadletter.Filter{Feed: "county/" + feed})
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 {
		t.Fatalf("%d dead letters for %s, want 1", len(ls), feed)
	}
	return ls[0]
}

// contentDigest fingerprints what a feed's features hold (ids, geometries,
// properties, hashes), leaving out when they were written, so that two feeds
// polled at different times from the same layer compare equal.
func (b *dlBundle) contentDigest(t *testing.T, feed string) string {
	t.Helper()
	var digest string
	err := b.pool.QueryRow(b.ctx, `
		SELECT coalesce(md5(string_agg(feature_id || ST_AsEWKT(geom) || properties::text
			|| encode(content_hash, 'hex'), '|' ORDER BY feature_id)), '')
		FROM features WHERE jurisdiction = 'county' AND feed = $1`, feed).Scan(&digest)
	if err != nil {
		t.Fatal(err)
	}
	return digest
}

// A poll refused by an open breaker is parked with the breaker's retry_after
// (plus at most 10% jitter), is not replayed before it, and is after.
func TestRefusalParksUntilTheBreakersRetryAfter(t *testing.T) {
	t.Parallel()
	b := setupDL(t, config.BuiltinDeadLetter())
	b.server.AddLayer("parcels", layertest.Parcels{N: 45})
	b.trip(t)
	openUntil := b.originState(t).OpenUntil

	_, err := b.manager.Poll(b.ctx, "county/parcels")
	var de *deadletter.DeferError
	var oe *breaker.OpenError
	if !errors.As(err, &de) || !errors.As(err, &oe) {
		t.Fatalf("poll error = %v, want a DeferError wrapping an OpenError", err)
	}
	l := b.letter(t, "parcels")
	if l.Status != deadletter.StatusPending || l.Reason != deadletter.ReasonCircuitOpen || l.Checkpoint.Page != 0 {
		t.Errorf("dead letter: %+v, want pending circuit_open at page 0", l)
	}
	// On the injected clock, which has not moved: the breaker's open
	// time left, plus at most a tenth of it (PostgreSQL keeps microseconds).
	maxJitter := openUntil.Sub(b.clock.Now()) / 10
	if l.RetryAfter.Before(openUntil.Add(-time.Microsecond)) || l.RetryAfter.After(openUntil.Add(maxJitter)) {
		t.Errorf("retry_after %s, want within [%s, +%s] of the breaker's next probe", l.RetryAfter, openUntil, maxJitter)
	}
	if l.URL == "" || l.Origin != b.origin {
		t.Errorf("dead letter names url %q origin %q, want the refused request on %s", l.URL, l.Origin, b.origin)
	}
	if p := b.lastPoll(t, "parcels"); p.Status != "refused" {
		t.Errorf("polls row is %s, want refused", p.Status)
	}
	if status, _ := b.freshness(t, "parcels"); status != "parked" {
		t.Errorf("feed_freshness: %s, want parked", status)
	}
	// One path per feed: another poll is turned away while the row is open.
	if _, err := b.manager.Poll(b.ctx, "county/parcels"); !errors.Is(err, feeds.ErrParked) {
		t.Errorf("second poll: %v, want ErrParked", err)
	}

	// Before retry_after: nothing is claimed, nothing is requested.
	if claimed, err := b.replayer.RunOnce(b.ctx); err != nil || len(claimed) != 0 {
		t.Fatalf("replayer before retry_after claimed %d rows (err %v), want none", len(claimed), err)
	}
	if n := b.server.Requests(); n != 0 {
		t.Fatalf("%d requests reached the server before retry_after", n)
	}

	b.advanceTo(t, l.RetryAfter)
	claimed, err := b.replayer.RunOnce(b.ctx)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("replayer after retry_after claimed %d rows (err %v), want 1", len(claimed), err)
	}
	if l := b.letter(t, "parcels"); l.Status != deadletter.StatusDone || l.Attempts != 0 {
		t.Errorf("after the replay: %s with %d attempts, want done with 0", l.Status, l.Attempts)
	}
	if status, n := b.freshness(t, "parcels"); status != "fresh" || n != 45 {
		t.Errorf("feed_freshness: %s with %d features, want fresh with 45", status, n)
	}
	if p := b.lastPoll(t, "parcels"); p.Status != "succeeded" || p.Features != 45 {
		t.Errorf("polls row: %+v, want the refused poll succeeded with 45 features", p)
	}
}

// After a refusal at page k of n, the replay requests only pages k..n-1, keeps
// the pages staged before the refusal, and applies the same snapshot as a
// clean full poll.
func TestReplayResumesAtTheRefusedPage(t *testing.T) {
	t.Parallel()
	const k = 2
	b := setupDL(t, config.BuiltinDeadLetter(), withFeeds(`
      - id: parcels
        kind: wfs
        url: %[1]s/wfs
        type_name: parcels
        page_size: 10
        sort_by: pin
      - id: clean
        kind: wfs
        url: %[1]s/clean/wfs
        type_name: parcels
        page_size: 10
        sort_by: pin
`))
	b.server.AddLayer("parcels", layertest.Parcels{N: 47})
	if _, err := b.manager.Poll(b.ctx, "county/clean"); err != nil {
		t.Fatal(err)
	}
	clean := b.contentDigest(t, "clean")
	before := make([]int, 5)
	for p := range before {
		before[p] = b.server.PageRequests("parcels", p)
	}

	// The origin opens while page k-1 is being served: page k is refused.
	var tripped atomic.Bool
	b.server.SetFault(func(r wfstest.Request) *wfstest.Fault {
		if r.Page == k-1 && tripped.CompareAndSwap(false, true) {
			b.trip(t)
		}
		return nil
	})
	_, err := b.manager.Poll(b.ctx, "county/parcels")
	var de *deadletter.DeferError
	if !errors.As(err, &de) || de.Reason != deadletter.ReasonCircuitOpen {
		t.Fatalf("poll error = %v, want parked as circuit_open", err)
	}
	l := b.letter(t, "parcels")
	if l.Checkpoint.Page != k || l.Checkpoint.PollID == 0 {
		t.Fatalf("checkpoint %+v, want page %d of a staged poll", l.Checkpoint, k)
	}
	var staged int
	if err := b.pool.QueryRow(b.ctx, `SELECT count(*) FROM staged_pages WHERE poll_id = $1`, l.Checkpoint.PollID).Scan(&staged); err != nil {
		t.Fatal(err)
	}
	if staged != k {
		t.Fatalf("%d pages staged for the parked poll, want %d", staged, k)
	}

	b.advanceTo(t, l.RetryAfter)
	if claimed, err := b.replayer.RunOnce(b.ctx); err != nil || len(claimed) != 1 {
		t.Fatalf("replay claimed %d rows (err %v), want 1", len(claimed), err)
	}
	if l := b.letter(t, "parcels"); l.Status != deadletter.StatusDone {
		t.Fatalf("dead letter %s after the replay, want done (last error %q)", l.Status, l.LastError)
	}
	for p := range 5 {
		got := b.server.PageRequests("parcels", p) - before[p]
		// Pages before k: fetched once by the first poll, and page k-1
		// once more by the replay, its proof that the staged pages are
		// still the layer's (TestResumeProvesStagedPages); k and later:
		// once, by the replay (a refusal sends nothing).
		want := 1
		if p == k-1 {
			want = 2
		}
		if got != want {
			t.Errorf("page %d requested %d times by the parked poll and its replay, want %d", p, got, want)
		}
	}
	if got := b.contentDigest(t, "parcels"); got != clean {
		t.Error("the resumed snapshot differs from a clean full poll")
	}
	var polls, pages int
	if err := b.pool.QueryRow(b.ctx, `SELECT count(*), max(pages) FROM polls WHERE feed = 'parcels' AND status = 'succeeded'`).Scan(&polls, &pages); err != nil {
		t.Fatal(err)
	}
	if polls != 1 || pages != 5 {
		t.Errorf("%d succeeded polls with %d pages, want the one resumed poll with all 5", polls, pages)
	}
}

// TestResumeProvesStagedPages: a WFS poll parked at page 3 (the origin
// opened while page 2 was served) resumes by reading page 2 again and
// comparing it with what it staged. Unchanged, the replay goes on from
// page 3: the pages before 2 are not asked again, and the snapshot is
// a clean poll's. Changed while the poll was parked — every feature
// replaced with the count kept, one feature of page 2 replaced, or one
// removed from page 0 (which moves every page after it) — the replay
// drops what was staged and starts over, and what is stored is the layer
// as it is now, no feature of before beside one of after.
func TestResumeProvesStagedPages(t *testing.T) {
	t.Parallel()
	const k = 3
	before := namedLayer{prefix: "f", n: 47}
	shift := namedLayer{prefix: "f", n: 46, other: map[int]string{}}
	for i := range 46 {
		shift.other[i] = fmt.Sprintf("f.%d", i+1) // f.0 removed
	}
	for name, tc := range map[string]struct {
		after   namedLayer
		restart bool
	}{
		"unchanged":                  {before, false},
		"every feature replaced":     {namedLayer{prefix: "g", n: 47}, true},
		"one feature of page 2 gone": {namedLayer{prefix: "f", n: 47, other: map[int]string{25: "h.25"}}, true},
		"one feature of page 0 gone": {shift, true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setupDL(t, config.BuiltinDeadLetter(), withFeeds(`
      - id: parcels
        kind: wfs
        url: %[1]s/wfs
        type_name: parcels
        page_size: 10
`))
			b.server.AddLayer("parcels", before)
			var tripped atomic.Bool
			b.server.SetFault(func(r wfstest.Request) *wfstest.Fault {
				if r.Page == k-1 && tripped.CompareAndSwap(false, true) {
					b.trip(t)
				}
				return nil
			})
			_, err := b.manager.Poll(b.ctx, "county/parcels")
			var de *deadletter.DeferError
			if !errors.As(err, &de) {
				t.Fatalf("poll error = %v, want parked", err)
			}
			l := b.letter(t, "parcels")
			if l.Checkpoint.Page != k {
				t.Fatalf("checkpoint %+v, want page %d", l.Checkpoint, k)
			}
			b.server.AddLayer("parcels", tc.after)
			asked := make([]int, 5)
			for p := range asked {
				asked[p] = b.server.PageRequests("parcels", p)
			}
			b.advanceTo(t, l.RetryAfter)
			if claimed, err := b.replayer.RunOnce(b.ctx); err != nil || len(claimed) != 1 {
				t.Fatalf("replay claimed %d rows (err %v), want 1", len(claimed), err)
			}
			if l := b.letter(t, "parcels"); l.Status != deadletter.StatusDone {
				t.Fatalf("dead letter %s after the replay, want done (last error %q)", l.Status, l.LastError)
			}
			got := b.featureIDs(t, "parcels")
			slices.Sort(got)
			if want := tc.after.ids(); !slices.Equal(got, want) {
				t.Errorf("stored ids %v,\nwant the layer as it is now %v", got, want)
			}
			// The replay's requests of page 0 and of page k-1: the proof
			// reads k-1 once; a restart reads every page from 0.
			first, proof := b.server.PageRequests("parcels", 0)-asked[0], b.server.PageRequests("parcels", k-1)-asked[k-1]
			if tc.restart && (first != 1 || proof != 2) {
				t.Errorf("replay asked page 0 %d times and page %d %d times, want 1 and 2: proof, then a start over", first, k-1, proof)
			}
			if !tc.restart && (first != 0 || proof != 1) {
				t.Errorf("replay asked page 0 %d times and page %d %d times, want 0 and 1: the proof alone", first, k-1, proof)
			}
			var pages int
			if err := b.pool.QueryRow(b.ctx, `SELECT pages FROM polls WHERE feed = 'parcels' AND status = 'succeeded'`).Scan(&pages); err != nil || pages != 5 {
				t.Errorf("the resumed poll recorded %d pages (%v), want 5", pages, err)
			}
		})
	}
}

// TestResumeProofRefusedKeepsCheckpoint: a replay whose read of the page
// before its checkpoint fails (the origin still answering 503) is parked
// again at the same page, every staged page kept: the proof page is never
// given up for one the replay did not read.
func TestResumeProofRefusedKeepsCheckpoint(t *testing.T) {
	t.Parallel()
	const k = 3
	b := setupDL(t, config.BuiltinDeadLetter(), withFeeds(`
      - id: parcels
        kind: wfs
        url: %[1]s/wfs
        type_name: parcels
        page_size: 10
`))
	b.server.AddLayer("parcels", namedLayer{prefix: "f", n: 47})
	var tripped atomic.Bool
	b.server.SetFault(func(r wfstest.Request) *wfstest.Fault {
		if r.Page == k-1 && tripped.CompareAndSwap(false, true) {
			b.trip(t)
		}
		return nil
	})
	if _, err := b.manager.Poll(b.ctx, "county/parcels"); !errors.As(err, new(*deadletter.DeferError)) {
		t.Fatalf("poll error = %v, want parked", err)
	}
	l := b.letter(t, "parcels")
	b.server.SetFault(func(r wfstest.Request) *wfstest.Fault {
		return &wfstest.Fault{Status: http.StatusServiceUnavailable, Body: "down"}
	})
	b.advanceTo(t, l.RetryAfter)
	if claimed, err := b.replayer.RunOnce(b.ctx); err != nil || len(claimed) != 1 {
		t.Fatalf("replay claimed %d rows (err %v), want 1", len(claimed), err)
	}
	again := b.letter(t, "parcels")
	var staged int
	if err := b.pool.QueryRow(b.ctx, `SELECT count(*) FROM staged_pages WHERE poll_id = $1`, again.Checkpoint.PollID).Scan(&staged); err != nil {
		t.Fatal(err)
	}
	if again.Status != deadletter.StatusPending || again.Checkpoint.PollID != l.Checkpoint.PollID || again.Checkpoint.Page != k || staged != k {
		t.Errorf("after a failed replay: letter %s at %+v with %d pages staged, want pending at page %d of poll %d with %d staged",
			again.Status, again.Checkpoint, staged, k, l.Checkpoint.PollID, k)
	}
}

// A page that fails after its retries on a closed breaker parks the poll as
// failed, with a backoff capped at the feed's schedule interval; a bad type
// name is our mistake and fails the poll without parking it.
func TestFailedAfterRetriesParksButOurErrorFails(t *testing.T) {
	t.Parallel()
	cfg := config.BuiltinDeadLetter()
	cfg.FailedBackoff = config.Duration(time.Hour)
	p := fastPolicy() // trips only after 5 failures: this stays a closed-breaker failure
	b := setupDL(t, cfg, withPolicy(p), withFeeds(`
      - id: parcels
        kind: wfs
        url: %[1]s/wfs
        type_name: parcels
        page_size: 10
        sort_by: pin
        schedule: "*/2 * * * *"
      - id: typo
        kind: wfs
        url: %[1]s/wfs
        type_name: parcelz
`))
	b.server.AddLayer("parcels", layertest.Parcels{N: 30})
	b.server.SetFault(func(r wfstest.Request) *wfstest.Fault {
		if r.Layer == "parcels" && r.Page == 1 {
			return &wfstest.Fault{Status: 503, Body: "busy"}
		}
		return nil
	})
	start := b.clock.Now() // the injected clock, which the poll does not move
	_, err := b.manager.Poll(b.ctx, "county/parcels")
	var de *deadletter.DeferError
	var re *breaker.RetryError
	if !errors.As(err, &de) || !errors.As(err, &re) || de.Reason != deadletter.ReasonFailed {
		t.Fatalf("poll error = %v, want parked as failed after retries", err)
	}
	l := b.letter(t, "parcels")
	// Exactly, on the injected clock (PostgreSQL keeps microseconds).
	if wait := l.RetryAfter.Sub(start); wait > 2*time.Minute || wait <= 2*time.Minute-time.Microsecond {
		t.Errorf("retry_after is %s away, want the 1h backoff capped at the 2m interval", wait)
	}
	if l.Checkpoint.Page != 1 {
		t.Errorf("checkpoint page %d, want 1", l.Checkpoint.Page)
	}

	_, err = b.manager.Poll(b.ctx, "county/typo")
	if err == nil || errors.As(err, &de) {
		t.Fatalf("poll of a bad type name: %v, want a plain failure", err)
	}
	if ls, _ := b.queue.List(b.ctx, deadletter.Filter{Feed: "county/typo"}); len(ls) != 0 {
		t.Errorf("a bad type name parked %d dead letters, want none", len(ls))
	}
	if p := b.lastPoll(t, "typo"); p.Status != "failed" {
		t.Errorf("typo poll is %s, want failed", p.Status)
	}
}

// A checkpoint older than max_checkpoint_age is not continued: the replay
// drops its pages and polls from page 0 under a new poll.
func TestStaleCheckpointRestartsFromTheFirstPage(t *testing.T) {
	t.Parallel()
	b := setupDL(t, config.BuiltinDeadLetter())
	b.server.AddLayer("parcels", layertest.Parcels{N: 30})
	var tripped atomic.Bool
	b.server.SetFault(func(r wfstest.Request) *wfstest.Fault {
		if r.Page == 1 && tripped.CompareAndSwap(false, true) {
			b.trip(t)
		}
		return nil
	})
	if _, err := b.manager.Poll(b.ctx, "county/parcels"); err == nil {
		t.Fatal("poll succeeded through an open breaker")
	}
	l := b.letter(t, "parcels")
	if _, err := b.pool.Exec(b.ctx, `UPDATE dead_letter SET checkpoint_at = now() - interval '7 hours', retry_after = now() WHERE id = $1`, l.ID); err != nil {
		t.Fatal(err)
	}
	b.advanceTo(t, b.originState(t).OpenUntil)
	if _, err := b.replayer.RunOnce(b.ctx); err != nil {
		t.Fatal(err)
	}
	if got := b.letter(t, "parcels"); got.Status != deadletter.StatusDone {
		t.Fatalf("dead letter %s, want done (last error %q)", got.Status, got.LastError)
	}
	if n := b.server.PageRequests("parcels", 0); n != 2 {
		t.Errorf("page 0 requested %d times, want 2: the stale checkpoint restarts from it", n)
	}
	var status string
	var staged int
	if err := b.pool.QueryRow(b.ctx, `SELECT status, (SELECT count(*) FROM staged_pages WHERE poll_id = $1)
		FROM polls WHERE id = $1`, l.Checkpoint.PollID).Scan(&status, &staged); err != nil {
		t.Fatal(err)
	}
	if status != "refused" || staged != 0 {
		t.Errorf("old poll is %s with %d staged pages, want refused with its staging discarded", status, staged)
	}
}

// A scheduled tick of a parked feed does not poll it: the dead letter is its
// one path. (Neither does the catch-up at start.)
func TestScheduledTickSkipsParkedFeed(t *testing.T) {
	t.Parallel()
	var sig feeds.Signals
	b := setupDL(t, config.BuiltinDeadLetter(), withFeeds(`
      - id: roads
        kind: geojson
        url: %[1]s/geojson/roads.geojson
        schedule: "@every 1h"
`), withManagerOptions(feeds.WithMaxJitter(0), feeds.WithSignals(&sig)))
	b.server.AddLayer("roads", layertest.Parcels{N: 3})
	if _, err := b.queue.Park(b.ctx, deadletter.Parking{Jurisdiction: "county", Feed: "roads", URL: b.url,
		Origin: b.origin, Reason: deadletter.ReasonCircuitOpen, RetryAfter: b.clock.Now().Add(24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := b.manager.Start(b.ctx); err != nil {
		t.Fatal(err)
	}
	// The feed never succeeded: the catch-up at start finds it parked.
	if r := awaitRun(t, &sig); r.Key != "county/roads" || !r.Planned.IsZero() || r.Outcome != "parked" {
		t.Errorf("catch-up: %+v, want county/roads skipped as parked", r)
	}
	tick := b.clock.Now().Truncate(time.Hour)
	for range 2 {
		tick = tick.Add(time.Hour)
		b.advanceTo(t, tick)
		if r := awaitRun(t, &sig); r.Key != "county/roads" || !r.Planned.Equal(tick) || r.Outcome != "parked" {
			t.Errorf("tick at %s: %+v, want county/roads skipped as parked", tick.Format(time.TimeOnly), r)
		}
	}
	if n := b.server.Requests(); n != 0 {
		t.Errorf("%d requests for a parked feed, want none", n)
	}
}

// An origin open across stuck_open_after consecutive cooldowns is recorded
// as stuck, and its feeds show as parked with the breaker's state.
func TestStuckOpenOriginParksItsFeeds(t *testing.T) {
	t.Parallel()
	b := setupDL(t, config.BuiltinDeadLetter())
	w := pgshare.NewOriginWatch(b.pool, 2, nil)
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	w.OnStateChange(breaker.StateChange{Origin: b.origin, From: breaker.StateClosed, To: breaker.StateOpen, At: at,
		RetryAfter: time.Minute, ConsecutiveOpens: 1})
	w.OnStateChange(breaker.StateChange{Origin: b.origin, From: breaker.StateHalfOpen, To: breaker.StateOpen, At: at.Add(time.Second),
		RetryAfter: 2 * time.Minute, ConsecutiveOpens: 2})
	w.Stop()

	var status, state string
	var stuck bool
	err := b.pool.QueryRow(b.ctx, `SELECT status, breaker_state, origin_stuck FROM feed_freshness
		WHERE jurisdiction = 'county' AND feed = 'parcels'`).Scan(&status, &state, &stuck)
	if err != nil {
		t.Fatal(err)
	}
	if status != "parked" || state != "open" || !stuck {
		t.Errorf("feed_freshness: %s, breaker %s, stuck %v; want parked, open, stuck", status, state, stuck)
	}
}
