package feeds_test

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/deadletter"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/migrations/pgtest"
	"github.com/ingestd/ingestd/ogcapi/ogcapitest"
)

// setupOGCAPI is setup for ogcapi feeds: a fixture OGC API server, a fresh
// database, and a manager fetching through the registry of every kind
// (feeds.NewFetchers), as the daemon does.
func setupOGCAPI(t *testing.T, feedsYAML string, opts ...setupOption) (*bundle, *ogcapitest.Server) {
	t.Helper()
	return setupOGCAPIWith(t, feedsYAML, nil, opts...)
}

// setupOGCAPIWith is setupOGCAPI with the fixture behind wrap (nil: none),
// for a test that fails some of its requests.
func setupOGCAPIWith(t *testing.T, feedsYAML string, wrap func(http.Handler) http.Handler, opts ...setupOption) (*bundle, *ogcapitest.Server) {
	t.Helper()
	o := setupOptions{policy: fastPolicy()}
	for _, opt := range opts {
		opt(&o)
	}
	server := ogcapitest.New()
	var h http.Handler = server
	if wrap != nil {
		h = wrap(server)
	}
	ts := httptest.NewServer(h)
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
`+feedsYAML, ts.URL)
	cfg, err := config.Parse("test.yaml", []byte(yaml), nil)
	if err != nil {
		t.Fatalf("config: %v\n%s", err, yaml)
	}
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	pool := pgtest.Pool(t)
	store := postgis.New(pool)
	breakers := breaker.NewRegistry(o.breakerConfig(), logger)
	fetchers := feeds.NewFetchers(kindconf.FetcherDeps{HTTP: ts.Client(), Breakers: breakers, Logger: logger})
	var managed feeds.Store = store
	if o.wrapStore != nil {
		managed = o.wrapStore(store)
	}
	manager := feeds.NewManager(managed, fetchers, append([]feeds.Option{feeds.WithLogger(logger)}, o.managerOpts...)...)
	t.Cleanup(manager.Stop)
	b := &bundle{ctx: t.Context(), url: ts.URL, pool: pool, store: store, breakers: breakers, manager: manager, cfg: cfg, clock: o.clock}
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
	server.Add("parcels", ogcapitest.Collection{Layer: layertest.Parcels{N: 1234}})
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
		ogcapitest.NoNextOnFullPage:     "page 1 has no next link, but numberMatched promised more: the page was full",
		ogcapitest.NextLoop:             "the next link of page 2 leads back to page 1 (a link loop)",
		ogcapitest.ZeroLimitSelf:        "leads back to page 1 (a link loop)",
		ogcapitest.ApproxNumberMatched:  "numberMatched promised more: the server's count is approximate",
		ogcapitest.WrongContentCRS:      "the response's Content-Crs is http://www.opengis.net/def/crs/EPSG/0/3857",
		ogcapitest.Exception200:         "HTTP 200: NoApplicableCode: database connection lost",
		ogcapitest.OffsetIgnored:        "page 1 repeats page 0",
		ogcapitest.Duplicates:           `id "parcel.99" came on pages 0 and 1`,
		ogcapitest.DuplicateInPage:      `id "parcel.4" came twice in page 0`,
		ogcapitest.OverlapNoIDs:         "the same feature (no id; the same properties and geometry) came on pages 0 and 1",
		ogcapitest.NumberMatchedUnknown: `numberMatched is the string "unknown", not a count`,
		// Without completeness: links_only, a collection that reports no
		// numberMatched is not applied (TestOGCAPIUnprovenCollection).
		ogcapitest.NoNumberMatched:       "the server reports no numberMatched, on its pages nor to resulttype=hits: nothing proves the 350 features the whole collection",
		ogcapitest.NoNextNoNumberMatched: "the server reports no numberMatched, on its pages nor to resulttype=hits: nothing proves the 200 features the whole collection",
		ogcapitest.ShortPages:            "", // loads
		ogcapitest.NumberMatchedString:   "", // loads
	}
	for _, pit := range ogcapitest.Pitfalls {
		t.Run(string(pit), func(t *testing.T) {
			t.Parallel()
			msg, ok := want[pit]
			if !ok {
				t.Fatalf("no expectation for pitfall %s", pit)
			}
			b, server := setupOGCAPI(t, ogcapiFeeds)
			server.Add("parcels", ogcapitest.Collection{Layer: layertest.Parcels{N: 350}})
			if _, err := b.manager.Poll(b.ctx, "county/parcels"); err != nil {
				t.Fatal(err)
			}
			before := b.featureDigest(t, "parcels")
			server.Add("parcels", ogcapitest.Collection{Layer: layertest.Parcels{N: 350, Version: 1}, Pitfall: pit})
			res, err := b.manager.Poll(b.ctx, "county/parcels")
			if msg == "" {
				if err != nil || res.Features != 350 || res.Modified != 4 {
					t.Fatalf("poll: %v, %+v; want 350 features, 4 modified", err, res.ApplyResult)
				}
				if ids := b.featureIDs(t, "parcels"); len(ids) != 350 {
					t.Errorf("stored %d features", len(ids))
				}
				want := "number_matched"
				var basis string
				if err := b.pool.QueryRow(b.ctx, `SELECT completeness FROM polls WHERE feed = 'parcels' AND status = 'succeeded' ORDER BY id DESC LIMIT 1`).Scan(&basis); err != nil || basis != want {
					t.Errorf("polls.completeness %q (%v), want %s", basis, err, want)
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

// setupOGCAPIDL is setupOGCAPI with a dead-letter queue and a replayer.
func setupOGCAPIDL(t *testing.T, feedsYAML string) (*dlBundle, *ogcapitest.Server) {
	t.Helper()
	lq := &lateQueue{}
	cfg := config.BuiltinDeadLetter()
	b, server := setupOGCAPI(t, feedsYAML, withPolicy(trippingPolicy()), withClock(dlClock()), withManagerOptions(feeds.WithDeadLetters(lq, cfg)))
	lq.q = deadletter.NewQueue(b.pool)
	u, _ := url.Parse(b.url)
	return &dlBundle{bundle: b, queue: lq.q, origin: breaker.Origin(u),
		replayer: deadletter.NewReplayer(b.pool, b.manager.Replay, deadletter.WithMaxAttempts(cfg.MaxAttempts))}, server
}

// TestOGCAPIResumeStartsOver: a poll refused on page 2 is parked, each
// staged page with its next link (without the feed's key); its replay
// reads page 1 again at page 0's next link, finds it as staged and goes on
// at page 1's (TestOGCAPIResumeAfterTheLayerChanged: when it is not, the
// poll starts over). When the server has expired its cursors meanwhile,
// page 1's link is refused (400): the replay drops the staged pages and
// starts over from the first page. Either way the whole collection lands.
func TestOGCAPIResumeStartsOver(t *testing.T) {
	t.Parallel()
	for _, expire := range []bool{false, true} {
		t.Run(fmt.Sprintf("expired=%v", expire), func(t *testing.T) {
			t.Parallel()
			const k = 2
			b, server := setupOGCAPIDL(t, `
      - id: parcels
        kind: ogcapi
        url: %[1]s/collections/parcels?apikey=s3cret
        page_size: 10
`)
			server.Add("parcels", ogcapitest.Collection{Layer: layertest.Parcels{N: 47}})
			var tripped atomic.Bool
			server.Hook = func(_ string, offset int) {
				if offset == (k-1)*10 && tripped.CompareAndSwap(false, true) {
					b.trip(t)
				}
			}
			_, err := b.manager.Poll(b.ctx, "county/parcels")
			var de *deadletter.DeferError
			if !errors.As(err, &de) || de.Reason != deadletter.ReasonCircuitOpen {
				t.Fatalf("poll error = %v, want parked as circuit_open", err)
			}
			l := b.letter(t, "parcels")
			if l.Checkpoint.Page != k {
				t.Fatalf("checkpoint %+v, want page %d", l.Checkpoint, k)
			}
			var links int
			var stored string
			if err := b.pool.QueryRow(b.ctx, `SELECT count(next_link), coalesce(string_agg(next_link, ' '), '') FROM staged_pages WHERE poll_id = $1`,
				l.Checkpoint.PollID).Scan(&links, &stored); err != nil {
				t.Fatal(err)
			}
			if links != k || strings.Contains(stored, "s3cret") {
				t.Errorf("%d staged pages recorded a next link (%s), want %d, without the feed's key", links, stored, k)
			}
			if expire {
				server.ExpireCursors()
			}
			b.advanceTo(t, l.RetryAfter)
			if claimed, err := b.replayer.RunOnce(b.ctx); err != nil || len(claimed) != 1 {
				t.Fatalf("replay claimed %d rows (err %v), want 1", len(claimed), err)
			}
			if l := b.letter(t, "parcels"); l.Status != deadletter.StatusDone {
				t.Fatalf("dead letter %s after the replay, want done (last error %q)", l.Status, l.LastError)
			}
			if ids := b.featureIDs(t, "parcels"); len(ids) != 47 {
				t.Errorf("stored %d features, want 47", len(ids))
			}
			// Page 1 again, the proof; page 2 was refused by the open
			// breaker, never sent. With the cursors expired, page 1's
			// link is refused and every page read again.
			want := map[int]int{0: 1, 10: 2, 20: 1, 30: 1, 40: 1}
			if expire {
				want[0], want[10] = 2, 3
			}
			for offset, n := range want {
				if got := server.ItemRequests("parcels", offset); got != n {
					t.Errorf("offset %d requested %d times, want %d", offset, got, n)
				}
			}
		})
	}
}

// TestOGCAPIPart2CRS: the same collection asked for in EPSG:4326 (latitude
// first on the wire) and EPSG:3857 (projected, transformed by the store)
// is stored as the CRS84 poll stored it: same ids, positions within 1 cm.
func TestOGCAPIPart2CRS(t *testing.T) {
	t.Parallel()
	b, server := setupOGCAPI(t, `
      - id: crs84
        kind: ogcapi
        url: %[1]s/collections/parcels
        page_size: 50
      - id: epsg4326
        kind: ogcapi
        url: %[1]s/collections/parcels
        crs: http://www.opengis.net/def/crs/EPSG/0/4326
        page_size: 50
      - id: epsg3857
        kind: ogcapi
        url: %[1]s/collections/parcels
        crs: http://www.opengis.net/def/crs/EPSG/0/3857
        page_size: 50
`)
	server.Add("parcels", ogcapitest.Collection{Layer: layertest.Parcels{N: 120}})
	for _, feed := range []string{"crs84", "epsg4326", "epsg3857"} {
		if _, err := b.manager.Poll(b.ctx, "county/"+feed); err != nil {
			t.Fatal(err)
		}
	}
	for _, feed := range []string{"epsg4326", "epsg3857"} {
		var n int
		var worst float64
		err := b.pool.QueryRow(b.ctx, `
			SELECT count(*), coalesce(max(ST_HausdorffDistance(ST_Transform(a.geom, 32617), ST_Transform(c.geom, 32617))), 1e9)
			FROM features a JOIN features c ON c.feature_id = a.feature_id AND c.jurisdiction = a.jurisdiction AND c.feed = 'crs84'
			WHERE a.jurisdiction = 'county' AND a.feed = $1`, feed).Scan(&n, &worst)
		if err != nil {
			t.Fatal(err)
		}
		if n != 120 || worst > 0.01 {
			t.Errorf("%s: %d features matched the CRS84 poll's, worst distance %.4f m", feed, n, worst)
		}
	}
}

// namedLayer is a layer of n points whose ids are prefix.i, but for the
// indexes in other, which get those ids instead: a server that replaced
// features keeps its count.
type namedLayer struct {
	prefix string
	n      int
	other  map[int]string
}

func (l namedLayer) Len() int { return l.n }

func (l namedLayer) AppendFeature(buf []byte, i int) []byte {
	return fmt.Appendf(buf, `{"type":"Feature","id":%q,"geometry":{"type":"Point","coordinates":[%g,35.7]},"properties":{"name":%q}}`,
		l.id(i), -78.9+float64(i)/1000, l.id(i))
}

func (l namedLayer) id(i int) string {
	if o, ok := l.other[i]; ok {
		return o
	}
	return fmt.Sprintf("%s.%d", l.prefix, i)
}

// ids are the layer's ids, sorted.
func (l namedLayer) ids() []string {
	ids := make([]string, l.n)
	for i := range l.n {
		ids[i] = l.id(i)
	}
	slices.Sort(ids)
	return ids
}

// failingItems answers 503 to the items page at offset fail while it is
// set, and passes everything else to the fixture.
type failingItems struct {
	next http.Handler
	fail atomic.Int64 // offset + 1; 0: none
}

func (f *failingItems) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if o := f.fail.Load(); o > 0 && strings.HasSuffix(r.URL.Path, "/items") && r.URL.Query().Get("offset") == strconv.FormatInt(o-1, 10) {
		http.Error(w, "upstream database unavailable", http.StatusServiceUnavailable)
		return
	}
	f.next.ServeHTTP(w, r)
}

// TestOGCAPIResumeAfterTheLayerChanged: a poll parked at page 2 (its page
// answering 503 after page 1 was staged), the server then changing its
// collection, and the replay: what is applied is the server's collection
// as it is now, never the pages staged before it changed beside the pages
// after. Both the replacement of every feature with numberMatched still 30
// (as a hostile run did: the replay resumed at offset 20 and applied
// f.0–f.19 with g.20–g.29) and the replacement of one feature of page 1,
// which leaves the first page as it was (a resume proven by re-reading the
// first page would apply the old feature), fail the replay's proof (page 1
// read again) and start it over; an unchanged collection passes it and the
// replay goes on at page 2. While the poll is parked the stored snapshot
// stays byte-identical.
func TestOGCAPIResumeAfterTheLayerChanged(t *testing.T) {
	t.Parallel()
	before := namedLayer{prefix: "f", n: 30}
	for name, tc := range map[string]struct {
		after   namedLayer
		restart bool
	}{
		"every feature replaced":     {namedLayer{prefix: "g", n: 30}, true},
		"one feature of page 1 gone": {namedLayer{prefix: "f", n: 30, other: map[int]string{15: "h.15"}}, true},
		"unchanged":                  {before, false},
	} {
		after := tc.after
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := fastPolicy()
			p.MaxAttempts, p.ConsecutiveFailures, p.FailureRatio = 2, 100, 0
			lq := &lateQueue{}
			cfg := config.BuiltinDeadLetter()
			var front *failingItems
			b, server := setupOGCAPIWith(t, `
      - id: parcels
        kind: ogcapi
        url: %[1]s/collections/parcels?apikey=s3cret
        page_size: 10
`, func(h http.Handler) http.Handler {
				front = &failingItems{next: h}
				return front
			}, withPolicy(p), withManagerOptions(feeds.WithDeadLetters(lq, cfg)))
			lq.q = deadletter.NewQueue(b.pool)
			replayer := deadletter.NewReplayer(b.pool, b.manager.Replay, deadletter.WithMaxAttempts(cfg.MaxAttempts))

			server.Add("parcels", ogcapitest.Collection{Layer: before})
			if _, err := b.manager.Poll(b.ctx, "county/parcels"); err != nil {
				t.Fatal(err)
			}
			applied := b.featureDigest(t, "parcels")

			front.fail.Store(20 + 1)
			_, err := b.manager.Poll(b.ctx, "county/parcels")
			var de *deadletter.DeferError
			if !errors.As(err, &de) || de.Reason != deadletter.ReasonFailed {
				t.Fatalf("poll error = %v, want parked as failed", err)
			}
			l, err := lq.q.List(b.ctx, deadletter.Filter{Feed: "county/parcels"})
			if err != nil || len(l) != 1 || l[0].Checkpoint.Page != 2 {
				t.Fatalf("dead letters %v (%v), want one parked at page 2", l, err)
			}
			if got := b.featureDigest(t, "parcels"); got != applied {
				t.Fatal("the parked poll changed the stored snapshot")
			}

			front.fail.Store(0)
			server.Add("parcels", ogcapitest.Collection{Layer: after})
			// Due now rather than after its backoff: the test moves the
			// row's time instead of sleeping through it.
			if _, err := b.pool.Exec(b.ctx, `UPDATE dead_letter SET retry_after = now() WHERE id = $1`, l[0].ID); err != nil {
				t.Fatal(err)
			}
			if claimed, err := replayer.RunOnce(b.ctx); err != nil || len(claimed) != 1 {
				t.Fatalf("replay claimed %d rows (err %v), want 1", len(claimed), err)
			}
			if l, err := lq.q.Get(b.ctx, l[0].ID); err != nil || l.Status != deadletter.StatusDone {
				t.Fatalf("dead letter after the replay: %+v (%v), want done", l, err)
			}
			got := b.featureIDs(t, "parcels")
			slices.Sort(got)
			if want := after.ids(); !slices.Equal(got, want) {
				t.Errorf("stored ids %v, want the server's collection as it is now %v", got, want)
			}
			var basis string
			if err := b.pool.QueryRow(b.ctx, `SELECT completeness FROM polls WHERE feed = 'parcels' AND status = 'succeeded' ORDER BY id DESC LIMIT 1`).Scan(&basis); err != nil || basis != "number_matched" {
				t.Errorf("polls.completeness %q (%v), want number_matched", basis, err)
			}
			// Page 1 three times: the first poll, the parked one, and the
			// replay's proof; the first page once more when the proof
			// failed and the replay started over.
			first, second := server.ItemRequests("parcels", 0), server.ItemRequests("parcels", 10)
			if tc.restart && (first != 3 || second != 4) {
				t.Errorf("pages 0 and 1 requested %d and %d times, want 3 and 4: the proof failed, the replay started over", first, second)
			}
			if !tc.restart && (first != 2 || second != 3) {
				t.Errorf("pages 0 and 1 requested %d and %d times, want 2 and 3: the proof held, the replay went on", first, second)
			}
		})
	}
}

// TestOGCAPIUnprovenCollection: a collection whose server reports no
// numberMatched is not applied, not even as a first load (no shrink guard
// would catch it), unless the feed sets completeness: links_only; one
// that answers resulttype=hits with its count is proven by it.
func TestOGCAPIUnprovenCollection(t *testing.T) {
	t.Parallel()
	b, server := setupOGCAPI(t, `
      - id: strict
        kind: ogcapi
        url: %[1]s/collections/parcels
        page_size: 100
      - id: trusting
        kind: ogcapi
        url: %[1]s/collections/parcels
        page_size: 100
        completeness: links_only
      - id: counted
        kind: ogcapi
        url: %[1]s/collections/counted
        page_size: 100
`)
	server.Add("parcels", ogcapitest.Collection{Layer: layertest.Parcels{N: 250}, Pitfall: ogcapitest.NoNumberMatched})
	server.Add("counted", ogcapitest.Collection{Layer: layertest.Parcels{N: 250}, Pitfall: ogcapitest.NoNumberMatched, Hits: true})
	_, err := b.manager.Poll(b.ctx, "county/strict")
	if err == nil || !strings.Contains(err.Error(), "nothing proves the 250 features the whole collection; set completeness: links_only") {
		t.Errorf("strict: %v", err)
	}
	if ids := b.featureIDs(t, "strict"); len(ids) != 0 {
		t.Errorf("strict: %d features stored by a refused first load", len(ids))
	}
	for feed, want := range map[string]string{"trusting": "links_only", "counted": "number_matched"} {
		if _, err := b.manager.Poll(b.ctx, "county/"+feed); err != nil {
			t.Fatalf("%s: %v", feed, err)
		}
		if ids := b.featureIDs(t, feed); len(ids) != 250 {
			t.Errorf("%s: %d features stored", feed, len(ids))
		}
		var basis string
		if err := b.pool.QueryRow(b.ctx, `SELECT completeness FROM polls WHERE feed = $1 AND status = 'succeeded'`, feed).Scan(&basis); err != nil || basis != want {
			t.Errorf("%s: polls.completeness %q (%v), want %s", feed, basis, err, want)
		}
	}
}
