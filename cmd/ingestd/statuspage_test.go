package main

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/redact"
	"github.com/ingestd/ingestd/wfs/wfstest"
)

// The demo's scenario, driven through `ingestd run`: a healthy county, a
// county whose layer shrinks (the guard holds the snapshot) and a flapping
// county (its breaker opens and its poll is parked), plus an operator's
// override with a hostile reason. The status page served on the metrics
// address must show what the SQL views say — the same feeds, statuses,
// counts, origins, dead letters and held snapshots — escaped and redacted.
func TestStatusPageDemo(t *testing.T) {
	t.Parallel()
	heavy(t, heavyStatusPage)
	bin := buildIngestd(t)
	// The instance, and breaker commands beside it.
	dbURL, pool := testDBFor(t, 2*ingestdConns)
	ctx := t.Context()

	_, good := fixtureOrigin(t, 2000, "parcels")
	shrinkSrv, shrink := fixtureOrigin(t, 40, "parcels")
	flapSrv, flap := fixtureOrigin(t, 25, "parcels")

	cfg := filepath.Join(t.TempDir(), "jurisdictions.yaml")
	var b strings.Builder
	b.WriteString(`max_in_flight: 10
defaults:
  schedule: "@every 3s"
  timeout: 10s
  request_timeout: 2s
  page_size: 10
  breaker:
    consecutive_failures: 1
    max_attempts: 1
    open_base: 2m
    open_max: 5m
    rate_limit: 0
dead_letter:
  interval: 250ms
  lease: 3s
  failed_backoff: 2m
jurisdictions:
`)
	for _, j := range []struct{ id, url, extra string }{
		// The parcels lie in [-78.9, -78.4] x [35.6, 35.601].
		{"good", good.URL + "/wfs?token=SECRET-TOKEN-1", "    bbox: [-78.95, 35.45, -78.35, 35.75]\n"},
		{"shrink", shrink.URL + "/wfs", ""},
		{"flap", flap.URL + "/wfs", ""},
	} {
		// good's polls of 2,000 features come further apart than the
		// others': every 3 s they would keep a busy machine's cores.
		fmt.Fprintf(&b, "  - id: %s\n%s    feeds:\n      - {id: parcels, kind: wfs, url: %q, type_name: parcels, sort_by: pin, page_size: %d, schedule: %q}\n",
			j.id, j.extra, j.url, map[bool]int{true: 500, false: 10}[j.id == "good"], map[bool]string{true: "@every 12s", false: "@every 3s"}[j.id == "good"])
	}
	if err := os.WriteFile(cfg, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	in := startInstance(t, bin, "ingestd", cfg, dbURL)
	in.waitRunning(t, clusterCeiling)

	statusOf := func(j string) string {
		var s string
		_ = pool.QueryRow(ctx, `SELECT status FROM feed_freshness WHERE jurisdiction = $1 AND feed = 'parcels'`, j).Scan(&s)
		return s
	}
	if !waitUntil(clusterCeiling, func() bool {
		return statusOf("good") == "fresh" && statusOf("shrink") == "fresh" && statusOf("flap") == "fresh"
	}) {
		t.Fatalf("feeds not fresh: good %s, shrink %s, flap %s", statusOf("good"), statusOf("shrink"), statusOf("flap"))
	}
	// The shrinking county now serves 5 of its 40 parcels: held. The
	// flapping one answers an error page with a secret in it: its breaker
	// opens and its poll is parked.
	shrinkSrv.AddLayer("parcels", layertest.Parcels{N: 5})
	flapSrv.SetFault(func(wfstest.Request) *wfstest.Fault {
		return &wfstest.Fault{Status: 503, Body: "<html><body>down, see http://admin:hunter2@flap.example/x?token=SECRET-TOKEN-2</body></html>"}
	})
	breakerOf := func() string {
		var s string
		_ = pool.QueryRow(ctx, `SELECT state FROM breaker_state WHERE origin = $1`, flap.URL).Scan(&s)
		return s
	}
	if !waitUntil(clusterCeiling, func() bool {
		return statusOf("shrink") == "held" && statusOf("flap") == "parked" && breakerOf() == "open"
	}) {
		t.Fatalf("want shrink held, flap parked and its breaker open: %s, %s, %s", statusOf("shrink"), statusOf("flap"), breakerOf())
	}
	// An operator pins the flapping origin open, with a reason that is
	// markup and a URL with a token.
	if code, out := runBin(t, bin, "breaker", "open", flap.URL, "--for", "1h", "-database-url", dbURL,
		"--reason", `<script>alert("x")</script> ticket https://ops.example/t?token=SECRET-TOKEN-3`); code != 0 {
		t.Fatalf("breaker open: exit %d\n%s", code, out)
	}

	base := "http://" + in.metricsAddr(t)
	// Feeds: every row of feed_freshness, in order, with its status,
	// feature count, failures and (shortened, redacted) last error.
	// The origins, dead letters and held snapshots are read with them: the
	// page and the tables are compared as of one moment (the replayer
	// turns a letter from pending to replaying and back meanwhile).
	type feedRow struct{ Feed, Status, Features, Failures, Error string }
	type originRow struct{ Origin, State, Override, By string }
	type letterRow struct{ Status, N string }
	type heldRow struct{ Feed, Previous, Snapshot string }
	var (
		want    []feedRow
		origins []originRow
		letters []letterRow
		held    []heldRow
	)
	overview := stable(t, base+"/status/", func() any {
		rows, _ := pool.Query(ctx, `SELECT jurisdiction || '/' || feed, status, coalesce(feature_count::text, '—'),
			consecutive_failures::text, coalesce(last_error, '') FROM feed_freshness ORDER BY jurisdiction, feed`)
		var err error
		if want, err = pgx.CollectRows(rows, pgx.RowToStructByPos[feedRow]); err != nil {
			t.Fatal(err)
		}
		// The badge is the override in force, else the breaker's state.
		rows, _ = pool.Query(ctx, `SELECT origin, CASE WHEN override <> 'none' AND (override_until IS NULL OR override_until > now())
				THEN override ELSE state END, override, coalesce(override_by, '')
			FROM breaker_state ORDER BY state = 'closed', origin`)
		if origins, err = pgx.CollectRows(rows, pgx.RowToStructByPos[originRow]); err != nil {
			t.Fatal(err)
		}
		rows, _ = pool.Query(ctx, `SELECT status, count(*)::text FROM dead_letter GROUP BY status ORDER BY status`)
		if letters, err = pgx.CollectRows(rows, pgx.RowToStructByPos[letterRow]); err != nil {
			t.Fatal(err)
		}
		rows, _ = pool.Query(ctx, `SELECT jurisdiction || '/' || feed, previous_features::text, snapshot_features::text FROM held_snapshots`)
		if held, err = pgx.CollectRows(rows, pgx.RowToStructByPos[heldRow]); err != nil {
			t.Fatal(err)
		}
		return []any{want, origins, letters, held}
	})
	checkNoLeak(t, "overview", overview)
	got := tableRows(t, overview, "feeds")
	if len(got) != len(want) || len(want) != 3 {
		t.Fatalf("feeds table has %d rows, feed_freshness %d:\n%v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g[0] != w.Feed || g[1] != w.Status || plain(g[4]) != w.Features || g[5] != w.Failures {
			t.Errorf("feed row %d: page %q, view %+v", i, g, w)
		}
		// Shortened, it keeps the start and the end (the root cause).
		head, tail, _ := strings.Cut(g[6], "… ")
		if e := redact.Text(w.Error); !strings.HasPrefix(e, strings.TrimSuffix(head, ": ")) || !strings.HasSuffix(e, tail) || (e != "" && g[6] == "") {
			t.Errorf("feed row %d: last error %q, view (redacted) %q", i, g[6], e)
		}
	}
	if !strings.Contains(overview, `class="status s-held">held<`) || !strings.Contains(overview, `class="status s-parked">parked<`) {
		t.Error("the overview does not label held and parked feeds")
	}

	// Origins: breaker_state's rows, their state and the override.
	gotOrigins := tableRows(t, overview, "origins")
	if len(gotOrigins) != len(origins) {
		t.Fatalf("origins table has %d rows, breaker_state %d: %v", len(gotOrigins), len(origins), gotOrigins)
	}
	flapOrigin := flap.URL
	sawFlap := false
	for i, o := range origins {
		g := gotOrigins[i]
		if g[0] != o.Origin || !strings.HasPrefix(g[1], o.State) || !strings.HasPrefix(g[5], o.Override) || g[6] != o.By {
			t.Errorf("origin row %d: page %q, breaker_state %+v", i, g, o)
		}
		if strings.HasPrefix(o.Origin, flapOrigin) {
			sawFlap = o.State == "open" && o.Override == "open" && o.By != ""
			if !strings.Contains(g[7], `<script>alert("x")</script>`) {
				t.Errorf("the override's reason is not shown as text: %q", g[7])
			}
		}
	}
	if !sawFlap {
		t.Errorf("the flapping origin is not open with an override: %+v", origins)
	}

	// Dead letters by status, and held snapshots.
	gotLetters := tableRows(t, overview, "deadletters")
	if len(letters) == 0 || len(gotLetters) != len(letters) {
		t.Fatalf("dead letters: page %v, table %v", gotLetters, letters)
	}
	for i, l := range letters {
		if gotLetters[i][0] != l.Status || gotLetters[i][1] != l.N {
			t.Errorf("dead letters row %d: page %q, table %+v", i, gotLetters[i], l)
		}
	}
	gotHeld := tableRows(t, overview, "held")
	if len(held) != 1 || len(gotHeld) != 1 || gotHeld[0][0] != held[0].Feed || plain(gotHeld[0][2]) != held[0].Previous || plain(gotHeld[0][3]) != held[0].Snapshot {
		t.Errorf("held: page %v, view %v", gotHeld, held)
	}

	// The feeds' own pages.
	flapPage := checkPolls(t, ctx, pool, base, "flap")
	checkNoLeak(t, "flap's page", flapPage)
	// The open dead letter, read with the page (its status moves).
	var letterID int64
	var letterStatus string
	flapPage = stable(t, base+"/status/feed/flap/parcels", func() any {
		if err := pool.QueryRow(ctx, `SELECT id, status FROM dead_letter WHERE jurisdiction = 'flap' AND status IN ('pending', 'replaying')`).Scan(&letterID, &letterStatus); err != nil {
			t.Fatal(err)
		}
		return [2]any{letterID, letterStatus}
	})
	dl := tableRows(t, flapPage, "deadletter")
	if len(dl) < 2 || dl[0][1] != strconv.FormatInt(letterID, 10) || !strings.HasPrefix(dl[1][1], letterStatus) {
		t.Errorf("flap's open dead letter: page %v, table id %d %s", dl, letterID, letterStatus)
	}

	shrinkPage := checkPolls(t, ctx, pool, base, "shrink")
	if hs := tableRows(t, shrinkPage, "heldsnapshot"); len(hs) < 4 || !strings.HasPrefix(hs[2][1], "5 ") || !strings.Contains(hs[3][1], "shrink") {
		t.Errorf("shrink's held snapshot on its page: %v", hs)
	}

	goodPage := checkPolls(t, ctx, pool, base, "good")
	checkNoLeak(t, "good's page", goodPage)
	for _, want := range []string{`<svg id="thumbnail"`, `<rect class="bbox"`, `<path class="geom" d="M`, `<svg id="chart-duration"`, `<svg id="chart-features"`, "1,000 features sampled"} {
		if !strings.Contains(goodPage, want) {
			t.Errorf("good's page lacks %s", want)
		}
	}
	if strings.Contains(goodPage, "outside the jurisdiction") {
		t.Error("good's parcels are inside its bbox, yet the page says they are outside")
	}
	if resp, err := http.Get(base + "/status/feed/nope/nothing"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown feed: %v %v", resp, err)
	}

	// The collector's figures are the view's, read on both sides of a
	// scrape until the view held still across it (on a slow machine good
	// may go stale, or a slow request park it, between two reads).
	var metrics string
	var view map[string]float64
	if !waitUntil(clusterCeiling, func() bool {
		before := freshnessCounts(t, ctx, pool)
		metrics = in.scrape(t)
		view = freshnessCounts(t, ctx, pool)
		return reflect.DeepEqual(before, view)
	}) {
		t.Fatal("feed_freshness never held still across a scrape")
	}
	if view["held"] != 1 {
		t.Errorf("feed_freshness has %v held feeds, want shrink's 1", view["held"])
	}
	for _, status := range []string{"removed", "held", "parked", "failing", "never", "stale", "fresh"} {
		if n, ok := metricSum(metrics, "ingestd_status_feeds", map[string]string{"status": status}); !ok || n != view[status] {
			t.Errorf("ingestd_status_feeds{status=%q} = %v (%v), want feed_freshness's %v", status, n, ok, view[status])
		}
	}
	if !regexp.MustCompile(`(?m)^ingestd_ready 1$`).MatchString(metrics) {
		t.Error("ingestd_ready is not 1")
	}
	if _, ok := metricSum(metrics, "ingestd_feeds_expected_interval_seconds", map[string]string{"jurisdiction": "good", "feed": "parcels"}); !ok {
		t.Error("no ingestd_feeds_expected_interval_seconds for good/parcels")
	}

	screenshots(t, base)
}

// screenshots renders the overview and two feed pages in headless Chromium
// with the project's script, which fails on a page error or a blank page.
// INGESTD_SCREENSHOTS=DIR keeps the PNGs (docs/ holds the README's).
func screenshots(t *testing.T, base string) {
	t.Helper()
	dir := os.Getenv("INGESTD_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	} else if abs, err := filepath.Abs(filepath.Join("..", "..", dir)); err == nil && !filepath.IsAbs(dir) {
		dir = abs
	}
	cmd := exec.CommandContext(t.Context(), filepath.Join("..", "..", "scripts", "screenshot.sh"), dir,
		"status-overview="+base+"/status/", "status-feed="+base+"/status/feed/good/parcels",
		"status-held="+base+"/status/feed/shrink/parcels")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 && os.Getenv("CI") != "true" {
		t.Logf("no chromium, no screenshots:\n%s", out)
		return
	}
	if err != nil {
		t.Errorf("scripts/screenshot.sh: %v\n%s", err, out)
		return
	}
	t.Logf("screenshots in %s:\n%s", dir, out)
}

// checkPolls fetches the page of jurisdiction/parcels and compares its
// poll table with the feed's polls; it returns the page.
func checkPolls(t *testing.T, ctx context.Context, pool *pgxpool.Pool, base, jurisdiction string) string {
	t.Helper()
	type pollRow struct{ ID, Status, Pages, Features, Added, Modified, Removed string }
	query := func() []pollRow {
		rows, _ := pool.Query(ctx, `SELECT id::text, status, pages::text, coalesce(features::text, '—'), coalesce(added::text, '—'),
			coalesce(modified::text, '—'), coalesce(removed::text, '—')
			FROM polls WHERE jurisdiction = $1 AND feed = 'parcels' ORDER BY started_at DESC LIMIT 50`, jurisdiction)
		want, err := pgx.CollectRows(rows, pgx.RowToStructByPos[pollRow])
		if err != nil {
			t.Fatal(err)
		}
		return want
	}
	shows := func(got [][]string, want []pollRow) bool {
		if len(got) != len(want) || len(want) == 0 {
			return false
		}
		for i, w := range want {
			g := got[i]
			if g[0] != w.ID || g[2] != w.Status || g[3] != w.Pages || plain(g[4]) != w.Features || plain(g[5]) != w.Added ||
				plain(g[6]) != w.Modified || plain(g[7]) != w.Removed {
				return false
			}
		}
		return true
	}
	// The feed keeps polling: the page must show the polls table as it
	// was just before or just after the page was made (a poll beginning
	// or ending meanwhile moves it). On a busy machine a page can take
	// longer than the gap between two polls, so no quiet window is waited
	// for.
	var page string
	var got [][]string
	var before, after []pollRow
	if !waitUntil(clusterCeiling, func() bool {
		before = query()
		page = get(t, base+"/status/feed/"+jurisdiction+"/parcels")
		after = query()
		got = tableRows(t, page, "polls")
		return shows(got, before) || shows(got, after)
	}) {
		t.Fatalf("%s: the page's polls %v are neither the table's before it %+v nor after %+v", jurisdiction, got, before, after)
	}
	return page
}

// stable fetches the page at url between two runs of query that return the
// same rows, so that a poll finishing meanwhile cannot make the page and
// the view disagree; the last run's rows are what query left behind.
func stable(t *testing.T, url string, query func() any) string {
	t.Helper()
	var page string
	if !waitUntil(clusterCeiling, func() bool {
		before := query()
		page = get(t, url)
		return reflect.DeepEqual(before, query())
	}) {
		t.Fatalf("%s: the database kept changing for %s", url, clusterCeiling)
	}
	return page
}

// checkNoLeak fails if a page holds a secret of the scenario or markup
// that came from data.
func checkNoLeak(t *testing.T, name, page string) {
	t.Helper()
	for _, s := range []string{"SECRET-TOKEN", "hunter2", "<script>", `alert("x")`} {
		if strings.Contains(page, s) {
			t.Errorf("%s holds %q", name, s)
		}
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	c := &http.Client{Timeout: clusterCeiling} // a hang bound, not a speed
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET %s: %s %s\n%s", url, resp.Status, resp.Header.Get("Content-Type"), body)
	}
	return string(body)
}

// plain is a number as the page prints it (2,000), as SQL does (2000).
func plain(s string) string { return strings.ReplaceAll(s, ",", "") }

var (
	rowRE  = regexp.MustCompile(`(?s)<tr[^>]*>(.*?)</tr>`)
	cellRE = regexp.MustCompile(`(?s)<t[dh][^>]*>(.*?)</t[dh]>`)
	tagRE  = regexp.MustCompile(`<[^>]*>`)
)

// tableRows returns the text of the cells (th and td) of each row of the
// table with id that has a td (not the header) and is not a placeholder,
// unescaped.
func tableRows(t *testing.T, page, id string) [][]string {
	t.Helper()
	start := strings.Index(page, `<table id="`+id+`"`)
	if start < 0 {
		t.Fatalf("no table %s on the page", id)
	}
	table := page[start:]
	table = table[:strings.Index(table, "</table>")]
	var out [][]string
	for _, r := range rowRE.FindAllStringSubmatch(table, -1) {
		var cells []string
		for _, c := range cellRE.FindAllStringSubmatch(r[1], -1) {
			cells = append(cells, strings.TrimSpace(html.UnescapeString(tagRE.ReplaceAllString(c[1], ""))))
		}
		if strings.Contains(r[1], "<td") && !strings.Contains(r[1], "colspan") {
			out = append(out, cells)
		}
	}
	return out
}

// freshnessCounts counts the feeds of feed_freshness by status.
func freshnessCounts(t *testing.T, ctx context.Context, pool *pgxpool.Pool) map[string]float64 {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT status, count(*)::float8 FROM feed_freshness GROUP BY status`)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]float64{}
	var status string
	var n float64
	if _, err := pgx.ForEachRow(rows, []any{&status, &n}, func() error {
		counts[status] = n
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return counts
}
