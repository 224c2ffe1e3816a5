package postgis_test

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
)

func TestStageAndApply(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("parcels")

	id, res := b.poll(t, feed,
		[]ft.Feature{
			feature("p1", point(-78.6, 35.8, 4326), props("name", "one")),
			feature("p2", square(-78.5, 35.7, 0.5), props("name", "two")),
		},
		[]ft.Feature{feature("p3", point(-78.4, 35.9, 0), props("name", "three"))}, // SRID 0 → 4326
		[]ft.Feature{feature("p4", nil, nil)},
	)
	want := feeds.ApplyResult{Features: 4, Added: 4}
	if res != want {
		t.Fatalf("Apply = %+v, want %+v", res, want)
	}

	for _, c := range []struct{ id, wkt, name string }{
		{"p1", "POINT(-78.6 35.8)", "one"},
		{"p2", "POLYGON((-78.5 35.7,-78 35.7,-78 36.2,-78.5 36.2,-78.5 35.7))", "two"},
		{"p3", "POINT(-78.4 35.9)", "three"},
		{"p4", "", ""},
	} {
		var wkt, name *string
		var srid *int
		var pollID int64
		err := b.pool.QueryRow(b.ctx, `SELECT ST_AsText(geom), ST_SRID(geom), properties->>'name', poll_id
			FROM features WHERE jurisdiction = 'wake' AND feed = 'parcels' AND feature_id = $1`, c.id).
			Scan(&wkt, &srid, &name, &pollID)
		if err != nil {
			t.Fatalf("%s: %v", c.id, err)
		}
		if c.wkt == "" {
			if wkt != nil || name != nil {
				t.Errorf("%s: geom %v, name %v; want NULLs", c.id, wkt, name)
			}
			continue
		}
		if wkt == nil || *wkt != c.wkt || *srid != 4326 || name == nil || *name != c.name || pollID != id {
			t.Errorf("%s: got %v srid %v name %v poll %d; want %s 4326 %s %d", c.id, deref(wkt), deref(srid), deref(name), pollID, c.wkt, c.name, id)
		}
	}

	var status string
	var pages, features, added, dups int
	if err := b.pool.QueryRow(b.ctx, `SELECT status, pages, features, added, duplicate_ids FROM polls WHERE id = $1`, id).
		Scan(&status, &pages, &features, &added, &dups); err != nil {
		t.Fatal(err)
	}
	if status != "succeeded" || pages != 3 || features != 4 || added != 4 || dups != 0 {
		t.Errorf("polls row: %s pages=%d features=%d added=%d dups=%d", status, pages, features, added, dups)
	}
	if n := b.count(t, `SELECT count(*) FROM staged_features`) + b.count(t, `SELECT count(*) FROM staged_pages`); n != 0 {
		t.Errorf("%d staging rows left after Apply", n)
	}
	var fc, fails int
	var lastPoll int64
	if err := b.pool.QueryRow(b.ctx, `SELECT feature_count, consecutive_failures, last_poll_id FROM feed_status
		WHERE jurisdiction = 'wake' AND feed = 'parcels'`).Scan(&fc, &fails, &lastPoll); err != nil {
		t.Fatal(err)
	}
	if fc != 4 || fails != 0 || lastPoll != id {
		t.Errorf("feed_status: feature_count=%d failures=%d last_poll_id=%d", fc, fails, lastPoll)
	}

	if _, err := b.store.Apply(b.ctx, id, feed); !errors.Is(err, postgis.ErrPollNotRunning) {
		t.Errorf("second Apply of a poll: %v, want ErrPollNotRunning", err)
	}
	if _, err := b.store.StagePage(b.ctx, id, 9, reader()); !errors.Is(err, postgis.ErrPollNotRunning) {
		t.Errorf("StagePage after Apply: %v, want ErrPollNotRunning", err)
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestSecondPollWritesOnlyChanges checks the diff counts and that a feature
// whose content did not change keeps its row version (xmin): Apply must not
// rewrite unchanged rows.
func TestSecondPollWritesOnlyChanges(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("roads")
	a := feature("a", point(1, 1, 4326), props("v", 1))
	bb := feature("b", point(2, 2, 4326), props("v", 1))
	c := feature("c", point(3, 3, 4326), props("v", 1))
	firstPoll, _ := b.poll(t, feed, []ft.Feature{a, bb}, []ft.Feature{c})

	xmin := func(id string) (x string) {
		b.scalar(t, &x, `SELECT xmin::text FROM wake.roads WHERE feature_id = $1`, id)
		return x
	}
	aXmin := xmin("a")
	var aFirstSeen time.Time
	b.scalar(t, &aFirstSeen, `SELECT first_seen_at FROM features WHERE feed = 'roads' AND feature_id = 'a'`)

	modB := feature("b", point(2, 2, 4326), props("v", 2))
	d := feature("d", point(4, 4, 4326), props("v", 1))
	secondPoll, res := b.poll(t, feed, []ft.Feature{a, modB}, []ft.Feature{d}) // c removed
	want := feeds.ApplyResult{Features: 3, Added: 1, Modified: 1, Removed: 1, Unchanged: 1}
	if res != want {
		t.Fatalf("Apply = %+v, want %+v", res, want)
	}
	if got := xmin("a"); got != aXmin {
		t.Errorf("unchanged feature rewritten: xmin %s → %s", aXmin, got)
	}
	var aPoll int64
	b.scalar(t, &aPoll, `SELECT poll_id FROM features WHERE feed = 'roads' AND feature_id = 'a'`)
	if aPoll != firstPoll {
		t.Errorf("unchanged feature's poll_id = %d, want %d (the poll that wrote it)", aPoll, firstPoll)
	}
	var bV string
	var bPoll int64
	var bFirst, bChanged time.Time
	if err := b.pool.QueryRow(b.ctx, `SELECT properties->>'v', poll_id, first_seen_at, changed_at FROM features
		WHERE feed = 'roads' AND feature_id = 'b'`).Scan(&bV, &bPoll, &bFirst, &bChanged); err != nil {
		t.Fatal(err)
	}
	if bV != "2" || bPoll != secondPoll || !bChanged.After(bFirst) {
		t.Errorf("modified feature: v=%s poll=%d first=%v changed=%v", bV, bPoll, bFirst, bChanged)
	}
	if n := b.count(t, `SELECT count(*) FROM features WHERE feed = 'roads' AND feature_id = 'c'`); n != 0 {
		t.Errorf("removed feature still present")
	}
	// last_seen_at comes from the feed's last success, for unchanged rows too.
	var seen, success time.Time
	b.scalar(t, &seen, `SELECT last_seen_at FROM features_seen WHERE feed = 'roads' AND feature_id = 'a'`)
	b.scalar(t, &success, `SELECT last_success_at FROM feed_status WHERE feed = 'roads'`)
	if !seen.Equal(success) || !seen.After(aFirstSeen) {
		t.Errorf("features_seen.last_seen_at = %v, want last_success_at %v", seen, success)
	}
	var added, modified, removed, unchanged int
	if err := b.pool.QueryRow(b.ctx, `SELECT added, modified, removed, unchanged FROM polls WHERE id = $1`, secondPoll).
		Scan(&added, &modified, &removed, &unchanged); err != nil {
		t.Fatal(err)
	}
	if added != 1 || modified != 1 || removed != 1 || unchanged != 1 {
		t.Errorf("polls counts: %d %d %d %d", added, modified, removed, unchanged)
	}

	// A third, identical poll writes nothing at all.
	versions := `SELECT string_agg(feature_id || ':' || xmin::text, ',' ORDER BY feature_id) FROM wake.roads`
	var before, after string
	b.scalar(t, &before, versions)
	_, res = b.poll(t, feed, []ft.Feature{a, modB, d})
	if want := (feeds.ApplyResult{Features: 3, Unchanged: 3}); res != want {
		t.Errorf("identical poll: %+v, want %+v", res, want)
	}
	if b.scalar(t, &after, versions); after != before {
		t.Errorf("identical poll rewrote rows: %s → %s", before, after)
	}
}

type pageError struct{ page int }

func (e *pageError) Error() string { return fmt.Sprintf("body cut short on page %d", e.page) }

func TestStagePageReaderErrorStagesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("trees")
	id := b.begin(t, feed)
	if _, err := b.store.StagePage(b.ctx, id, 0, reader(feature("t1", point(1, 1, 4326), nil))); err != nil {
		t.Fatal(err)
	}
	bad := &sliceReader{
		features: []ft.Feature{feature("t2", point(2, 2, 4326), nil), feature("t3", point(3, 3, 4326), nil)},
		err:      &pageError{page: 1},
	}
	n, err := b.store.StagePage(b.ctx, id, 1, bad)
	var pe *pageError
	if !errors.As(err, &pe) || pe.page != 1 || n != 0 {
		t.Fatalf("StagePage = %d, %v; want 0 and the reader's *pageError", n, err)
	}
	if got := b.count(t, `SELECT count(*) FROM staged_features WHERE poll_id = $1 AND page = 1`, id); got != 0 {
		t.Errorf("page 1 left %d staged rows", got)
	}
	if got := b.count(t, `SELECT count(*) FROM staged_pages WHERE poll_id = $1 AND page = 1`, id); got != 0 {
		t.Errorf("page 1 recorded as staged")
	}
	if got := b.count(t, `SELECT count(*) FROM staged_features WHERE poll_id = $1 AND page = 0`, id); got != 1 {
		t.Errorf("page 0 has %d staged rows, want 1", got)
	}

	// The retry of page 1 replaces it; staging it twice does not double it.
	for range 2 {
		if _, err := b.store.StagePage(b.ctx, id, 1, reader(feature("t2", point(2, 2, 4326), nil))); err != nil {
			t.Fatal(err)
		}
	}
	res, err := b.store.Apply(b.ctx, id, feed)
	if err != nil {
		t.Fatal(err)
	}
	if res.Features != 2 {
		t.Errorf("Apply after retry: %+v, want 2 features", res)
	}
}

// TestStagePageFailsAfterRowsWereSent: a reader's error after the COPY has
// sent several chunks of rows aborts it: the page stages nothing and the
// error is the reader's own, not PostgreSQL's report of the aborted COPY.
// (No feature fails a page: what ingestd cannot stage as it is, it repairs,
// skips or refuses, and counts.)
func TestStagePageFailsAfterRowsWereSent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("long-page")
	id := b.begin(t, feed)
	layer := generatePolygons(3000) // several 64 KiB chunks
	bad := &sliceReader{features: layer, err: &pageError{page: 0}}
	var pe *pageError
	if n, err := b.store.StagePage(b.ctx, id, 0, bad); !errors.As(err, &pe) || n != 0 {
		t.Errorf("reader error: StagePage = %d, %v; want 0 and the reader's *pageError", n, err)
	}
	if got := b.count(t, `SELECT count(*) FROM staged_features WHERE poll_id = $1`, id); got != 0 {
		t.Errorf("failed pages left %d staged rows", got)
	}
	if n, err := b.store.StagePage(b.ctx, id, 0, reader(layer...)); err != nil || n != len(layer) {
		t.Fatalf("StagePage = %d, %v; want %d", n, err, len(layer))
	}
	if res, err := b.store.Apply(b.ctx, id, feed); err != nil || res.Added != len(layer) {
		t.Errorf("Apply = %+v, %v; want %d added", res, err, len(layer))
	}
}

