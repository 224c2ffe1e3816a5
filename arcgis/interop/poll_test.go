// Package interop tests the arcgis kind end to end: polls into a real
// PostGIS through feeds.Manager, against the fixture server (its
// misbehaviours) and against Koop (scripts/koop.sh), compared with GDAL's
// reading of the same layers.
package interop_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestd/ingestd/arcgis/arcgistest"
	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/migrations/pgtest"
)

// rig is a manager polling feeds of jurisdiction "county" into a fresh
// database.
type rig struct {
	ctx      context.Context
	pool     *pgxpool.Pool
	manager  *feeds.Manager
	breakers *breaker.Registry
	store    *stageCounter
	env      map[string]string
	reg      *prometheus.Registry
}

// stageCounter is the PostGIS store, counting the pages staged.
type stageCounter struct {
	*postgis.Store
	pages atomic.Int64
}

func (s *stageCounter) StagePage(ctx context.Context, pollID int64, page int, features feature.FeatureReader) (int, error) {
	s.pages.Add(1)
	return s.Store.StagePage(ctx, pollID, page, features)
}

func fastPolicy() breaker.Policy {
	p := breaker.DefaultPolicy()
	p.BackoffBase, p.BackoffMax, p.RateLimit, p.RetryBudgetMin = time.Millisecond, 5*time.Millisecond, 0, 100
	return p
}

// newRig parses feedsYAML (the county's feeds list) and starts a manager.
func newRig(t testing.TB, feedsYAML string, env map[string]string) *rig {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	pool := pgtest.Pool(t)
	breakers := breaker.NewRegistry(breaker.Config{MaxInFlight: 8, Policy: fastPolicy()}, logger)
	fetchers := feeds.NewFetchers(kindconf.FetcherDeps{Breakers: breakers, Logger: logger})
	store := &stageCounter{Store: postgis.New(pool)}
	reg := prometheus.NewRegistry()
	m := feeds.NewManager(store, fetchers, feeds.WithLogger(logger), feeds.WithRegisterer(reg))
	t.Cleanup(m.Stop)
	r := &rig{ctx: t.Context(), pool: pool, manager: m, breakers: breakers, store: store, env: env, reg: reg}
	r.update(t, feedsYAML)
	return r
}

