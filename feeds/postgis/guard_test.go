package postgis_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twpayne/go-geom"

	"github.com/ingestd/ingestd/config"
	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/source"
)

// pollHeld runs a poll whose Apply must be held, and returns its id and the
// HeldError.
func (b *bundle) pollHeld(t *testing.T, feed feeds.FeedInfo, pages ...[]ft.Feature) (int64, *feeds.HeldError) {
	t.Helper()
	id := b.stage(t, feed, pages...)
	res, err := b.store.Apply(b.ctx, id, feed)
	var held *feeds.HeldError
	if !errors.As(err, &held) {
		t.Fatalf("Apply = %+v, %v; want a *feeds.HeldError", res, err)
	}
	if held.PollID != id || held.Feed != feed.Jurisdiction+"/"+feed.Feed {
		t.Errorf("HeldError %+v does not name poll %d", held, id)
	}
	return id, held
}

func (b *bundle) pollStatus(t *testing.T, id int64) string {
	t.Helper()
	var s string
	b.scalar(t, &s, `SELECT status FROM polls WHERE id = $1`, id)
	return s
}

func (b *bundle) staged(t *testing.T, id int64) int {
	t.Helper()
	return b.count(t, `SELECT count(*) FROM staged_features WHERE poll_id = $1`, id)
}

// pages splits fs into pages of n.
func pages(fs []ft.Feature, n int) [][]ft.Feature {
	var out [][]ft.Feature
	for len(fs) > 0 {
		k := min(n, len(fs))
		out = append(out, fs[:k])
		fs = fs[k:]
	}
	return out
}

// TestShrinkGuardHoldsUntilAccepted: a county that answers 40 features
// instead of 40,000 does not wipe the layer; the previous features stay
// intact, the feed shows held, and accepting applies the snapshot.
func TestShrinkGuardHoldsUntilAccepted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("parcels")
	layer := generatePolygons(40_000)
	b.poll(t, feed, pages(layer, 5_000)...)
	before := b.count(t, `SELECT count(*) FROM features WHERE feed = 'parcels'`)

	id, held := b.pollHeld(t, feed, layer[:40])
	if held.Previous != 40_000 || held.Snapshot != 40 || !strings.HasPrefix(held.Reason, "shrink:") {
		t.Errorf("HeldError = %+v", held)
	}
	if n := b.count(t, `SELECT count(*) FROM features WHERE feed = 'parcels'`); n != before {
		t.Fatalf("held snapshot changed features: %d → %d", before, n)
	}
	if s := b.pollStatus(t, id); s != "held" {
		t.Errorf("poll status %s, want held", s)
	}
	if n := b.staged(t, id); n != 40 {
		t.Errorf("held poll kept %d staged features, want 40", n)
	}
	if n := b.count(t, `SELECT count(*) FROM feature_changes WHERE poll_id = $1`, id); n != 0 {
		t.Errorf("held poll logged %d changes", n)
	}
	var reason string
	var heldID int64
	b.scalar(t, &heldID, `SELECT held_poll_id FROM feed_status WHERE feed = 'parcels'`)
	b.scalar(t, &reason, `SELECT reason FROM held_snapshots WHERE feed = 'parcels'`)
	if heldID != id || reason != held.Reason {
		t.Errorf("feed_status held_poll_id %d (want %d), held_snapshots reason %q", heldID, id, reason)
	}
	checkFreshnessHeld(t, b, "parcels", held.Reason)

	list, err := b.store.ListHeld(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].PollID != id || list[0].Previous != 40_000 || list[0].Snapshot != 40 {
		t.Errorf("ListHeld = %+v", list)
	}

	res, err := b.store.AcceptHeld(b.ctx, feed.Jurisdiction, feed.Feed)
	if err != nil {
		t.Fatal(err)
	}
	if want := (feeds.ApplyResult{Features: 40, Unchanged: 40, Removed: 39_960}); res != want {
		t.Errorf("AcceptHeld = %+v, want %+v", res, want)
	}
	if n := b.count(t, `SELECT count(*) FROM features WHERE feed = 'parcels'`); n != 40 {
		t.Errorf("after accept: %d features, want 40", n)
	}
	if s := b.pollStatus(t, id); s != "succeeded" {
		t.Errorf("accepted poll status %s", s)
	}
	if n := b.count(t, `SELECT count(*) FROM feature_changes WHERE poll_id = $1 AND change = 'removed'`, id); n != 39_960 {
		t.Errorf("accepted poll logged %d removals", n)
	}
	if n := b.staged(t, id) + b.count(t, `SELECT count(*) FROM held_snapshots`); n != 0 {
		t.Errorf("staging or hold left after accept: %d", n)
	}
	if _, err := b.store.AcceptHeld(b.ctx, feed.Jurisdiction, feed.Feed); !errors.Is(err, postgis.ErrNoHeld) {
		t.Errorf("second accept: %v, want ErrNoHeld", err)
	}
}

