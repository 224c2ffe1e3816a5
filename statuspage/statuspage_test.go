package statuspage

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/migrations/pgtest"
	"github.com/ingestd/ingestd/wfs/wfstest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, 4)) }

// loadLayers serves layers from a fixture server and polls each once into
// a fresh database through the real poller and store, as feeds
// county/NAME; it returns the database.
func loadLayers(tb testing.TB, layers map[string]layertest.Layer, pageSize int) *pgxpool.Pool {
	tb.Helper()
	server := wfstest.New()
	ts := httptest.NewServer(server)
	tb.Cleanup(ts.Close)
	var b strings.Builder
	fmt.Fprintf(&b, "defaults:\n  schedule: \"0 5 * * *\"\n  timeout: 10m\n  request_timeout: 2m\n  page_size: %d\njurisdictions:\n  - id: county\n    feeds:\n", pageSize)
	for name, l := range layers {
		server.AddLayer(name, l)
		fmt.Fprintf(&b, "      - {id: %s, kind: wfs, url: %q, type_name: %s}\n", name, ts.URL+"/wfs", name)
	}
	cfg, err := config.Parse("test.yaml", []byte(b.String()), nil)
	if err != nil {
		tb.Fatalf("config: %v\n%s", err, b.String())
	}
	pool := pgtest.Pool(tb)
	p := breaker.DefaultPolicy()
	p.RateLimit = 0
	m := feeds.NewManager(postgis.New(pool), feeds.NewFetchers(kindconf.FetcherDeps{HTTP: ts.Client(), Breakers: breaker.NewRegistry(breaker.Config{MaxInFlight: 4, Policy: p}, nil)}))
	defer m.Stop()
	ctx := context.Background()
	if err := m.Update(ctx, cfg); err != nil {
		tb.Fatal(err)
	}
	for name := range layers {
		if _, err := m.Poll(ctx, "county/"+name); err != nil {
			tb.Fatalf("poll %s: %v", name, err)
		}
	}
	return pool
}

// The thumbnail is PostGIS's drawing of a bounded sample: polygons as path
// data, points as dots, inside the sample's extent, under the byte bound,
// and flagged when the geometries miss the jurisdiction's bbox (a swapped
// axis order).
func TestThumbnail(t *testing.T) {
	t.Parallel()
	pool := loadLayers(t, map[string]layertest.Layer{"parcels": layertest.Parcels{N: 3000}, "addresses": layertest.Points{N: 600}}, 1000)
	ctx := t.Context()
	h := New(pool, nil)
	raleigh := BBox{-79, 35.5, -78.3, 35.8}
	h.SetBounds(map[string]BBox{"county": raleigh})

	p, err := h.LoadFeed(ctx, "county", "parcels")
	if err != nil {
		t.Fatal(err)
	}
	th := p.Thumbnail
	if th.Sampled < 500 || th.Sampled > 1000 {
		t.Errorf("sampled %d of 3000 parcels, want about 1000", th.Sampled)
	}
	if !strings.HasPrefix(th.Paths, "M ") || th.Dots != "" {
		t.Errorf("parcels: paths %.40q, dots %.40q", th.Paths, th.Dots)
	}
	if n := strings.Count(th.Paths, "Z"); int64(n) != th.Sampled {
		t.Errorf("%d closed rings for %d sampled parcels", n, th.Sampled)
	}
	// The parcels lie in [-78.9, -78.4] x [35.6, 35.6015]; ST_AsSVG writes -y.
	for _, m := range regexp.MustCompile(`-?\d+\.\d+ -?\d+\.\d+`).FindAllString(th.Paths, 50) {
		var x, y float64
		fmt.Sscan(m, &x, &y)
		if x < -78.9001 || x > -78.3999 || y > -35.5999 || y < -35.61 {
			t.Errorf("vertex %s outside the parcels", m)
		}
	}
	if th.Far || th.BBox == nil || th.ViewBox == "" {
		t.Errorf("far %v, bbox %v, viewBox %q", th.Far, th.BBox, th.ViewBox)
	}

	a, err := h.LoadFeed(ctx, "county", "addresses")
	if err != nil {
		t.Fatal(err)
	}
	if a.Thumbnail.Paths != "" || strings.Count(a.Thumbnail.Dots, "l0 0") != int(a.Thumbnail.Sampled) || a.Thumbnail.Sampled != 600 {
		t.Errorf("addresses: %d sampled, paths %.40q, dots %.60q", a.Thumbnail.Sampled, a.Thumbnail.Paths, a.Thumbnail.Dots)
	}

	// A bbox written latitude first: the page says so.
	h.SetBounds(map[string]BBox{"county": {35.5, -79, 35.8, -78.3}})
	var page strings.Builder
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", FeedPath("county", "parcels"), nil))
	page.WriteString(w.Body.String())
	if w.Code != 200 || !strings.Contains(page.String(), "outside the jurisdiction's bbox") {
		t.Errorf("a swapped bbox is not flagged (%d):\n%s", w.Code, page.String())
	}

	// The byte bound holds whatever the layer: 2,000 bytes of path data.
	small := New(pool, nil, WithThumbnail(1000, 2000))
	s, err := small.LoadFeed(ctx, "county", "parcels")
	if err != nil {
		t.Fatal(err)
	}
	if s.Thumbnail.Bytes() > 2000 || s.Thumbnail.Bytes() < 1000 {
		t.Errorf("thumbnail of %d bytes, bound 2000", s.Thumbnail.Bytes())
	}
}