func TestFailPollLeavesFeaturesUntouched(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("zoning")
	b.poll(t, feed, []ft.Feature{feature("z1", point(1, 1, 4326), props("zone", "R4"))})
	var before string
	b.scalar(t, &before, `SELECT string_agg(feature_id || xmin::text, ',') FROM wake.zoning`)

	id := b.begin(t, feed)
	if _, err := b.store.StagePage(b.ctx, id, 0, reader(feature("z2", point(2, 2, 4326), nil))); err != nil {
		t.Fatal(err)
	}
	if err := b.store.FailPoll(b.ctx, id, feed, errors.New("HTTP 503")); err != nil {
		t.Fatal(err)
	}
	var after string
	b.scalar(t, &after, `SELECT string_agg(feature_id || xmin::text, ',') FROM wake.zoning`)
	if after != before {
		t.Errorf("features changed by a failed poll: %s → %s", before, after)
	}
	if n := b.count(t, `SELECT count(*) FROM staged_features`) + b.count(t, `SELECT count(*) FROM staged_pages`); n != 0 {
		t.Errorf("%d staging rows left after FailPoll", n)
	}
	var status, pollErr, lastErr string
	var fails int
	if err := b.pool.QueryRow(b.ctx, `SELECT p.status, p.error, s.last_error, s.consecutive_failures
		FROM polls p JOIN feed_status s USING (jurisdiction, feed) WHERE p.id = $1`, id).
		Scan(&status, &pollErr, &lastErr, &fails); err != nil {
		t.Fatal(err)
	}
	if status != "failed" || pollErr != "HTTP 503" || lastErr != "HTTP 503" || fails != 1 {
		t.Errorf("after FailPoll: %s %q %q failures=%d", status, pollErr, lastErr, fails)
	}
	if err := b.store.FailPoll(b.ctx, id, feed, errors.New("again")); !errors.Is(err, postgis.ErrPollNotRunning) {
		t.Errorf("FailPoll twice: %v, want ErrPollNotRunning", err)
	}
}

