package interop_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingestd/ingestd/arcgis/arcgistest"
	"github.com/ingestd/ingestd/feeds"
)

// Incremental refresh (issue 27): a feed read by edit date ("inc") and one
// of the same layer dumped whole ("full", incremental: off), polled at the
// same moment, must store the same features.

// countingServer serves the fixture and counts the body bytes it writes.
type countingServer struct {
	srv   *arcgistest.Server
	bytes atomic.Int64
}

func (c *countingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.srv.ServeHTTP(countingWriter{w, &c.bytes}, r)
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.n.Add(int64(n))
	return n, err
}

func (w countingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func countingFixture(t testing.TB) (*countingServer, string) {
	c := &countingServer{srv: arcgistest.New()}
	ts := httptest.NewServer(c)
	t.Cleanup(ts.Close)
	return c, ts.URL
}

// contentDigest fingerprints a feed's features by id, geometry and
// properties (not by when they changed: the two feeds load at different
// moments).
func (r *rig) contentDigest(t testing.TB, feed string) (string, int) {
	t.Helper()
	var d string
	var n int
	err := r.pool.QueryRow(r.ctx, `SELECT coalesce(md5(string_agg(feature_id || ':' || coalesce(encode(ST_AsEWKB(geom), 'hex'), '') || ':' || coalesce(properties::text, ''), '|' ORDER BY feature_id)), ''), count(*)
		FROM features WHERE jurisdiction = 'county' AND feed = $1`, feed).Scan(&d, &n)
	if err != nil {
		t.Fatal(err)
	}
	return d, n
}

// fetchMode is how poll id fetched (polls.fetch_mode) and its drift (-1:
// NULL).
func (r *rig) fetchMode(t testing.TB, id int64) (string, int) {
	t.Helper()
	var mode string
	var drift int
	err := r.pool.QueryRow(r.ctx, `SELECT coalesce(fetch_mode, ''), coalesce(drift, -1) FROM polls WHERE id = $1`, id).Scan(&mode, &drift)
	if err != nil {
		t.Fatal(err)
	}
	return mode, drift
}

// polled is one poll of a feed: its result, the requests and bytes the
// layer served for it, and its wall time.
type polled struct {
	res      feeds.PollResult
	requests []string
	bytes    int64
	wall     time.Duration
	mode     string
	drift    int
}

func (r *rig) pollCounted(t testing.TB, c *countingServer, layer, feed string) polled {
	t.Helper()
	c.srv.ResetRequests(layer)
	before := c.bytes.Load()
	start := time.Now()
	res, err := r.manager.Poll(r.ctx, "county/"+feed)
	p := polled{res: res, wall: time.Since(start), requests: c.srv.Requests(layer), bytes: c.bytes.Load() - before}
	if err != nil {
		t.Fatalf("poll of %s: %v", feed, err)
	}
	p.mode, p.drift = r.fetchMode(t, res.PollID)
	return p
}

// twoFeeds is the county's feeds list: inc and full on the same layer.
func twoFeeds(url, incExtra string) string {
	return fmt.Sprintf("      - {id: inc, kind: arcgis, url: %q%s}\n      - {id: full, kind: arcgis, url: %q, incremental: \"off\"}\n", url, incExtra, url)
}

// sameAsFull polls both feeds and fails unless they store the same
// features; it returns the incremental poll.
func (r *rig) sameAsFull(t testing.TB, c *countingServer, step string) (inc, full polled) {
	t.Helper()
	inc = r.pollCounted(t, c, "parcels", "inc")
	full = r.pollCounted(t, c, "parcels", "full")
	di, ni := r.contentDigest(t, "inc")
	df, nf := r.contentDigest(t, "full")
	if di != df || ni != nf {
		t.Fatalf("%s: the incremental feed holds %d features (%s), the full dump %d (%s)", step, ni, di, nf, df)
	}
	return inc, full
}

func envInt(t testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: a positive number", name, v)
	}
	return n
}

// TestIncrementalMatchesFullDump runs rounds of 0.5 % edits, 0.1 % deletes
// and a few adds on a tracked parcel layer: after each, the incremental
// feed's snapshot (edit_date: the edits' ids by edit date, their features,
// the rest kept) is identical to a full dump's at the same moment, and it
// read at most 2 % of the full dump's bytes in a fixed set of requests.
// INGESTD_INCREMENTAL_FEATURES (default 10,000) and _ROUNDS (20) size it;
// scripts/bench.sh incremental runs it at 100,000 and prints the figures.
func TestIncrementalMatchesFullDump(t *testing.T) {
	n := envInt(t, "INGESTD_INCREMENTAL_FEATURES", 10000)
	rounds := envInt(t, "INGESTD_INCREMENTAL_ROUNDS", 20)
	c, base := countingFixture(t)
	c.srv.AddLayer("parcels", arcgistest.Parcels(n))
	r := newRig(t, twoFeeds(arcgistest.URL(base, "parcels"), ""), nil)
	inc, full := r.sameAsFull(t, c, "first poll")
	if inc.mode != "full" || full.mode != "full" {
		t.Fatalf("first polls fetched %q and %q; want full dumps", inc.mode, full.mode)
	}
	rng := rand.New(rand.NewPCG(27, 1))
	at := int64(1764600000000) // the server's clock, an hour a round
	var incBytes, fullBytes int64
	var incWall, fullWall time.Duration
	for round := 1; round <= rounds; round++ {
		at += 3600_000
		var want int
		c.srv.Edit("parcels", func(l *arcgistest.Layer) {
			arcgistest.Churn{Edits: n / 200, Deletes: n / 1000, Adds: 3, At: at}.Apply(l, rng)
			want = len(l.Features)
		})
		inc, full := r.sameAsFull(t, c, fmt.Sprintf("round %d", round))
		if inc.mode != "edit_date" || inc.drift != -1 || full.mode != "full" {
			t.Fatalf("round %d: fetched %q (drift %d) and %q; want edit_date without drift, and full", round, inc.mode, inc.drift, full.mode)
		}
		if inc.res.Features != want || inc.res.Removed < n/1000-n/1000/10 || inc.res.Added != 3 {
			t.Fatalf("round %d: %+v; want %d features, 3 added, about %d removed", round, inc.res.ApplyResult, want, n/1000)
		}
		// probe, count, id list, id list of the edits, their features
		// by objectIds (one page), probe.
		reqs := inc.requests
		if len(reqs) != 6 || !slices.Equal(reqs[:4], []string{"probe", "count", "ids", "ids"}) || !strings.HasPrefix(reqs[4], "objectIds:") || reqs[5] != "probe" {
			t.Fatalf("round %d: requests %v; want probe, count, ids, ids, one objectIds, probe", round, reqs)
		}
		if inc.bytes*50 > full.bytes {
			t.Fatalf("round %d: the incremental poll read %d bytes, more than 2%% of the full dump's %d", round, inc.bytes, full.bytes)
		}
		incBytes, fullBytes = incBytes+inc.bytes, fullBytes+full.bytes
		incWall, fullWall = incWall+inc.wall, fullWall+full.wall
	}
	// Figures for scripts/bench.sh incremental; never asserted on.
	t.Logf("incremental: %d features, %d rounds: bytes per refresh %d incremental, %d full (%.2f%%); wall per refresh %v incremental, %v full (%.1f%%)",
		n, rounds, incBytes/int64(rounds), fullBytes/int64(rounds), 100*float64(incBytes)/float64(fullBytes),
		(incWall / time.Duration(rounds)).Round(time.Millisecond), (fullWall / time.Duration(rounds)).Round(time.Millisecond),
		100*float64(incWall)/float64(fullWall))
}