// checkFreshnessHeld checks how feed_freshness shows a held feed. The base
// view (migration 00004) says 'held'; a view replaced by a later migration
// that does not know 'held' yet must still show the feed as not applying,
// with the reason: that is why a hold also sets last_error.
func checkFreshnessHeld(t *testing.T, b *bundle, feed, reason string) {
	t.Helper()
	var status, lastError, def string
	if err := b.pool.QueryRow(b.ctx, `SELECT status, last_error FROM feed_freshness WHERE feed = $1`, feed).
		Scan(&status, &lastError); err != nil {
		t.Fatal(err)
	}
	b.scalar(t, &def, `SELECT pg_get_viewdef('feed_freshness'::regclass)`)
	if !strings.Contains(lastError, reason) {
		t.Errorf("feed_freshness.last_error = %q, want the reason %q", lastError, reason)
	}
	want := "held"
	if !strings.Contains(def, "'held'") {
		t.Logf("feed_freshness does not know 'held' (replaced by a later migration): expecting failing")
		want = "failing"
	}
	if status != want {
		t.Errorf("feed_freshness.status = %s, want %s", status, want)
	}
}

// TestRejectHeldDiscards: rejecting discards the staging and keeps the
// features; the next poll is judged against them as before.
func TestRejectHeldDiscards(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("roads")
	layer := generatePolygons(100)
	b.poll(t, feed, layer)
	id, held := b.pollHeld(t, feed, nil) // an empty snapshot
	if !strings.HasPrefix(held.Reason, "empty:") {
		t.Errorf("reason %q, want empty", held.Reason)
	}
	if err := b.store.RejectHeld(b.ctx, feed.Jurisdiction, feed.Feed); err != nil {
		t.Fatal(err)
	}
	if s := b.pollStatus(t, id); s != "rejected" {
		t.Errorf("poll status %s, want rejected", s)
	}
	if n := b.count(t, `SELECT count(*) FROM features WHERE feed = 'roads'`); n != 100 {
		t.Errorf("%d features after reject, want 100", n)
	}
	if n := b.count(t, `SELECT count(*) FROM staged_pages WHERE poll_id = $1`, id) + b.count(t, `SELECT count(*) FROM held_snapshots`); n != 0 {
		t.Errorf("staging or hold left after reject")
	}
	if err := b.store.RejectHeld(b.ctx, feed.Jurisdiction, feed.Feed); !errors.Is(err, postgis.ErrNoHeld) {
		t.Errorf("second reject: %v, want ErrNoHeld", err)
	}
}

// TestLaterPollSupersedesHeld: a held snapshot nobody decided on is
// discarded when a later poll of the feed applies, and replaced when a
// later poll is held too.
func TestLaterPollSupersedesHeld(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("trees")
	layer := generatePolygons(100)
	b.poll(t, feed, layer)
	first, _ := b.pollHeld(t, feed, layer[:10])
	second, _ := b.pollHeld(t, feed, layer[:20])
	if s := b.pollStatus(t, first); s != "superseded" || b.staged(t, first) != 0 {
		t.Errorf("first held poll: %s with %d staged, want superseded with none", s, b.staged(t, first))
	}
	list, err := b.store.ListHeld(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].PollID != second {
		t.Errorf("ListHeld = %+v, want poll %d only", list, second)
	}
	_, res := b.poll(t, feed, layer[:95])
	if res.Removed != 5 {
		t.Errorf("later poll: %+v", res)
	}
	if s := b.pollStatus(t, second); s != "superseded" || b.staged(t, second) != 0 {
		t.Errorf("second held poll: %s with %d staged", s, b.staged(t, second))
	}
	if n := b.count(t, `SELECT count(*) FROM held_snapshots`); n != 0 {
		t.Errorf("hold left after a later success")
	}
	var status string
	b.scalar(t, &status, `SELECT status FROM feed_freshness WHERE feed = 'trees'`)
	if status != "fresh" {
		t.Errorf("feed_freshness.status = %s after a later success, want fresh", status)
	}
}