// TestTransformToWGS84 stages a point in EPSG:2264 (NAD83 / North Carolina,
// US survey feet): its false origin (2000000 ftUS, 0) is the projection's
// origin, 79°W 33°45'N.
func TestTransformToWGS84(t *testing.T) {
	t.Parallel()
	forFirstLoadPaths(t, func(t *testing.T, b *bundle) {
		b.poll(t, feedInfo("nc"), []ft.Feature{feature("o", point(2000000, 0, 2264), nil)})
		var x, y float64
		var srid int
		if err := b.pool.QueryRow(b.ctx, `SELECT ST_X(geom), ST_Y(geom), ST_SRID(geom) FROM features WHERE feature_id = 'o'`).
			Scan(&x, &y, &srid); err != nil {
			t.Fatal(err)
		}
		if srid != 4326 || math.Abs(x+79) > 1e-6 || math.Abs(y-33.75) > 1e-6 {
			t.Errorf("transformed point = (%v %v) SRID %d, want (-79 33.75) 4326", x, y, srid)
		}
	})
}

// TestDuplicateIDsLastWins: within a page the last occurrence in ordinal
// order wins, and the others are counted. (An id on two pages refuses the
// snapshot instead: TestIDOnTwoPagesIsRefused.)
func TestDuplicateIDsLastWins(t *testing.T) {
	t.Parallel()
	forFirstLoadPaths(t, func(t *testing.T, b *bundle) {
		id, res := b.poll(t, feedInfo("dups"),
			[]ft.Feature{feature("x", point(1, 1, 4326), props("v", "first")), feature("x", point(1, 1, 4326), props("v", "last"))},
			[]ft.Feature{feature("y", point(2, 2, 4326), props("v", "first")), feature("y", point(2, 2, 4326), props("v", "last"))},
		)
		if res.Features != 2 || res.Added != 2 {
			t.Errorf("Apply = %+v, want 2 features added", res)
		}
		for _, fid := range []string{"x", "y"} {
			var v string
			b.scalar(t, &v, `SELECT properties->>'v' FROM features WHERE feature_id = $1`, fid)
			if v != "last" {
				t.Errorf("duplicate id %s kept %q, want the last one", fid, v)
			}
		}
		if n := b.count(t, `SELECT duplicate_ids FROM polls WHERE id = $1`, id); n != 2 {
			t.Errorf("duplicate_ids = %d, want 2", n)
		}
		// bulkFirstLoad finds the repeated ids when it builds the key, and
		// leaves the load to FirstLoad.
		if ran, fellBack := postgis.BulkFirstLoads(b.store); ran != fellBack {
			t.Errorf("bulkFirstLoad ran %d times, fell back %d", ran, fellBack)
		}
	})
}

