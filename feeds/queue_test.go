package feeds_test

import (
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/migrations/pgtest"
	"github.com/ingestd/ingestd/wfs/wfstest"
)

// TestQueuedPollsKeepTheirTimeout is a busy hour in small: six feeds due at
// once, one request slot (max_in_flight: 1), a server that takes 2 s a
// request, and a timeout of 5 s, shorter than the line (12 s). A poll's
// timeout is its own work, so all six succeed; the ones at the back of the
// line waited longer than their timeout, and that wait is on their rows
// and in the histogram. (When the timeout ran in line, the last polls
// failed "poll timeout after 0 pages" without asking the server anything.)
func TestQueuedPollsKeepTheirTimeout(t *testing.T) {
	const (
		feedCount = 6
		answerIn  = 2 * time.Second // the server's time per request
		timeout   = 5 * time.Second // the feeds' timeout: < the line
	)
	server := wfstest.New()
	server.AddLayer("parcels", layertest.Parcels{N: 5})
	// The first request is held until every poll has started, so that all
	// six are in line behind it; each request then takes answerIn (the
	// slow county this is about).
	allStarted := make(chan struct{})
	var first sync.Once
	server.SetFault(func(r wfstest.Request) *wfstest.Fault {
		first.Do(func() { <-allStarted })
		return &wfstest.Fault{Delay: answerIn}
	})
	ts := httptest.NewServer(server)
	t.Cleanup(ts.Close)

	var yaml strings.Builder
	fmt.Fprintf(&yaml, "max_in_flight: 1\ndefaults:\n  timeout: %s\n  request_timeout: %s\njurisdictions:\n  - id: county\n    feeds:\n", timeout, timeout)
	for i := range feedCount {
		fmt.Fprintf(&yaml, "      - id: f%d\n        kind: geojson\n        url: %s/geojson/parcels.geojson\n", i, ts.URL)
	}
	cfg, err := config.Parse("queue.yaml", []byte(yaml.String()), nil)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	pool := pgtest.Pool(t)
	reg := prometheus.NewRegistry()
	breakers := breaker.NewRegistry(breaker.Config{MaxInFlight: cfg.MaxInFlight, Policy: fastPolicy()}, logger)
	mgr := feeds.NewManager(postgis.New(pool), feeds.NewFetchers(kindconf.FetcherDeps{HTTP: ts.Client(), Breakers: breakers, Logger: logger}),
		feeds.WithLogger(logger), feeds.WithRegisterer(reg))
	t.Cleanup(mgr.Stop)
	ctx := t.Context()
	if err := mgr.Update(ctx, cfg); err != nil {
		t.Fatal(err)
	}

	errs := make(chan error, feedCount)
	for i := range feedCount {
		go func() {
			_, err := mgr.Poll(ctx, fmt.Sprintf("county/f%d", i))
			errs <- err
		}()
	}
	running := gaugeValue(t, reg, "ingestd_feeds_polls_running")
	waitFor(t, 60*time.Second, "all six polls started", func() bool { return running() == feedCount })
	close(allStarted)
	for range feedCount {
		if err := <-errs; err != nil {
			t.Errorf("a queued poll failed: %v", err)
		}
	}

	var succeeded int
	var longest time.Duration
	var waitedSum float64
	rows, err := pool.Query(ctx, `SELECT status, coalesce(queue_wait, interval '0') FROM polls WHERE jurisdiction = 'county'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var status string
		var wait time.Duration
		if err := rows.Scan(&status, &wait); err != nil {
			t.Fatal(err)
		}
		if status == string(feeds.PollSucceeded) {
			succeeded++
		}
		longest = max(longest, wait)
		waitedSum += wait.Seconds()
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d polls succeeded; the longest wait in line was %s (timeout %s)", succeeded, feedCount, longest.Round(time.Millisecond), timeout)
	if succeeded != feedCount {
		t.Errorf("%d of %d polls succeeded, want all", succeeded, feedCount)
	}
	// The last in line waited for five requests of answerIn each: longer
	// than its timeout, which is the case this test is about.
	if longest <= timeout {
		t.Errorf("the longest wait in line was %s, not more than the timeout %s: the line this test needs did not form", longest, timeout)
	}

	// The histogram saw every poll, and its sum is the rows' waits.
	h := histogram(t, reg, "ingestd_feeds_poll_queue_wait_seconds")
	if h.GetSampleCount() != feedCount {
		t.Errorf("ingestd_feeds_poll_queue_wait_seconds has %d samples, want %d", h.GetSampleCount(), feedCount)
	}
	if d := h.GetSampleSum() - waitedSum; d > 0.001 || d < -0.001 {
		t.Errorf("ingestd_feeds_poll_queue_wait_seconds sums %.3f s, polls.queue_wait %.3f s", h.GetSampleSum(), waitedSum)
	}
}

// TestQueueTimeoutIsNotTheServers: a poll that waits in line for longer
// than its queue_timeout fails with its own message, naming the wait, not
// as a timeout of the server, which it never asked; the breaker counts
// nothing for it.
func TestQueueTimeoutIsNotTheServers(t *testing.T) {
	server := wfstest.New()
	server.AddLayer("parcels", layertest.Parcels{N: 5})
	release := make(chan struct{})
	holding := make(chan struct{})
	var once sync.Once
	server.SetFault(func(r wfstest.Request) *wfstest.Fault {
		// The first request holds the only slot until the test lets go.
		once.Do(func() { close(holding); <-release })
		return nil
	})
	ts := httptest.NewServer(server)
	t.Cleanup(ts.Close)
	cfg, err := config.Parse("queue.yaml", []byte(fmt.Sprintf(`
max_in_flight: 1
jurisdictions:
  - id: county
    feeds:
      - id: first
        kind: geojson
        url: %[1]s/geojson/parcels.geojson
      - id: behind
        kind: geojson
        url: %[1]s/geojson/parcels.geojson
        queue_timeout: 1s
`, ts.URL)), nil)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	pool := pgtest.Pool(t)
	breakers := breaker.NewRegistry(breaker.Config{MaxInFlight: cfg.MaxInFlight, Policy: fastPolicy()}, logger)
	mgr := feeds.NewManager(postgis.New(pool), feeds.NewFetchers(kindconf.FetcherDeps{HTTP: ts.Client(), Breakers: breakers, Logger: logger}), feeds.WithLogger(logger))
	t.Cleanup(mgr.Stop)
	ctx := t.Context()
	if err := mgr.Update(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	firstDone := make(chan error, 1)
	go func() {
		_, err := mgr.Poll(ctx, "county/first")
		firstDone <- err
	}()
	<-holding
	_, err = mgr.Poll(ctx, "county/behind")
	close(release)
	if err == nil {
		t.Fatal("the poll behind a held slot succeeded; want it to fail on its queue_timeout")
	}
	msg := err.Error()
	if !strings.Contains(msg, "in line for a request slot or a database connection (queue_timeout 1s)") || strings.Contains(msg, "poll timeout") {
		t.Errorf("error %q: want the queue's own message, not a poll timeout", msg)
	}
	var stored string
	if err := pool.QueryRow(ctx, `SELECT error FROM polls WHERE feed = 'behind'`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stored, "in line for a request slot") {
		t.Errorf("polls.error = %q, want the queue's message", stored)
	}
	if err := <-firstDone; err != nil {
		t.Errorf("the poll holding the slot: %v", err)
	}
	for _, o := range breakers.Snapshot() {
		if o.Counts.Failures != 0 || o.State != breaker.StateClosed {
			t.Errorf("origin %s: %+v; a wait in line is no failure of the server", o.Origin, o)
		}
	}
}

// gaugeValue returns a reader of the gauge name in reg.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) func() int {
	return func() int {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == name && len(mf.GetMetric()) == 1 {
				return int(mf.GetMetric()[0].GetGauge().GetValue())
			}
		}
		return 0
	}
}

// histogram returns the single histogram named name in reg.
func histogram(t *testing.T, reg *prometheus.Registry, name string) *dto.Histogram {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetHistogram()
		}
	}
	t.Fatalf("no histogram %s", name)
	return nil
}