// Markup and secrets in the data reach the page as text, redacted.
func TestEscapingAndRedaction(t *testing.T) {
	h := New(nil, nil)
	hostile := `<img src=x onerror=alert(1)> GET https://u:pa55@h.example/wfs?token=s3cr3t&typeName=a"b`
	o := &Overview{Now: time.Now(), Feeds: []FeedStatus{{Jurisdiction: `j<b>`, Feed: `f"x`, Status: "failing", LastError: hostile}},
		Origins: []Origin{{Origin: "https://h.example:443", State: "open", Override: "open", OverrideBy: `<i>me</i>`, OverrideReason: hostile}},
		Held:    []Held{{Jurisdiction: "j", Feed: "f", Reason: hostile}}}
	w := httptest.NewRecorder()
	h.Render(w, "overview.html", o)
	page := w.Body.String()
	for _, bad := range []string{"<img", "<b>", "<i>", `f"x`} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q unescaped", bad)
		}
	}
	if !strings.Contains(page, "&lt;img src=x onerror=alert(1)&gt;") || !strings.Contains(page, "j&lt;b&gt;/f&#34;x") {
		t.Errorf("escaped text missing:\n%s", page)
	}
	if !strings.Contains(page, `href="./feed/j%3Cb%3E/f%22x"`) {
		t.Errorf("the feed's link is not path-escaped:\n%s", page)
	}
}

// What the database holds is redacted on the way out, as in logs: rows
// written before redaction existed (or by hand) keep no secret on the page.
func TestRedactsWhatTheDatabaseHolds(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	secret := `GET https://u:pa55@h.example/wfs?token=s3cr3t&typeName=a: HTTP 500`
	if _, err := pool.Exec(t.Context(), `INSERT INTO feed_status (jurisdiction, feed, kind, url, origin, expected_interval,
			last_attempt_at, last_error, last_error_at, consecutive_failures)
		VALUES ('j', 'f', 'wfs', 'https://u:pa55@h.example/wfs?token=s3cr3t', 'https://h.example:443', '1 hour', now(), $1, now(), 3)`, secret); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(t.Context(), `INSERT INTO dead_letter (jurisdiction, feed, url, origin, reason, retry_after, last_error)
		VALUES ('j', 'f', 'https://h.example/wfs?token=s3cr3t&startIndex=10', 'https://h.example:443', 'failed', now(), $1)`, secret); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(t.Context(), `INSERT INTO breaker_state (origin, state, override, override_reason, override_by)
		VALUES ('https://h.example:443', 'open', 'open', $1, 'me@host')`, secret); err != nil {
		t.Fatal(err)
	}
	h := New(pool, nil)
	for _, path := range []string{Prefix, FeedPath("j", "f")} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		page := w.Body.String()
		if w.Code != 200 {
			t.Fatalf("%s: %d\n%s", path, w.Code, page)
		}
		if strings.Contains(page, "s3cr3t") || strings.Contains(page, "pa55") {
			t.Errorf("%s shows a secret:\n%s", path, page)
		}
		if !strings.Contains(page, "token=REDACTED") || !strings.Contains(page, "HTTP 500") {
			t.Errorf("%s lacks the redacted error:\n%s", path, page)
		}
	}
}

func TestLineChart(t *testing.T) {
	if c := lineChart(nil); c.Points != "" || c.N != 0 {
		t.Errorf("empty: %+v", c)
	}
	c := lineChart([]float64{0, 2, 4})
	if c.Points != "0.0,59.0 150.0,30.0 300.0,1.0" || c.Max != 4 || c.Last != 4 {
		t.Errorf("%+v", c)
	}
	d := 1.5
	f := int64(7)
	dur, feat := pollCharts([]Poll{{DurationSeconds: &d, Features: &f}, {}, {DurationSeconds: &d}})
	if dur.N != 2 || feat.N != 1 || feat.Last != 7 {
		t.Errorf("duration %+v, features %+v", dur, feat)
	}
}

