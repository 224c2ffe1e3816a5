package feeds_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/internal/testwait"
	"github.com/ingestd/ingestd/migrations/pgtest"
	"github.com/ingestd/ingestd/wfs/wfstest"
)

// bundle is what a poll test needs: a fixture county server, a fresh
// database, and a manager polling one through the other.
type bundle struct {
	ctx      context.Context
	server   *wfstest.Server
	url      string // the fixture server's base URL
	pool     *pgxpool.Pool
	store    *postgis.Store
	breakers *breaker.Registry
	manager  *feeds.Manager
	cfg      *config.Config
	// clock is the manager's and the breakers' clock when the test set
	// one (withClock), nil otherwise.
	clock *feeds.FakeClock
}

type setupOptions struct {
	feedsYAML   string // the feeds: list of jurisdiction "county"; %s is the server URL
	policy      breaker.Policy
	managerOpts []feeds.Option
	fetcher     func(feeds.Fetcher) feeds.Fetcher // nil: the registry's fetchers themselves
	// wrapStore, when set, wraps the store the manager uses (setupOGCAPI).
	wrapStore func(*postgis.Store) feeds.Store
	clock     *feeds.FakeClock
}

type setupOption func(*setupOptions)

// withFeeds sets the YAML of the test jurisdiction's feeds list; every %[1]s is
// replaced by the fixture server's URL.
func withFeeds(yaml string) setupOption { return func(o *setupOptions) { o.feedsYAML = yaml } }

func withPolicy(p breaker.Policy) setupOption { return func(o *setupOptions) { o.policy = p } }

// withClock runs the manager and the breakers on c, so that the test moves
// time: ticks, heartbeats, cooldowns and retry_after come when it says.
func withClock(c *feeds.FakeClock) setupOption {
	return func(o *setupOptions) {
		o.clock = c
		o.managerOpts = append(o.managerOpts, feeds.WithClock(c))
	}
}

// breakerConfig is the registry's configuration for the options: a fake
// clock, when set, is the breakers' clock too.
func (o *setupOptions) breakerConfig() breaker.Config {
	c := breaker.Config{MaxInFlight: 8, Policy: o.policy}
	if o.clock != nil {
		c.Clock = o.clock
	}
	return c
}

func withManagerOptions(opts ...feeds.Option) setupOption {
	return func(o *setupOptions) { o.managerOpts = append(o.managerOpts, opts...) }
}

// withFetcher makes the manager fetch through wrap(client) instead of the
// client, for a test that must make a fetch misbehave where no server can.
func withFetcher(wrap func(feeds.Fetcher) feeds.Fetcher) setupOption {
	return func(o *setupOptions) { o.fetcher = wrap }
}

// fastPolicy retries quickly and never paces, so tests take milliseconds.
func fastPolicy() breaker.Policy {
	p := breaker.DefaultPolicy()
	p.BackoffBase = time.Millisecond
	p.BackoffMax = 5 * time.Millisecond
	p.RateLimit = 0
	p.RetryBudgetMin = 100
	return p
}

const defaultFeeds = `
      - id: parcels
        kind: wfs
        url: %[1]s/wfs
        type_name: parcels
        page_size: 10
        sort_by: pin
        id_property: pin
`

func setup(t *testing.T, opts ...setupOption) *bundle {
	t.Helper()
	o := setupOptions{feedsYAML: defaultFeeds, policy: fastPolicy()}
	for _, opt := range opts {
		opt(&o)
	}
	server := wfstest.New()
	ts := httptest.NewServer(server)
	t.Cleanup(ts.Close)

	// The production defaults' timeouts (10m, 60s): a deadline here only
	// ends a hang, on a machine as busy as it may be.
	yaml := fmt.Sprintf(`
defaults:
  schedule: "0 5 * * *"
  timeout: 10m
  request_timeout: 60s
jurisdictions:
  - id: county
    timezone: America/New_York
    feeds:
`+o.feedsYAML, ts.URL)
	cfg, err := config.Parse("test.yaml", []byte(yaml), nil)
	if err != nil {
		t.Fatalf("config: %v\n%s", err, yaml)
	}

	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	pool := pgtest.Pool(t)
	store := postgis.New(pool)
	breakers := breaker.NewRegistry(o.breakerConfig(), logger)
	var fetcher feeds.Fetcher = feeds.NewFetchers(kindconf.FetcherDeps{HTTP: ts.Client(), Breakers: breakers, Logger: logger})
	if o.fetcher != nil {
		fetcher = o.fetcher(fetcher)
	}
	manager := feeds.NewManager(store, fetcher, append([]feeds.Option{feeds.WithLogger(logger)}, o.managerOpts...)...)
	t.Cleanup(manager.Stop)

	b := &bundle{ctx: t.Context(), server: server, url: ts.URL, pool: pool, store: store,
		breakers: breakers, manager: manager, cfg: cfg, clock: o.clock}
	if err := manager.Update(b.ctx, cfg); err != nil {
		t.Fatalf("manager.Update: %v", err)
	}
	return b
}