// TestFeaturesWithoutID get the hex content hash as id, stable across polls.
func TestFeaturesWithoutID(t *testing.T) {
	t.Parallel()
	forFirstLoadPaths(t, func(t *testing.T, b *bundle) {
		f := feature("", point(5, 5, 4326), props("k", "v"))
		b.poll(t, feedInfo("anon"), []ft.Feature{f})
		var id string
		var hash []byte
		if err := b.pool.QueryRow(b.ctx, `SELECT feature_id, content_hash FROM features`).Scan(&id, &hash); err != nil {
			t.Fatal(err)
		}
		// The id is the hex of the whole SHA-256, of which the content
		// hash keeps the first 16 bytes.
		if !strings.HasPrefix(id, hex.EncodeToString(hash)) || len(id) != 64 || len(hash) != 16 {
			t.Errorf("feature_id %q, want the hex of the SHA-256 the content hash %x begins", id, hash)
		}
		_, res := b.poll(t, feedInfo("anon"), []ft.Feature{f})
		if res.Unchanged != 1 || res.Added != 0 {
			t.Errorf("second poll of an id-less feature: %+v, want it unchanged", res)
		}
	})
}

func TestFeedFreshness(t *testing.T) {
	t.Parallel()
	b := setup(t)
	never, fresh, failing, stale, parked, removed :=
		feedInfo("never"), feedInfo("fresh"), feedInfo("failing"), feedInfo("stale"), feedInfo("parked"), feedInfo("removed")
	all := []feeds.FeedInfo{never, fresh, failing, stale, parked, removed}
	if err := b.store.RegisterFeeds(b.ctx, all); err != nil {
		t.Fatal(err)
	}
	one := []ft.Feature{feature("1", point(1, 1, 4326), nil)}

	b.poll(t, fresh, one)

	b.poll(t, failing, one)
	id := b.begin(t, failing)
	if err := b.store.FailPoll(b.ctx, id, failing, errors.New("ExceptionReport: NoApplicableCode")); err != nil {
		t.Fatal(err)
	}

	b.poll(t, stale, one)
	// Two expected intervals and a bit ago.
	if _, err := b.pool.Exec(b.ctx, `UPDATE feed_status SET last_success_at = now() - interval '2 hours 1 minute'
		WHERE feed = 'stale'`); err != nil {
		t.Fatal(err)
	}

	id = b.begin(t, parked)
	if _, err := b.store.StagePage(b.ctx, id, 0, reader(one...)); err != nil {
		t.Fatal(err)
	}
	if err := b.store.RecordRefused(b.ctx, parked, id, time.Now().Add(10*time.Minute), errors.New("breaker open")); err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, `SELECT count(*) FROM staged_pages WHERE poll_id = $1`, id); n != 1 {
		t.Errorf("refused poll kept %d staged pages, want 1 (for resume)", n)
	}

	// The next config no longer has "removed": RegisterFeeds alone marks
	// nothing removed (another instance may have it), RemoveFeeds does.
	if err := b.store.RegisterFeeds(b.ctx, all[:5]); err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, `SELECT count(*) FROM feed_status WHERE NOT configured`); n != 0 {
		t.Errorf("RegisterFeeds marked %d feeds removed, want none", n)
	}
	if err := b.store.RemoveFeeds(b.ctx, all[5:]); err != nil {
		t.Fatal(err)
	}

	got := b.freshness(t)
	for _, f := range all {
		if got[f.Feed] != f.Feed {
			t.Errorf("feed %s: status %q, want %q", f.Feed, got[f.Feed], f.Feed)
		}
	}

	// Failing recovers with the next success.
	b.poll(t, failing, one)
	var status string
	b.scalar(t, &status, `SELECT status FROM feed_freshness WHERE feed = 'failing'`)
	if status != "fresh" {
		t.Errorf("after a success: %s, want fresh", status)
	}
	var interval time.Duration
	b.scalar(t, &interval, `SELECT expected_interval FROM feed_freshness WHERE feed = 'fresh'`)
	if interval != time.Hour {
		t.Errorf("expected_interval = %v, want 1h", interval)
	}
}