// update replaces the county's feeds list with feedsYAML.
func (r *rig) update(t testing.TB, feedsYAML string) {
	t.Helper()
	yaml := `
defaults:
  schedule: "0 5 * * *"
  timeout: 60s
  request_timeout: 10s
jurisdictions:
  - id: county
    timezone: America/New_York
    feeds:
` + feedsYAML
	cfg, err := config.Parse("test.yaml", []byte(yaml), func(k string) (string, bool) { v, ok := r.env[k]; return v, ok })
	if err != nil {
		t.Fatalf("config: %v\n%s", err, yaml)
	}
	if err := r.manager.Update(r.ctx, cfg); err != nil {
		t.Fatal(err)
	}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// digest fingerprints a feed's stored rows, to prove a failed poll
// touched nothing.
func (r *rig) digest(t testing.TB, feed string) (string, int) {
	t.Helper()
	var d string
	var n int
	err := r.pool.QueryRow(r.ctx, `SELECT coalesce(md5(string_agg(feature_id || ST_AsEWKT(geom) || properties::text || changed_at::text, '|' ORDER BY feature_id)), ''), count(*)
		FROM features WHERE jurisdiction = 'county' AND feed = $1`, feed).Scan(&d, &n)
	if err != nil {
		t.Fatal(err)
	}
	return d, n
}

func (r *rig) failures(origin string) uint32 {
	for _, s := range r.breakers.Snapshot() {
		if s.Origin == origin {
			return s.Counts.Failures
		}
	}
	return 0
}

func fixture(t testing.TB) (*arcgistest.Server, string) {
	srv := arcgistest.New()
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return srv, ts.URL
}

func TestPollArcGISLayerComplete(t *testing.T) {
	srv, base := fixture(t)
	srv.AddLayer("parcels", arcgistest.Squares(250))
	r := newRig(t, fmt.Sprintf("      - {id: parcels, kind: arcgis, url: %q, page_size: 100}\n", arcgistest.URL(base, "parcels")), nil)
	res, err := r.manager.Poll(r.ctx, "county/parcels")
	if err != nil {
		t.Fatal(err)
	}
	if res.Features != 250 || res.Added != 250 || res.Pages != 3 {
		t.Fatalf("poll %+v", res)
	}
	var n, distinct, holes int
	var updated string
	err = r.pool.QueryRow(r.ctx, `SELECT count(*), count(DISTINCT feature_id), count(*) FILTER (WHERE ST_NumInteriorRings(geom) = 1),
			max(properties->>'UPDATED') FILTER (WHERE feature_id = '1')
		FROM features WHERE jurisdiction = 'county' AND feed = 'parcels'`).Scan(&n, &distinct, &holes, &updated)
	if err != nil {
		t.Fatal(err)
	}
	if n != 250 || distinct != 250 || holes != 50 || updated != "2023-11-14T22:13:20Z" {
		t.Errorf("stored %d rows, %d distinct ids, %d with a hole, UPDATED %q; want 250, 250, 50, 2023-11-14T22:13:20Z", n, distinct, holes, updated)
	}
	// The same layer again: unchanged, and proven so by lastEditDate and
	// the count (TestCheapRefreshEndToEnd).
	res, err = r.manager.Poll(r.ctx, "county/parcels")
	if err != nil || res.Unchanged != 250 || !res.NotModified {
		t.Fatalf("second poll: %+v, %v", res, err)
	}
}

// Every failure mode: the poll loads the layer complete, or fails naming
// the cause with the previous snapshot untouched; the breaker counts the
// server's failures only.
func TestPollArcGISFailureModes(t *testing.T) {
	cases := []struct {
		name         string
		layer        func() *arcgistest.Layer
		env          map[string]string
		extra        string
		want         string // "" : loads complete
		serverFaults bool   // the breaker may count failures
		stagesNone   bool   // the failed poll stages no page
	}{
		{name: "error objects with 200 are retried", layer: func() *arcgistest.Layer {
			l := arcgistest.Squares(120)
			l.Faults.ErrorEvery = 3
			return l
		}, serverFaults: true},
		{name: "HTML from a proxy is retried", layer: func() *arcgistest.Layer {
			l := arcgistest.Squares(120)
			l.Faults.HTMLEvery = 4
			return l
		}, serverFaults: true},
		{name: "a cap below maxRecordCount and a lying exceededTransferLimit", layer: func() *arcgistest.Layer {
			l := arcgistest.Squares(120)
			l.MaxRecordCount, l.Faults.Cap, l.Faults.LieExceeded = 100, 30, true
			return l
		}},
		{name: "the id list fails: object-id windows", layer: func() *arcgistest.Layer {
			l := arcgistest.Squares(120)
			l.Faults.IDsFail = true
			return l
		}, serverFaults: true},
		{name: "no id list, no statistics: offsets", layer: func() *arcgistest.Layer {
			l := arcgistest.Squares(120)
			l.NoStatistics, l.Faults.IDsFail = true, true
			return l
		}, serverFaults: true},
		{name: "no id list, no statistics, no pagination", layer: func() *arcgistest.Layer {
			l := arcgistest.Squares(120)
			l.NoStatistics, l.NoPagination, l.Faults.IDsFail = true, true, true
			return l
		}, want: "Pagination is not supported", serverFaults: true},
		{name: "edited during the dump", layer: func() *arcgistest.Layer {
			l := arcgistest.Squares(120)
			l.Faults.EditAfter = 1
			return l
		}, want: "the layer was edited during the dump"},
		{name: "a listed id is never returned", layer: func() *arcgistest.Layer {
			l := arcgistest.Squares(120)
			l.Faults.DropOID = 77
			return l
		}, want: "object id 77 is in the id list but the server does not return it"},
		{name: "one broken feature", layer: func() *arcgistest.Layer {
			l := arcgistest.Squares(120)
			l.Faults.BrokenOID = 33
			return l
		}, want: "object id 33 cannot be fetched, even alone", serverFaults: true},
		{name: "token required", layer: func() *arcgistest.Layer {
			l := arcgistest.Squares(10)
			l.Faults.Token = "the-token"
			return l
		}, want: "the layer needs a token"},
		{name: "token invalid", layer: func() *arcgistest.Layer {
			l := arcgistest.Squares(10)
			l.Faults.Token = "the-token"
			return l
		}, env: map[string]string{"TOK": "an-old-token"}, extra: `, token: "${TOK}"`, want: "token is invalid or expired"},
		{name: "token right", layer: func() *arcgistest.Layer {
			l := arcgistest.Squares(10)
			l.Faults.Token = "the-token"
			return l
		}, env: map[string]string{"TOK": "the-token"}, extra: `, token: "${TOK}"`},
		{name: "curves", layer: func() *arcgistest.Layer {
			l := arcgistest.Squares(10)
			l.Features[4].Geometry = map[string]any{"curveRings": []any{}}
			return l
		}, want: "returnTrueCurves=false"},
		// A hostile run against the ArcGIS kind.
		{name: "a wkid PostGIS reserves", layer: func() *arcgistest.Layer {
			l := arcgistest.Squares(30)
			l.WKID = 999999
			return l
		}, want: "names wkid 999999, which PostGIS does not know", stagesNone: true},
		{name: "a wkid PostGIS does not know", layer: func() *arcgistest.Layer {
			l := arcgistest.Squares(30)
			l.WKID = 12345
			return l
		}, want: "names wkid 12345, which PostGIS does not know", stagesNone: true},
		{name: "a layer description that inflates past its bound", layer: func() *arcgistest.Layer {
			l := arcgistest.Squares(30)
			l.Faults.DescriptionBomb = 20 << 20
			return l
		}, want: "the layer description answer is larger than 16777216 bytes", stagesNone: true},
		{name: "an id list far longer than the count", layer: func() *arcgistest.Layer {
			l := arcgistest.Squares(30)
			l.Faults.IDListBomb = 1_000_000
			return l
		}, want: "the count is 29 but the id list holds more ids", stagesNone: true},
		{name: "an id list answering an error object second: windows", layer: func() *arcgistest.Layer {
			l := arcgistest.Squares(30)
			l.Faults.IDsErrorSecond = true
			return l
		}, serverFaults: true},
		{name: "error objects after the object id field name are retried", layer: func() *arcgistest.Layer {
			l := arcgistest.Squares(120)
			l.Faults.ErrorSecondEvery = 3
			return l
		}, serverFaults: true},
		{name: "error objects after the features are retried", layer: func() *arcgistest.Layer {
			l := arcgistest.Squares(120)
			l.Faults.ErrorAfterFeaturesEvery = 3
			return l
		}, serverFaults: true},
		// Features larger than a staging chunk (2 MiB), each a chunk of
		// its own. The timeouts only bound a hang on a slow machine.
		{name: "answers of 3 MB features stream", layer: func() *arcgistest.Layer {
			l := arcgistest.Squares(12)
			l.Faults.Padding = 3_000_000
			return l
		}, extra: ", timeout: 10m, request_timeout: 5m"},
		{name: "a duplicate id_property in one batch", layer: func() *arcgistest.Layer {
			l := arcgistest.Squares(30)
			l.Features[19].Attributes["NAME"] = "parcel 10"
			return l
		}, extra: ", id_property: NAME", want: `feature id "parcel 10" (NAME) is that of object ids 10 and 20 of one page (batch of objectIds 1…29)`},
		{name: "exceededTransferLimit forever with new ids", layer: func() *arcgistest.Layer {
			l := arcgistest.Squares(30)
			l.NoStatistics, l.Faults.IDsFail, l.Faults.EndlessOffsets = true, true, true
			return l
		}, want: "more than the count 29 and a page (40)", serverFaults: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, base := fixture(t)
			// A good snapshot first, to prove a failed poll leaves it alone.
			good := arcgistest.Squares(len(c.layer().Features))
			good.Faults.Token = c.layer().Faults.Token
			srv.AddLayer("l", good)
			r := newRig(t, fmt.Sprintf("      - {id: l, kind: arcgis, url: %q, page_size: 40%s}\n", arcgistest.URL(base, "l"), c.extra), c.env)
			if c.want == "" || !strings.Contains(c.name, "token") {
				if _, err := r.manager.Poll(r.ctx, "county/l"); err != nil {
					t.Fatalf("first poll: %v", err)
				}
			}
			before, n := r.digest(t, "l")
			l := c.layer()
			l.LastEditDate = 1800000000000 // an edit: no cheap refresh
			l.Features = l.Features[:len(l.Features)-1]
			srv.AddLayer("l", l)
			staged := r.store.pages.Load()
			_, err := r.manager.Poll(r.ctx, "county/l")
			if c.stagesNone && r.store.pages.Load() != staged {
				t.Errorf("the failed poll staged %d pages", r.store.pages.Load()-staged)
			}
			after, m := r.digest(t, "l")
			if c.want == "" {
				if err != nil {
					t.Fatalf("poll: %v", err)
				}
				if m != len(l.Features) {
					t.Fatalf("stored %d features, the layer has %d", m, len(l.Features))
				}
			} else {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("poll error %v, want %q", err, c.want)
				}
				if !strings.Contains(err.Error(), "county/l") {
					t.Errorf("the error does not name the feed: %v", err)
				}
				if before != after || n != m {
					t.Fatalf("a failed poll changed the stored features (%d → %d rows)", n, m)
				}
			}
			if err != nil && strings.Contains(err.Error(), "the-token") {
				t.Fatalf("the token is in the error: %v", err)
			}
			f := r.failures(originOf(base))
			if !c.serverFaults && f != 0 {
				t.Errorf("the breaker counted %d failures for the feed's own error", f)
			}
			if strings.Contains(c.name, "broken feature") && f == 0 {
				t.Errorf("the breaker counted no failure for a feature the server fails on")
			}
		})
	}
}

func originOf(base string) string { return strings.TrimSuffix(base, "/") }
