package interop_test

import (
	"errors"
	"fmt"
	"maps"
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

// Incremental refresh: a feed read by edit date ("inc") and one
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

// typedDigest digests what an analyst sees of a feed: its typed layer's
// rows (without the columns that name the feed or date its rows) and
// its columns as feed_columns records them (type, non-null count), so
// that a delta's derived schema is checked against a full dump's.
func (r *rig) typedDigest(t testing.TB, feed, layer string) string {
	t.Helper()
	var rows, cols string
	err := r.pool.QueryRow(r.ctx, fmt.Sprintf(`SELECT coalesce(md5(string_agg((to_jsonb(l) - 'first_seen_at' - 'changed_at' - 'ingestd_poll' - 'ingestd_rest' - 'ingestd_absent')::text, '|' ORDER BY feature_id)), '') FROM %s l`, layer)).Scan(&rows)
	if err != nil {
		t.Fatal(err)
	}
	err = r.pool.QueryRow(r.ctx, `SELECT coalesce(string_agg(name || ' ' || type || ' ' || non_null || ' ' || unconverted, ', ' ORDER BY ordinal), '')
		FROM feed_columns WHERE jurisdiction = 'county' AND feed = $1 AND removed_at IS NULL`, feed).Scan(&cols)
	if err != nil {
		t.Fatal(err)
	}
	return rows + " " + cols
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
	return fmt.Sprintf("      - {id: inc, kind: arcgis, url: %q%s}\n      - {id: full, name: full_dump, kind: arcgis, url: %q, incremental: \"off\"}\n", url, incExtra, url)
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
	if ti, tf := r.typedDigest(t, "inc", "county.inc"), r.typedDigest(t, "full", "county.full_dump"); ti != tf {
		t.Fatalf("%s: the typed layers differ:\nincremental %s\nfull dump   %s", step, ti, tf)
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
	// The edits of a round are stamped over the hour before it (editors
	// at work between polls); INGESTD_INCREMENTAL_SPREAD_MS=1 stamps
	// them at one instant, the worst case of edit_skew (every edit of the
	// round before is fetched again).
	spread := int64(envInt(t, "INGESTD_INCREMENTAL_SPREAD_MS", 3600_000))
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
			arcgistest.Churn{Edits: n / 200, Deletes: n / 1000, Adds: 3, At: at, Spread: spread}.Apply(l, rng)
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
	t.Logf("incremental: %d features, %d rounds, edits spread over %v: bytes per refresh %d incremental, %d full (%.2f%%); wall per refresh %v incremental, %v full (%.1f%%)",
		n, rounds, time.Duration(spread)*time.Millisecond, incBytes/int64(rounds), fullBytes/int64(rounds), 100*float64(incBytes)/float64(fullBytes),
		(incWall / time.Duration(rounds)).Round(time.Millisecond), (fullWall / time.Duration(rounds)).Round(time.Millisecond),
		100*float64(incWall)/float64(fullWall))
}

// incRig is a rig with the feeds inc and full on a tracked layer of n
// parcels, both loaded by a first full dump.
func incRig(t *testing.T, n int) (*countingServer, *rig, string) {
	t.Helper()
	c, base := countingFixture(t)
	c.srv.AddLayer("parcels", arcgistest.Parcels(n))
	url := arcgistest.URL(base, "parcels")
	r := newRig(t, twoFeeds(url, ""), nil)
	if inc, _ := r.sameAsFull(t, c, "first poll"); inc.mode != "full" {
		t.Fatalf("first poll fetched %q; want full", inc.mode)
	}
	return c, r, url
}

// watermark is the edit part of a poll's stored version ("" when none).
func (r *rig) watermark(t *testing.T, id int64) string {
	_, edit, _ := strings.Cut(r.pollRow(t, id).version, ";edit=")
	edit, _, _ = strings.Cut(edit, ";")
	return edit
}

// TestIncrementalFallbacks: each way the edit-date path can be wrong is
// caught (by the proof in the same poll, or by the reconciliation), the
// watermark is the server's time, and a layer without edit fields or a
// snapshot not applied makes the next poll a full dump.
func TestIncrementalFallbacks(t *testing.T) {
	const n = 500
	at := int64(1764600000000)
	t.Run("deleted ids", func(t *testing.T) {
		c, r, _ := incRig(t, n)
		c.srv.Edit("parcels", func(l *arcgistest.Layer) {
			arcgistest.Churn{Deletes: 5, At: at}.Apply(l, rand.New(rand.NewPCG(1, 2)))
		})
		inc, _ := r.sameAsFull(t, c, "after deletes")
		// Fetched: only the features stamped within edit_skew (5m) of the
		// watermark, a minute apart: at most 6.
		fetched := slices.ContainsFunc(inc.requests, func(s string) bool {
			k, ok := strings.CutPrefix(s, "objectIds:")
			m, _ := strconv.Atoi(k)
			return ok && m > 6
		})
		if inc.mode != "edit_date" || inc.res.Removed != 5 || inc.res.Features != n-5 || inc.res.Modified != 0 || fetched {
			t.Fatalf("after deletes: %q %+v, requests %v; want edit_date, 5 removed, only the skew's features fetched", inc.mode, inc.res.ApplyResult, inc.requests)
		}
	})
	t.Run("edit without edit date change caught by the reconciliation", func(t *testing.T) {
		c, r, url := incRig(t, n)
		c.srv.Edit("parcels", func(l *arcgistest.Layer) {
			for _, i := range []int{10, 20, 30, 40} {
				l.Features[i].Attributes = maps.Clone(l.Features[i].Attributes)
				l.Features[i].Attributes["NAME"] = "renamed without a new edit date"
			}
			l.LastEditDate = at
		})
		inc := r.pollCounted(t, c, "parcels", "inc")
		r.pollCounted(t, c, "parcels", "full")
		di, _ := r.contentDigest(t, "inc")
		df, _ := r.contentDigest(t, "full")
		if inc.mode != "edit_date" || inc.res.Modified != 0 || di == df {
			t.Fatalf("silent edits: %q %+v; want an edit_date poll that misses them (the reconciliation's case)", inc.mode, inc.res.ApplyResult)
		}
		r.update(t, twoFeeds(url, ", full_every: 1ms"))
		inc, _ = r.sameAsFull(t, c, "reconciliation")
		if inc.mode != "full" || inc.drift != 4 || inc.res.Modified != 4 {
			t.Fatalf("reconciliation: %q drift %d %+v; want a full dump with drift 4, 4 modified", inc.mode, inc.drift, inc.res.ApplyResult)
		}
		if got := r.counter(t, "ingestd_feeds_incremental_drift_total", "cause", "reconciliation"); got != 4 {
			t.Errorf("ingestd_feeds_incremental_drift_total{cause=reconciliation} = %v; want 4", got)
		}
	})
	t.Run("add the edit date does not show falls back to a full dump", func(t *testing.T) {
		c, r, _ := incRig(t, n)
		c.srv.Edit("parcels", func(l *arcgistest.Layer) {
			f := l.Features[0]
			attrs := maps.Clone(f.Attributes)
			attrs[arcgistest.EditDateField] = int64(1600000000000) // older than the watermark
			l.Features = append(l.Features, arcgistest.Feature{OID: 9999, Attributes: attrs, Geometry: f.Geometry})
			l.LastEditDate = at
		})
		inc, _ := r.sameAsFull(t, c, "an add without a new edit date")
		if inc.mode != "full" || inc.drift != 1 || inc.res.Added != 1 || inc.res.Features != n+1 {
			t.Fatalf("unseen add: %q drift %d %+v; want a full dump in the same poll, drift 1, 1 added", inc.mode, inc.drift, inc.res.ApplyResult)
		}
		// The full dump's watermark lets the next poll read by edit date.
		c.srv.Edit("parcels", func(l *arcgistest.Layer) {
			arcgistest.Churn{Edits: 3, At: at + 3600_000}.Apply(l, rand.New(rand.NewPCG(3, 4)))
		})
		if inc, _ := r.sameAsFull(t, c, "after the fallback"); inc.mode != "edit_date" {
			t.Fatalf("after the fallback: %q; want edit_date", inc.mode)
		}
	})
	t.Run("server clock behind the poller's", func(t *testing.T) {
		c, r, _ := incRig(t, n)
		// The server stamps edits three hours behind the poller's clock:
		// a watermark from the poller's clock would skip them.
		behind := time.Now().Add(-3 * time.Hour).UnixMilli()
		c.srv.Edit("parcels", func(l *arcgistest.Layer) {
			arcgistest.Churn{Edits: 5, At: behind}.Apply(l, rand.New(rand.NewPCG(5, 6)))
		})
		inc, _ := r.sameAsFull(t, c, "edits stamped behind")
		if inc.mode != "edit_date" || inc.res.Modified == 0 {
			t.Fatalf("edits stamped behind: %q %+v; want edit_date with the edits", inc.mode, inc.res.ApplyResult)
		}
		if wm := r.watermark(t, inc.res.PollID); wm != arcgistest.EditDateField+"@"+strconv.FormatInt(behind, 10) {
			t.Fatalf("stored watermark %q; want the server's greatest edit date %d", wm, behind)
		}
	})
	t.Run("layer loses editFieldsInfo", func(t *testing.T) {
		c, r, _ := incRig(t, n)
		c.srv.Edit("parcels", func(l *arcgistest.Layer) {
			arcgistest.Churn{Edits: 3, At: at}.Apply(l, rand.New(rand.NewPCG(7, 8)))
			l.EditDateField = ""
		})
		inc, _ := r.sameAsFull(t, c, "without editFieldsInfo")
		if inc.mode != "full" || inc.res.Modified == 0 || r.watermark(t, inc.res.PollID) != "" {
			t.Fatalf("without editFieldsInfo: %q %+v, watermark %q; want a full dump storing no watermark", inc.mode, inc.res.ApplyResult, r.watermark(t, inc.res.PollID))
		}
	})
	t.Run("held snapshot stores no watermark", func(t *testing.T) {
		c, r, _ := incRig(t, n)
		c.srv.Edit("parcels", func(l *arcgistest.Layer) {
			arcgistest.Churn{Deletes: n * 6 / 10, At: at}.Apply(l, rand.New(rand.NewPCG(9, 10)))
		})
		res, err := r.manager.Poll(r.ctx, "county/inc")
		var held *feeds.HeldError
		if !errors.As(err, &held) {
			t.Fatalf("a delta deleting 60%% of the layer: %+v, %v; want it held by the shrink guard", res, err)
		}
		if mode, _ := r.fetchMode(t, r.lastPoll(t, "inc")); mode != "edit_date" {
			t.Fatalf("the held poll fetched %q; want edit_date", mode)
		}
		// Held: the feed's validators are cleared, so the next poll
		// dumps the layer whole (and is held again: it shrinks as much).
		c.srv.Edit("parcels", func(l *arcgistest.Layer) { l.LastEditDate++ })
		c.srv.ResetRequests("parcels")
		if _, err := r.manager.Poll(r.ctx, "county/inc"); !errors.As(err, &held) {
			t.Fatalf("the poll after a held one: %v; want held again", err)
		}
		reqs := c.srv.Requests("parcels")
		if mode, _ := r.fetchMode(t, r.lastPoll(t, "inc")); mode != "full" || !slices.Contains(reqs, "objectIds:"+strconv.Itoa(n-n*6/10)) {
			t.Fatalf("after a held delta: %q, requests %v; want a full dump", mode, reqs)
		}
	})
}

// TestAcceptedHeldDelta: a delta the shrink guard held is applied as a
// delta when the operator accepts it (its record is part of the poll's
// staging), and then equals a full dump of the same layer, accepted too.
func TestAcceptedHeldDelta(t *testing.T) {
	n := 1000
	c, r, _ := incRig(t, n)
	c.srv.Edit("parcels", func(l *arcgistest.Layer) {
		arcgistest.Churn{Edits: 20, Deletes: n * 6 / 10, Adds: 2, At: 1764600000000 + 3600_000, Spread: 3600_000}.Apply(l, rand.New(rand.NewPCG(11, 12)))
	})
	var held *feeds.HeldError
	var accepted []feeds.ApplyResult
	for _, feed := range []string{"inc", "full"} {
		if _, err := r.manager.Poll(r.ctx, "county/"+feed); !errors.As(err, &held) {
			t.Fatalf("%s: a snapshot deleting 60%% of the layer: %v; want it held by the shrink guard", feed, err)
		}
		res, err := r.store.AcceptHeld(r.ctx, "county", feed)
		if err != nil {
			t.Fatalf("accepting %s's held snapshot: %v", feed, err)
		}
		accepted = append(accepted, res)
	}
	if inc, full := accepted[0], accepted[1]; inc != full || inc.Removed < n/2 {
		t.Fatalf("accepted: incremental %+v, full dump %+v; want the same counts, more than %d removed", inc, full, n/2)
	}
	if mode, _ := r.fetchMode(t, r.lastPoll(t, "inc")); mode != "edit_date" {
		t.Fatalf("the held incremental poll fetched %q; want edit_date", mode)
	}
	di, ni := r.contentDigest(t, "inc")
	df, nf := r.contentDigest(t, "full")
	if di != df || ni != nf {
		t.Fatalf("after accepting: the incremental feed holds %d features (%s), the full dump %d (%s)", ni, di, nf, df)
	}
	if ti, tf := r.typedDigest(t, "inc", "county.inc"), r.typedDigest(t, "full", "county.full_dump"); ti != tf {
		t.Fatalf("after accepting: the typed layers differ:\nincremental %s\nfull dump   %s", ti, tf)
	}
}

// counter is the value of the counter name with label = value (and any
// other labels), summed.
func (r *rig) counter(t *testing.T, name, label, value string) float64 {
	t.Helper()
	mfs, err := r.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// TestChangeTracking: a layer whose service tracks changes is read by its
// change log (extractChanges since the stored serverGen, returnIdsOnly,
// then objectIds), its snapshot identical to a full dump's; a pruned log,
// a job instead of an answer, or an error make the poll read by edit date
// instead, in the same poll.
func TestChangeTracking(t *testing.T) {
	const n = 2000
	at := int64(1764600000000)
	setup := func(t *testing.T) (*countingServer, *rig) {
		c, base := countingFixture(t)
		c.srv.AddLayer("parcels", arcgistest.WithChangeTracking(arcgistest.Parcels(n)))
		r := newRig(t, twoFeeds(arcgistest.URL(base, "parcels"), ""), nil)
		if inc, _ := r.sameAsFull(t, c, "first poll"); inc.mode != "full" {
			t.Fatalf("first poll fetched %q; want full", inc.mode)
		}
		return c, r
	}
	churn := func(c *countingServer, round int) {
		c.srv.Edit("parcels", func(l *arcgistest.Layer) {
			arcgistest.Churn{Edits: n / 200, Deletes: n / 1000, Adds: 3, At: at + int64(round)*3600_000}.Apply(l, rand.New(rand.NewPCG(uint64(round), 27)))
		})
	}
	t.Run("by the change log", func(t *testing.T) {
		c, r := setup(t)
		for round := 1; round <= 3; round++ {
			churn(c, round)
			inc, full := r.sameAsFull(t, c, fmt.Sprintf("round %d", round))
			reqs := inc.requests
			if inc.mode != "change_tracking" || len(reqs) != 7 || !slices.Equal(reqs[:5], []string{"probe", "count", "service", "ids", "extractChanges"}) ||
				!strings.HasPrefix(reqs[5], "objectIds:") || inc.bytes*50 > full.bytes {
				t.Fatalf("round %d: %q, requests %v, %d bytes of a full dump's %d; want change_tracking: probe, count, service, ids, extractChanges, objectIds, probe", round, inc.mode, reqs, inc.bytes, full.bytes)
			}
		}
	})
	for _, c := range []struct {
		name    string
		breakIt func(*arcgistest.Tracking)
	}{
		{"pruned log", func(tr *arcgistest.Tracking) { tr.MinServerGen = tr.ServerGen + 1 }},
		{"job instead of an answer", func(tr *arcgistest.Tracking) { tr.Async = true }},
		{"error", func(tr *arcgistest.Tracking) { tr.Error = true }},
	} {
		t.Run(c.name+" falls back to the edit date", func(t *testing.T) {
			srv, r := setup(t)
			churn(srv, 1)
			srv.srv.Edit("parcels", func(l *arcgistest.Layer) { c.breakIt(&l.Tracking) })
			inc, _ := r.sameAsFull(t, srv, "broken change log")
			if inc.mode != "edit_date" || inc.drift != -1 {
				t.Fatalf("%s: %q drift %d, requests %v; want edit_date without drift", c.name, inc.mode, inc.drift, inc.requests)
			}
		})
	}
}
