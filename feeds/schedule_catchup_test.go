package feeds_test

import (
	"testing"
	"time"

	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/internal/layertest"
)

// A feed on "@every" whose phase lies anywhere in its interval is still
// polled at start when it is overdue, not at its phase: the catch-up comes
// before the clock moves. Its ticks then come at its phase, once per
// interval.
func TestOverdueEveryFeedIsCaughtUpBeforeItsPhase(t *testing.T) {
	t.Parallel()
	var sig feeds.Signals
	b := setup(t, withFeeds(hourlyRoads), withClock(schedClock()),
		withManagerOptions(feeds.WithSignals(&sig)))
	b.server.AddLayer("parcels", layertest.Parcels{N: 12})
	b.server.AddLayer("roads", layertest.Parcels{N: 3})
	for _, key := range []string{"county/parcels", "county/roads"} {
		if _, err := b.manager.Poll(b.ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	// An hour and a minute later roads' last success is older than its
	// hour; parcels' (daily) is not. The database records successes on its
	// own clock: roads' is set on the manager's.
	b.advanceTo(t, b.clock.Now().Add(time.Hour+time.Minute))
	start := b.clock.Now()
	if _, err := b.pool.Exec(b.ctx, `UPDATE feed_status SET last_success_at = $1
		WHERE jurisdiction = 'county' AND feed = 'roads'`, start.Add(-time.Hour-time.Minute)); err != nil {
		t.Fatal(err)
	}

	if err := b.manager.Start(b.ctx); err != nil {
		t.Fatal(err)
	}
	if r := awaitRun(t, &sig); r != (feeds.TickRun{Key: "county/roads", Outcome: "polled"}) {
		t.Fatalf("first run after start: %+v, want the catch-up of county/roads", r)
	}
	b.advanceTo(t, start.Add(time.Hour))
	r := awaitRun(t, &sig)
	if r.Key != "county/roads" || r.Outcome != "polled" || !r.Planned.After(start) || r.Planned.After(start.Add(time.Hour)) {
		t.Fatalf("run in the hour after start: %+v, want county/roads' tick planned within it", r)
	}
	if r.Planned.Equal(r.Planned.Truncate(time.Hour)) {
		t.Errorf("roads ticked on the hour (%s): no phase", r.Planned.Format(time.TimeOnly))
	}
	b.manager.Stop()
	if rest := pending(sig.Ran); len(rest) != 0 {
		t.Errorf("more runs than the catch-up and one tick of roads: %+v", rest)
	}
}