// BenchmarkFeedPage250k renders the page of a 250,000-parcel feed (loaded
// by the real poller): the target is under 300 ms a page and a thumbnail
// under 200 KB. It reports the thumbnail's bytes and the page's.
func BenchmarkFeedPage250k(b *testing.B) {
	pool := loadLayers(b, map[string]layertest.Layer{"parcels": layertest.Parcels{N: 250_000}}, 5000)
	h := New(pool, nil)
	h.SetBounds(map[string]BBox{"county": {-79, 35.5, -78.3, 35.8}})
	req := httptest.NewRequest("GET", FeedPath("county", "parcels"), nil)
	var thumb, page int
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("%d: %s", w.Code, w.Body.String())
		}
		page = w.Body.Len()
		if m := regexp.MustCompile(`(?s)<svg id="thumbnail".*?</svg>`).FindString(w.Body.String()); m != "" {
			thumb = len(m)
		} else {
			b.Fatal("no thumbnail")
		}
	}
	b.ReportMetric(float64(thumb), "thumbnail-bytes")
	b.ReportMetric(float64(page), "page-bytes")
}

// The collector's figures are feed_freshness's and breaker_state's, as the
// alert rules read them: every status present (0 when no feed has it), and
// a stuck flag that counts only while the origin is not closed.
func TestCollector(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	if _, err := pool.Exec(t.Context(), `INSERT INTO feed_status (jurisdiction, feed, origin, expected_interval, last_success_at, last_attempt_at)
		VALUES ('a', 'fresh', 'https://a.example:443', '1 hour', now(), now()),
		       ('a', 'stale', 'https://a.example:443', '1 hour', now() - interval '3 hours', now() - interval '3 hours'),
		       ('b', 'never', 'https://b.example:443', '1 hour', NULL, NULL);
		INSERT INTO breaker_state (origin, state, stuck) VALUES ('https://a.example:443', 'closed', true),
		       ('https://b.example:443', 'open', true)`); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP ingestd_status_feeds Feeds by feed_freshness status (removed, held, parked, failing, never, stale, fresh), cluster-wide.
# TYPE ingestd_status_feeds gauge
ingestd_status_feeds{status="failing"} 0
ingestd_status_feeds{status="fresh"} 1
ingestd_status_feeds{status="held"} 0
ingestd_status_feeds{status="never"} 0
ingestd_status_feeds{status="parked"} 1
ingestd_status_feeds{status="removed"} 0
ingestd_status_feeds{status="stale"} 1
# HELP ingestd_status_origin_stuck_open 1 while the origin's breaker is open and stuck (open across stuck_open_after cooldowns), else 0; per breaker_state row, cluster-wide.
# TYPE ingestd_status_origin_stuck_open gauge
ingestd_status_origin_stuck_open{origin="https://a.example:443"} 0
ingestd_status_origin_stuck_open{origin="https://b.example:443"} 1
`
	if err := testutil.CollectAndCompare(NewCollector(pool), strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

// TestPollCRS: a file poll's CRS and how it was identified show in the
// feed's last polls.
func TestPollCRS(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	if _, err := pool.Exec(t.Context(), `INSERT INTO feed_status (jurisdiction, feed, kind, url, origin, expected_interval)
		VALUES ('j', 'parcels', 'file', 'https://h.example/parcels.zip', 'https://h.example:443', '1 day')`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(t.Context(), `INSERT INTO polls (jurisdiction, feed, url, status, finished_at, fetch_mode, crs, crs_identified_by)
		VALUES ('j', 'parcels', 'https://h.example/parcels.zip', 'succeeded', now(), 'full', 'EPSG:2263', 'name')`); err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	New(pool, nil).ServeHTTP(w, httptest.NewRequest("GET", FeedPath("j", "parcels"), nil))
	if page := w.Body.String(); w.Code != 200 || !strings.Contains(page, "full · EPSG:2263 by name") {
		t.Errorf("%d: the page lacks the poll's CRS:\n%s", w.Code, page)
	}
}

// An operator's override in force is what the origin's badge shows: an
// origin forced open is not shown green because its breaker is closed, and
// a lapsed override no longer counts.
func TestOriginBadgeFollowsOverride(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	if _, err := pool.Exec(t.Context(), `INSERT INTO breaker_state (origin, state, override, override_until, override_by) VALUES
		('https://forced-open.example:443', 'closed', 'open', now() + interval '1 hour', 'me@host'),
		('https://forced-closed.example:443', 'open', 'closed', NULL, 'me@host'),
		('https://lapsed.example:443', 'closed', 'open', now() - interval '1 minute', 'me@host')`); err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	New(pool, nil).ServeHTTP(w, httptest.NewRequest("GET", Prefix, nil))
	page := w.Body.String()
	for origin, want := range map[string]string{
		"https://forced-open.example:443":   `<span class="breaker b-open">open</span> <small>by override (breaker closed)</small>`,
		"https://forced-closed.example:443": `<span class="breaker b-closed">closed</span> <small>by override (breaker open)</small>`,
		"https://lapsed.example:443":        `<span class="breaker b-closed">closed</span></td>`,
	} {
		i := strings.Index(page, "<td>"+origin+"</td>")
		if i < 0 {
			t.Fatalf("no row of %s:\n%s", origin, page)
		}
		if row := page[i:]; !strings.HasPrefix(row[strings.Index(row, "\n")+1:], "<td>"+want) {
			t.Errorf("%s's badge: want %s in\n%.300s", origin, want, row)
		}
	}
}