// testWriter sends log lines to t.Log, so they show only for failing tests.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// featureIDs returns the feature ids of a feed, sorted.
func (b *bundle) featureIDs(t *testing.T, feed string) []string {
	t.Helper()
	rows, err := b.pool.Query(b.ctx, `SELECT feature_id FROM features WHERE jurisdiction = 'county' AND feed = $1 ORDER BY feature_id`, feed)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// featureDigest fingerprints every stored row of a feed (id, geometry,
// properties, hash, timestamps, and the row versions of its layer table,
// which a rewrite of an unchanged row would move), to prove a failed poll
// touched nothing.
func (b *bundle) featureDigest(t *testing.T, feed string) string {
	t.Helper()
	var digest, layer string
	err := b.pool.QueryRow(b.ctx, `
		SELECT coalesce(md5(string_agg(feature_id || ST_AsEWKT(geom) || properties::text
			|| encode(content_hash, 'hex') || changed_at::text, '|' ORDER BY feature_id)), ''),
			coalesce((SELECT layer FROM feed_layers WHERE jurisdiction = 'county' AND feed = $1), '')
		FROM features WHERE jurisdiction = 'county' AND feed = $1`, feed).Scan(&digest, &layer)
	if err != nil {
		t.Fatal(err)
	}
	if layer == "" {
		return digest
	}
	var versions string
	if err := b.pool.QueryRow(b.ctx, `SELECT coalesce(md5(string_agg(feature_id || xmin::text, '|' ORDER BY feature_id)), '') FROM `+layer).Scan(&versions); err != nil {
		t.Fatal(err)
	}
	return digest + "/" + versions
}

type pollRow struct {
	Status   string
	Error    string
	Features int
}

// lastPoll returns the newest polls row of a feed.
func (b *bundle) lastPoll(t *testing.T, feed string) pollRow {
	t.Helper()
	var r pollRow
	err := b.pool.QueryRow(b.ctx, `
		SELECT status, coalesce(error, ''), coalesce(features, 0) FROM polls
		WHERE jurisdiction = 'county' AND feed = $1 ORDER BY id DESC LIMIT 1`, feed).Scan(&r.Status, &r.Error, &r.Features)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (b *bundle) freshness(t *testing.T, feed string) (status string, count int) {
	t.Helper()
	var n *int
	err := b.pool.QueryRow(b.ctx, `SELECT status, feature_count FROM feed_freshness WHERE jurisdiction = 'county' AND feed = $1`, feed).Scan(&status, &n)
	if err != nil {
		t.Fatal(err)
	}
	if n != nil {
		count = *n
	}
	return status, count
}

// hangCeiling bounds every wait for an event in these tests. It only
// catches a hang (an event that never comes, a poll that would sleep for
// minutes): nothing here asserts how fast the machine is, and on a busy
// two-core machine an event may take seconds.
const hangCeiling = testwait.Hang

// await returns the next value of ch, or fails the test if none comes
// before the hang ceiling.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	return testwait.Await(t, what, ch)
}

// awaitRun waits for the next tick, catch-up or recovery poll that ended.
func awaitRun(t *testing.T, sig *feeds.Signals) feeds.TickRun {
	t.Helper()
	return await(t, sig.Ran, "tick")
}

// pending returns what ch holds now, without waiting: after Stop (which
// waits for every tick and catch-up it started), the whole rest of a
// manager's signals.
func pending[T any](ch <-chan T) []T {
	var out []T
	for {
		select {
		case v := <-ch:
			out = append(out, v)
		default:
			return out
		}
	}
}

// advanceTo moves the fake clock to at, and what the database decides by
// its own clock (now(), which a test cannot move) with it: a claim made
// less than half an interval ago is refused, so the claims' times move back
// as far as the clock moves on; and a dead letter is claimed once its
// retry_after has passed, so those due by at are made due now. (PostgreSQL
// keeps microseconds: at is rounded up to the next one.)
func (b *bundle) advanceTo(t *testing.T, at time.Time) {
	t.Helper()
	if r := at.Round(time.Microsecond); r.Before(at) {
		at = r.Add(time.Microsecond)
	} else {
		at = r
	}
	d := at.Sub(b.clock.Now())
	if _, err := b.pool.Exec(b.ctx, `UPDATE feed_status SET poll_claimed_at = poll_claimed_at - $1::interval
		WHERE poll_claimed_at IS NOT NULL`, d); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(b.ctx, `UPDATE dead_letter SET retry_after = now()
		WHERE status = 'pending' AND retry_after <= $1 AND retry_after > now()`, at); err != nil {
		t.Fatal(err)
	}
	b.clock.Set(at)
}

// waitFor polls cond until it holds, failing the test after d: for state
// that no signal announces (a gauge, a row). d is a ceiling that only
// catches a hang; make it generous.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond) // the poll's interval, not a wait for an event
	}
}
