package feeds_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/internal/layertest"
)

// Four feeds on one origin of one poll slot, on cron minutes so that the
// test decides the order their ticks come in.
const orderFeeds = `
      - {id: holder, kind: geojson, url: "%[1]s/geojson/holder.geojson"}
      - {id: fresh1, kind: geojson, url: "%[1]s/geojson/fresh1.geojson", schedule: "5 * * * *"}
      - {id: fresh2, kind: geojson, url: "%[1]s/geojson/fresh2.geojson", schedule: "6 * * * *"}
      - {id: never, kind: geojson, url: "%[1]s/geojson/never.geojson", schedule: "7 * * * *"}
`

// TestOriginSlotsServeNeverLoadedFeedFirst: while a poll holds the
// origin's one slot, the ticks of two fresh feeds come, then the tick of
// a feed that never loaded. The freed slot goes to the never-loaded feed,
// then to the fresh ones in the order they came: the polls reach the
// origin in that order. The manager knows which feeds are fresh from the
// database at start.
func TestOriginSlotsServeNeverLoadedFeedFirst(t *testing.T) {
	t.Parallel()
	rig := holdOrigin(t, orderFeeds, []string{"fresh1", "fresh2"})
	b, clock, sig, entered, gate, held := rig.b, rig.clock, rig.sig, rig.entered, rig.gate, rig.held
	if u := await(t, entered, "the holder's fetch"); !strings.HasSuffix(u, "/holder.geojson") {
		t.Fatalf("first fetch: %s, want the holder's", u)
	}
	for _, step := range []struct {
		at   time.Duration
		feed string
	}{{5 * time.Minute, "fresh1"}, {6 * time.Minute, "fresh2"}, {7 * time.Minute, "never"}} {
		b.advanceTo(t, clock.Now().Truncate(time.Hour).Add(step.at))
		if key := await(t, sig.OriginWaiting, "a tick waiting for the origin"); key != "county/"+step.feed {
			t.Fatalf("at :%02.0f %s waits for the origin, want %s", step.at.Minutes(), key, step.feed)
		}
	}
	gate <- struct{}{}
	if err := await(t, held, "the holder's poll"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"never", "fresh1", "fresh2"} {
		if u := await(t, entered, "the next fetch"); !strings.HasSuffix(u, "/"+want+".geojson") {
			t.Fatalf("next fetch: %s, want %s's", u, want)
		}
		gate <- struct{}{}
		if r := awaitRun(t, sig); r.Key != "county/"+want || r.Outcome != "polled" {
			t.Fatalf("run: %+v, want %s polled", r, want)
		}
	}
	b.manager.Stop()
	if rest := pending(sig.Ran); len(rest) != 0 {
		t.Errorf("more runs than the three ticks: %+v", rest)
	}
}

// TestOriginSlotsSkipFreshTickPastItsInterval: a fresh feed's tick that
// has waited longer than its interval for the origin's one slot is
// skipped (origin_busy, counted) when the slot is freed, and the slot
// goes to the never-loaded feed that waited behind it.
func TestOriginSlotsSkipFreshTickPastItsInterval(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	rig := holdOrigin(t, `
      - {id: holder, kind: geojson, url: "%[1]s/geojson/holder.geojson"}
      - {id: fresh1, kind: geojson, url: "%[1]s/geojson/fresh1.geojson", schedule: "5 * * * *"}
      - {id: never, kind: geojson, url: "%[1]s/geojson/never.geojson", schedule: "7 * * * *"}
`, []string{"fresh1"}, feeds.WithRegisterer(reg))
	b, clock, sig, entered, gate, held := rig.b, rig.clock, rig.sig, rig.entered, rig.gate, rig.held
	await(t, entered, "the holder's fetch")
	hour := clock.Now().Truncate(time.Hour)
	b.advanceTo(t, hour.Add(5*time.Minute))
	if key := await(t, sig.OriginWaiting, "fresh1's tick waiting"); key != "county/fresh1" {
		t.Fatalf("%s waits, want county/fresh1", key)
	}
	b.advanceTo(t, hour.Add(7*time.Minute))
	if key := await(t, sig.OriginWaiting, "never's tick waiting"); key != "county/never" {
		t.Fatalf("%s waits, want county/never", key)
	}
	// fresh1's next tick finds its first still waiting.
	b.advanceTo(t, hour.Add(time.Hour+6*time.Minute))
	if r := awaitRun(t, sig); r.Key != "county/fresh1" || r.Outcome != "running" {
		t.Fatalf("run: %+v, want fresh1's second tick skipped as running", r)
	}
	gate <- struct{}{}
	if err := await(t, held, "the holder's poll"); err != nil {
		t.Fatal(err)
	}
	if u := await(t, entered, "the next fetch"); !strings.HasSuffix(u, "/never.geojson") {
		t.Fatalf("next fetch: %s, want never's", u)
	}
	gate <- struct{}{}
	got := map[string]string{}
	for range 2 {
		r := awaitRun(t, sig)
		got[r.Key] = r.Outcome
	}
	if got["county/fresh1"] != "origin_busy" || got["county/never"] != "polled" {
		t.Fatalf("runs: %v; want fresh1's first tick skipped as origin_busy (it waited 61 min on an hourly schedule) and never polled", got)
	}
	if n := counter(t, reg, "ingestd_feeds_ticks_skipped_total", "reason", "origin_busy"); n != 1 {
		t.Errorf("ticks skipped for origin_busy: %v, want 1", n)
	}
	b.manager.Stop()
	if rest := pending(sig.Ran); len(rest) != 0 {
		t.Errorf("more runs: %+v", rest)
	}
}

// originRig is one origin of one poll slot whose slot the holder's poll
// holds: its fetch has entered and waits on gate; held gets the poll's
// outcome.
type originRig struct {
	b       *bundle
	clock   *feeds.FakeClock
	sig     *feeds.Signals
	entered chan string
	gate    chan struct{}
	held    chan error
}

// holdOrigin sets up feedsYAML's feeds on one origin of one poll slot,
// marks the feeds fresh as loaded ten minutes ago, starts the manager and
// polls county/holder until its fetch holds the slot.
func holdOrigin(t *testing.T, feedsYAML string, fresh []string, opts ...feeds.Option) *originRig {
	t.Helper()
	rig := &originRig{clock: schedClock(), sig: &feeds.Signals{}, entered: make(chan string, 4),
		gate: make(chan struct{}), held: make(chan error, 1)}
	opts = append(opts, feeds.WithSignals(rig.sig), feeds.WithMaxJitter(0), feeds.WithCatchUp(false),
		feeds.WithOriginPollSlots(func(string) int { return 1 }))
	rig.b = setup(t, withFeeds(feedsYAML), withClock(rig.clock),
		withFetcher(func(f feeds.Fetcher) feeds.Fetcher {
			return gatedFetcher{Fetcher: f, entered: rig.entered, gate: rig.gate}
		}),
		withManagerOptions(opts...))
	b := rig.b
	for _, l := range append([]string{"holder", "never"}, fresh...) {
		b.server.AddLayer(l, layertest.Parcels{N: 3})
	}
	if _, err := b.pool.Exec(b.ctx, `UPDATE feed_status SET last_success_at = $1
		WHERE jurisdiction = 'county' AND feed = ANY ($2)`, rig.clock.Now().Add(-10*time.Minute), fresh); err != nil {
		t.Fatal(err)
	}
	if err := b.manager.Start(b.ctx); err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := b.manager.Poll(b.ctx, "county/holder")
		rig.held <- err
	}()
	return rig
}