// TestMaxShrink: the threshold is (1 - max_shrink) × previous; 1 turns the
// shrink check off except for an empty snapshot.
func TestMaxShrink(t *testing.T) {
	t.Parallel()
	b := setup(t)
	layer := generatePolygons(100)

	feed := feedInfo("strict")
	feed.Guard.MaxShrink = 0.1
	b.poll(t, feed, layer)
	b.poll(t, feed, layer[:90]) // exactly (1 - 0.1) × 100: allowed
	if _, held := b.pollHeld(t, feed, layer[:80]); !strings.Contains(held.Reason, "no fewer than 81") {
		t.Errorf("reason %q", held.Reason)
	}

	loose := feedInfo("loose")
	loose.Guard.MaxShrink = 1
	b.poll(t, loose, layer)
	if _, res := b.poll(t, loose, layer[:1]); res.Removed != 99 {
		t.Errorf("max_shrink 1: %+v", res)
	}
	b.pollHeld(t, loose, nil)
}

// TestRepeatedPagesAreRefused: a server that ignores startIndex repeats its
// first page; the snapshot has as many rows but few distinct ids, spread
// over several pages. Apply refuses it before any guard has to hold it.
func TestRepeatedPagesAreRefused(t *testing.T) {
	t.Parallel()
	for _, small := range []bool{true, false} {
		t.Run(fmt.Sprintf("small=%v", small), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			if !small {
				// Checked in ApplyDiff's sort, as for a large layer.
				postgis.SetSmallSnapshot(b.store, 0)
			}
			testRepeatedPages(t, b)
		})
	}
}

func testRepeatedPages(t *testing.T, b *bundle) {
	feed := feedInfo("repeat")
	layer := generatePolygons(1000)
	b.poll(t, feed, pages(layer, 100)...)
	repeated := make([][]ft.Feature, 10)
	for page := range repeated {
		repeated[page] = layer[:100]
	}
	b.applyIncomplete(t, b.stage(t, feed, repeated...), feed, "100 feature ids appear on more than one page")
	if n := b.count(t, `SELECT count(*) FROM features WHERE feed = 'repeat'`); n != 1000 {
		t.Errorf("%d features after the refused snapshot, want the previous 1000", n)
	}
}

// TestExtentGuard: with the jurisdiction's bbox declared, a snapshot with
// swapped axes is held; a correct one applies, also from a projected CRS.
func TestExtentGuard(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("extent")
	feed.Guard.BBox = &config.BBox{MinX: -79.0, MinY: 35.5, MaxX: -78.2, MaxY: 36.1} // Wake County, NC
	good := []ft.Feature{
		feature("a", point(-78.64, 35.78, 4326), props("n", 1)),
		feature("b", point(-78.70, 35.90, 4326), props("n", 2)),
		// NC State Plane (ftUS) coordinates of downtown Raleigh.
		feature("c", point(2106000, 737000, 2264), props("n", 3)),
		feature("d", nil, props("n", 4)), // no geometry: not counted
	}
	_, res := b.poll(t, feed, good)
	if res.Added != 4 {
		t.Fatalf("good snapshot: %+v", res)
	}
	swapped := []ft.Feature{
		feature("a", point(35.78, -78.64, 4326), props("n", 1)),
		feature("b", point(35.90, -78.70, 4326), props("n", 2)),
		good[2], good[3],
	}
	_, held := b.pollHeld(t, feed, swapped)
	if !strings.HasPrefix(held.Reason, "extent: 2 of 3 ") {
		t.Errorf("reason %q", held.Reason)
	}
	var x float64
	b.scalar(t, &x, `SELECT ST_X(geom) FROM features WHERE feed = 'extent' AND feature_id = 'a'`)
	if x != -78.64 {
		t.Errorf("held snapshot moved feature a to x=%v", x)
	}
	// One stray feature of three is not "mostly".
	_, res = b.poll(t, feed, []ft.Feature{good[0], good[1], swapped[1], good[3]})
	if res.Modified != 1 {
		t.Errorf("one of three outside: %+v, want applied", res)
	}
}

