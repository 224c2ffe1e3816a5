package feeds_test

import (
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/migrations/pgtest"
	"github.com/ingestd/ingestd/ogcapi/ogcapitest"
	"github.com/ingestd/ingestd/wfs/wfstest"
)

// setupOGCAPI is setup for ogcapi feeds: a fixture OGC API server, a fresh
// database, and a manager fetching through the registry of every kind
// (feeds.NewFetchers), as the daemon does.
func setupOGCAPI(t *testing.T, feedsYAML string) (*bundle, *ogcapitest.Server) {
	t.Helper()
	server := ogcapitest.New()
	ts := httptest.NewServer(server)
	t.Cleanup(ts.Close)
	yaml := fmt.Sprintf(`
defaults:
  schedule: "0 5 * * *"
  timeout: 30s
  request_timeout: 5s
jurisdictions:
  - id: county
    timezone: America/New_York
    feeds:
`+feedsYAML, ts.URL)
	cfg, err := feeds.ParseConfig("test.yaml", []byte(yaml), nil)
	if err != nil {
		t.Fatalf("config: %v\n%s", err, yaml)
	}
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	pool := pgtest.Pool(t)
	store := postgis.New(pool)
	breakers := breaker.NewRegistry(breaker.Config{MaxInFlight: 8, Policy: fastPolicy()}, logger)
	fetchers := feeds.NewFetchers(feeds.FetcherDeps{HTTP: ts.Client(), Breakers: breakers, Logger: logger})
	manager := feeds.NewManager(store, fetchers, feeds.WithLogger(logger))
	t.Cleanup(manager.Stop)
	b := &bundle{ctx: t.Context(), url: ts.URL, pool: pool, store: store, breakers: breakers, manager: manager, cfg: cfg}
	if err := manager.Update(b.ctx, cfg); err != nil {
		t.Fatalf("manager.Update: %v", err)
	}
	return b, server
}

const ogcapiFeeds = `
      - id: parcels
        kind: ogcapi
        url: %[1]s/collections/parcels
        page_size: 100
      - id: landing
        kind: ogcapi
        url: %[1]s
        collection: parcels
        page_size: 100
`

// TestOGCAPIPollLoadsComplete: a poll of an OGC API collection, through
// either form of url, stores every feature once; polling the same
// collection again changes nothing.
func TestOGCAPIPollLoadsComplete(t *testing.T) {
	t.Parallel()
	b, server := setupOGCAPI(t, ogcapiFeeds)
	server.Add("parcels", ogcapitest.Collection{Layer: wfstest.Parcels{N: 1234}})
	for _, feed := range []string{"parcels", "landing"} {
		res, err := b.manager.Poll(b.ctx, "county/"+feed)
		if err != nil {
			t.Fatal(err)
		}
		if res.Pages != 13 || res.Features != 1234 || res.Added != 1234 {
			t.Errorf("%s: pages=%d features=%d added=%d, want 13, 1234, 1234", feed, res.Pages, res.Features, res.Added)
		}
		if ids := b.featureIDs(t, feed); len(ids) != 1234 {
			t.Errorf("%s: stored %d features", feed, len(ids))
		}
	}
	res, err := b.manager.Poll(b.ctx, "county/parcels")
	if err != nil || res.Unchanged != 1234 || res.Added+res.Modified+res.Removed != 0 {
		t.Errorf("second poll: %v %+v", err, res.ApplyResult)
	}
}

// TestOGCAPIPitfallsApplyNothing: a collection loaded once, then served
// with each pitfall: a pitfall a client can survive loads the layer
// complete; every other fails the poll with a message naming the cause,
// and the stored features stay exactly as they were.
func TestOGCAPIPitfallsApplyNothing(t *testing.T) {
	t.Parallel()
	want := map[ogcapitest.Pitfall]string{
		ogcapitest.NoNextOnFullPage:    "page 1 has no next link, but numberMatched promised more: the page was full",
		ogcapitest.NextLoop:            "the next link of page 2 leads back to page 1 (a link loop)",
		ogcapitest.ZeroLimitSelf:       "leads back to page 1 (a link loop)",
		ogcapitest.ApproxNumberMatched: "numberMatched promised more: the server's count is approximate",
		ogcapitest.WrongContentCRS:     "the response's Content-Crs is http://www.opengis.net/def/crs/EPSG/0/3857",
		ogcapitest.Exception200:        "HTTP 200: exception document NoApplicableCode: database connection lost",
		ogcapitest.OffsetIgnored:       "page 1 repeats page 0",
		ogcapitest.Duplicates:          `id "parcel.99" came on pages 0 and 1`,
		ogcapitest.ShortPages:          "", // loads
		ogcapitest.NoNumberMatched:     "", // loads
	}
	for _, pit := range ogcapitest.Pitfalls {
		t.Run(string(pit), func(t *testing.T) {
			t.Parallel()
			msg, ok := want[pit]
			if !ok {
				t.Fatalf("no expectation for pitfall %s", pit)
			}
			b, server := setupOGCAPI(t, ogcapiFeeds)
			server.Add("parcels", ogcapitest.Collection{Layer: wfstest.Parcels{N: 350}})
			if _, err := b.manager.Poll(b.ctx, "county/parcels"); err != nil {
				t.Fatal(err)
			}
			before := b.featureDigest(t, "parcels")
			server.Add("parcels", ogcapitest.Collection{Layer: wfstest.Parcels{N: 350, Version: 1}, Pitfall: pit})
			res, err := b.manager.Poll(b.ctx, "county/parcels")
			if msg == "" {
				if err != nil || res.Features != 350 || res.Modified != 4 {
					t.Fatalf("poll: %v, %+v; want 350 features, 4 modified", err, res.ApplyResult)
				}
				if ids := b.featureIDs(t, "parcels"); len(ids) != 350 {
					t.Errorf("stored %d features", len(ids))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), msg) || !strings.Contains(err.Error(), "county/parcels") {
				t.Fatalf("poll error %v, want one naming the feed and %q", err, msg)
			}
			if after := b.featureDigest(t, "parcels"); after != before {
				t.Error("a failed poll changed the stored features")
			}
			if p := b.lastPoll(t, "parcels"); p.Status != "failed" || !strings.Contains(p.Error, msg) {
				t.Errorf("polls row: %+v", p)
			}
		})
	}
}

