package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/breaker/breakermetrics"
	"github.com/ingestd/ingestd/breaker/pgshare"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/statuspage"
)

// stepClock is the breaker's injected clock; the test moves it.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// A county server that refuses connections, asked by three hourly feeds
// whose polls come six minutes apart (ingestd spreads each feed's start in
// its interval): its origin opens at the fifth failed poll in a row with
// the default policy, and every surface says so — breaker_state, the
// status page and ingestd_breaker_state (which the IngestdOriginOpen rule
// reads; ingestd-rules.test.yml tests the rule on that series). A success
// in the run starts it again. The polls go through the daemon's parts (the
// manager, the fetchers, the registry with its shared state and metrics)
// on a real PostGIS; the breaker's clock moves six minutes per poll, and
// gobreaker's window (on the real clock) is shorter than a poll.
func TestDeadCountyOpensAtTheFifthPollInARow(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, pool := testDB(t)
	logger := slog.New(slog.DiscardHandler)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // refused from now on, until serve listens again
	origin := "http://" + addr
	var cfgText strings.Builder
	// The default policy, but for a window of two milliseconds (two buckets, so that it rolls rather than restarts): gobreaker
	// keeps its window on the real clock, so this is how six minutes
	// between polls look to it (every poll takes longer than 2 ms).
	cfgText.WriteString("defaults: {breaker: {window: 2ms}}\njurisdictions:\n  - id: county\n    feeds:\n")
	for _, id := range []string{"roads", "parcels", "zoning"} {
		fmt.Fprintf(&cfgText, "      - {id: %s, kind: geojson, url: %s/%s.geojson, schedule: \"0 * * * *\"}\n", id, origin, id)
	}
	path := t.TempDir() + "/county.yaml"
	if err := os.WriteFile(path, []byte(cfgText.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}

	clock := &stepClock{now: time.Now()}
	shared := pgshare.New(pool, "county-test", logger, pgshare.WithClock(clock), pgshare.WithRefreshInterval(time.Hour))
	if err := shared.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(shared.Stop)
	promReg := prometheus.NewRegistry()
	reg := breaker.NewRegistry(breaker.Config{Policy: cfg.Defaults.Breaker, Shared: shared,
		Observer: breakermetrics.New(promReg), Jitter: func() float64 { return 0.5 },
		// Backoffs between attempts pass at once: what they wait is the
		// benchmark's (BenchmarkDeadOriginOpens), not this test's.
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}, logger)
	fetchers := feeds.NewFetchers(kindconf.FetcherDeps{HTTP: newHTTPClient(), Breakers: reg, Logger: logger})
	manager := feeds.NewManager(postgis.New(pool, postgis.WithLogger(logger)), fetchers, feeds.WithLogger(logger))
	if err := manager.Update(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(manager.Stop)

	order := []string{"roads", "parcels", "zoning"}
	polls := 0
	poll := func() error {
		clock.advance(6 * time.Minute)
		key := "county/" + order[polls%len(order)]
		polls++
		_, err := manager.Poll(ctx, key)
		return err
	}
	fail := func(n int) {
		t.Helper()
		for range n {
			err := poll()
			if err == nil {
				t.Fatalf("poll %d of a refused port succeeded", polls)
			}
			if _, refused := errors.AsType[*breaker.OpenError](err); refused {
				t.Fatalf("poll %d refused by the breaker before the fifth failure in a row: %v", polls, err)
			}
		}
	}
	closed := func(when string) {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM breaker_state WHERE state <> 'closed'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("%s: breaker_state holds %d open rows", when, n)
		}
		if v := stateGauge(t, promReg, origin); v == 2 {
			t.Fatalf("%s: ingestd_breaker_state %v", when, v)
		}
	}

	fail(4)
	closed("four failed polls in a row")
	serve(t, addr, func() {
		if err := poll(); err != nil {
			t.Fatalf("poll while the county answers: %v", err)
		}
	})
	fail(4)
	closed("a success, then four failed polls")

	fail(1) // the fifth in a row
	var state string
	deadline := time.Now().Add(time.Minute)
	for {
		err := pool.QueryRow(ctx, `SELECT state FROM breaker_state WHERE origin = $1`, origin).Scan(&state)
		if err == nil && state == "open" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("breaker_state of %s not open a minute after the fifth failure in a row (%q, %v)", origin, state, err)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(10 * time.Millisecond): // polling the asynchronous writer's row
		}
	}
	if v := stateGauge(t, promReg, origin); v != 2 {
		t.Errorf("ingestd_breaker_state{origin=%q} = %v, want 2 (open)", origin, v)
	}
	page := httptest.NewServer(statuspage.New(pool, logger))
	t.Cleanup(page.Close)
	var row []string
	for _, r := range tableRows(t, get(t, page.URL+statuspage.Prefix), "origins") {
		if r[0] == origin {
			row = r
		}
	}
	if len(row) < 2 || !strings.HasPrefix(row[1], "open") {
		t.Errorf("status page's row of %s: %q, want open", origin, row)
	}
	if _, err := manager.Poll(ctx, "county/roads"); err == nil {
		t.Error("a poll of the open origin succeeded")
	} else if _, refused := errors.AsType[*breaker.OpenError](err); !refused {
		t.Errorf("a poll of the open origin was not refused by its breaker: %v", err)
	}
}

// stateGauge reads ingestd_breaker_state of origin from reg (-1: none).
func stateGauge(t *testing.T, reg *prometheus.Registry, origin string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "ingestd_breaker_state" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "origin" && l.GetValue() == origin {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}

// serve answers GeoJSON on addr while fn runs, then refuses again.
func serve(t *testing.T, addr string, fn func()) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen again on %s: %v", addr, err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/geo+json")
		fmt.Fprint(w, `{"type":"FeatureCollection","features":[{"type":"Feature","id":1,"properties":{"name":"Main St"},"geometry":{"type":"Point","coordinates":[-78.6,35.8]}}]}`)
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	fn()
}