// TestFreezeHoldsRemovals: while the feed is stale or its origin stuck
// open, a snapshot that removes features is held; one that only adds or
// modifies applies.
func TestFreezeHoldsRemovals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	layer := generatePolygons(10)

	stale := feedInfo("stale") // expected interval 1h
	b.poll(t, stale, layer)
	if _, err := b.pool.Exec(b.ctx, `UPDATE feed_status SET last_success_at = now() - interval '3 hours' WHERE feed = 'stale'`); err != nil {
		t.Fatal(err)
	}
	if _, held := b.pollHeld(t, stale, layer[:9]); !strings.HasPrefix(held.Reason, "freeze: the snapshot would remove 1 features while the feed is stale") {
		t.Errorf("reason %q", held.Reason)
	}
	grown := append(generatePolygons(11)[:11:11], feature("x", point(1, 1, 4326), props("n", 1)))
	if _, res := b.poll(t, stale, grown); res.Added != 2 || res.Removed != 0 {
		t.Errorf("stale feed, additions only: %+v, want applied", res)
	}

	stuck := feedInfo("stuck")
	stuck.Origin = "https://county.example.org:443"
	b.poll(t, stuck, layer)
	if _, err := b.pool.Exec(b.ctx, `INSERT INTO breaker_state (origin, state, stuck) VALUES ($1, 'open', true)`, stuck.Origin); err != nil {
		t.Fatal(err)
	}
	if _, held := b.pollHeld(t, stuck, layer[:9]); !strings.Contains(held.Reason, "stuck open") {
		t.Errorf("reason %q", held.Reason)
	}
	if _, err := b.store.AcceptHeld(b.ctx, stuck.Jurisdiction, stuck.Feed); err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, `SELECT count(*) FROM features WHERE feed = 'stuck'`); n != 9 {
		t.Errorf("after accept: %d features, want 9", n)
	}
}

// TestGeometryGuard: a snapshot whose features all lack a geometry
// (missing or empty) is held when the feed's features have one, and the
// typed view keeps its geom column; accepting applies it. A snapshot with
// one geometry left applies, and so does a layer that never had any (an
// attribute table).
func TestGeometryGuard(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("geomless")
	var good, none, one []ft.Feature
	for i := range 30 {
		id := fmt.Sprintf("f%d", i)
		good = append(good, feature(id, point(-78.6+float64(i)*0.001, 35.7, 4326), props("n", i)))
		var g geom.T
		if i%2 == 1 {
			g = geom.NewPointEmpty(geom.XY).SetSRID(4326)
		}
		none = append(none, feature(id, g, props("n", i)))
		if i == 7 {
			one = append(one, good[i])
		} else {
			one = append(one, none[i])
		}
	}
	b.poll(t, feed, good)
	_, held := b.pollHeld(t, feed, none)
	if !strings.HasPrefix(held.Reason, "geometry: none of the snapshot's 30 features has a geometry") {
		t.Errorf("reason %q", held.Reason)
	}
	if n := b.count(t, `SELECT count(*) FROM features WHERE feed = 'geomless' AND geom IS NOT NULL`); n != 30 {
		t.Errorf("the held snapshot left %d geometries of 30", n)
	}
	if n := b.count(t, `SELECT count(*) FROM geometry_columns WHERE f_table_schema = 'wake' AND f_table_name = 'geomless'`); n != 1 {
		t.Errorf("the typed view has %d geometry columns, want 1", n)
	}
	if _, err := b.store.AcceptHeld(b.ctx, "wake", "geomless"); err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, `SELECT count(*) FROM features WHERE feed = 'geomless' AND geom IS NOT NULL AND NOT ST_IsEmpty(geom)`); n != 0 {
		t.Errorf("accepted: %d geometries left, want 0", n)
	}

	// One geometry is not none.
	other := feedInfo("geomfew")
	b.poll(t, other, good)
	if _, res := b.poll(t, other, one); res.Modified != 29 {
		t.Errorf("a snapshot with one geometry: %+v, want applied", res)
	}
	// A table that never had geometries.
	table := feedInfo("geomtable")
	b.poll(t, table, none)
	if _, res := b.poll(t, table, append(slices.Clone(none), feature("new", nil, props("n", 99)))); res.Added != 1 {
		t.Errorf("an attribute table: %+v, want applied", res)
	}
}

// TestGeometryGuardSkipsDeltas: a delta's snapshot is the features it
// fetched, so edits that all lack a geometry (an attribute edit of a
// feature whose geometry the server left out) are not "every geometry
// lost": the delta applies.
func TestGeometryGuardSkipsDeltas(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("geomdelta")
	b.poll(t, feed, []ft.Feature{feature("1", point(-78.6, 35.7, 4326), props("n", 1)),
		feature("2", point(-78.5, 35.7, 4326), props("n", 2)), feature("3", point(-78.4, 35.7, 4326), props("n", 3))})
	id := b.stage(t, feed, []ft.Feature{feature("2", nil, props("n", 20))})
	res, err := b.store.ComposeDelta(b.ctx, id, feed, source.Delta{IDs: source.IDs{Int: []int64{1, 2, 3}}}, nil)
	if err != nil || res.Drift() != 0 {
		t.Fatalf("ComposeDelta = %+v, %v", res, err)
	}
	applied, err := b.store.Apply(b.ctx, id, feed)
	if err != nil || applied.Modified != 1 {
		t.Fatalf("a delta of one edit without a geometry: %+v, %v; want applied", applied, err)
	}
}