// TestStagePageSkipsBadProperties: properties that are not JSON cost their
// feature's update, counted, never the page or the poll.
func TestStagePageSkipsBadProperties(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("bad")
	id, res := b.poll(t, feed, []ft.Feature{
		feature("ok", point(1, 1, 4326), props("a", 1)),
		feature("bad", point(1, 1, 4326), []byte(`{"a":`)),
		feature("huge", point(1, 1, 4326), []byte(`{"a":1e2000000000}`)),
	})
	want := feeds.InvalidFeatures{InvalidJSON: 1, NumberOutOfRange: 1}
	if res.Added != 1 || res.InvalidFeatures != want {
		t.Errorf("apply: %+v, want 1 added and %+v", res, want)
	}
	var counts string
	b.scalar(t, &counts, `SELECT invalid_features::text FROM polls WHERE id = $1`, id)
	if counts != `{"invalid_json": 1, "number_out_of_range": 1}` {
		t.Errorf("polls.invalid_features = %s", counts)
	}
	if n := b.count(t, `SELECT count(*) FROM features WHERE feed = 'bad'`); n != 1 {
		t.Errorf("%d features stored, want only the good one", n)
	}
}

// freshness is feed_freshness's status of each feed.
func (b *bundle) freshness(t *testing.T) map[string]string {
	t.Helper()
	rows, err := b.pool.Query(b.ctx, `SELECT feed, status, feature_count FROM feed_freshness ORDER BY feed`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for rows.Next() {
		var feed, status string
		var count *int64
		if err := rows.Scan(&feed, &status, &count); err != nil {
			t.Fatal(err)
		}
		got[feed] = status
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}
