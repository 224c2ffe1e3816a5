package postgis_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/migrations/pgtest"
)

// change is one feature_changes_expanded row (a first load's 'loaded' row
// listed as a row per feature added), as the tests compare them.
type change struct {
	Poll     int64
	ID       string
	Change   string
	Geometry *bool
	Props    bool
	Old, New bool // whether old_hash / new_hash are set
}

func (b *bundle) changes(t *testing.T, feed string) []change {
	t.Helper()
	rows, err := b.pool.Query(b.ctx, `
		SELECT poll_id, feature_id, change, geometry_changed, properties_changed, old_hash IS NOT NULL, new_hash IS NOT NULL
		FROM feature_changes_expanded WHERE feed = $1 ORDER BY poll_id, feature_id`, feed)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []change
	for rows.Next() {
		var c change
		if err := rows.Scan(&c.Poll, &c.ID, &c.Change, &c.Geometry, &c.Props, &c.Old, &c.New); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// TestFeatureChangesAcrossPolls: a feature modified, one added and one
// removed across three polls give exactly those rows in feature_changes, with
// whether the geometry or only the properties changed.
func TestFeatureChangesAcrossPolls(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("zoning")
	a := feature("a", square(-78.7, 35.8, 0.01), props("zone", "R-4"))
	c := feature("c", square(-78.6, 35.8, 0.01), props("zone", "R-6"))
	e := feature("e", square(-78.5, 35.8, 0.01), props("zone", "CX"))
	p1, _ := b.poll(t, feed, []ft.Feature{a, c, e})

	a2 := feature("a", square(-78.7, 35.8, 0.01), props("zone", "R-10")) // properties only
	e2 := feature("e", square(-78.5, 35.8, 0.02), props("zone", "CX"))   // geometry only
	p2, res := b.poll(t, feed, []ft.Feature{a2, c, e2})
	if want := (feeds.ApplyResult{Features: 3, Modified: 2, Unchanged: 1}); res != want {
		t.Fatalf("poll 2: %+v, want %+v", res, want)
	}
	d := feature("d", point(-78.64, 35.78, 4326), props("zone", "DX"))
	p3, res := b.poll(t, feed, []ft.Feature{a2, d, e2}) // c removed, d added
	if want := (feeds.ApplyResult{Features: 3, Added: 1, Removed: 1, Unchanged: 2}); res != want {
		t.Fatalf("poll 3: %+v, want %+v", res, want)
	}

	want := []change{
		{p1, "a", "added", ptr(true), true, false, true},
		{p1, "c", "added", ptr(true), true, false, true},
		{p1, "e", "added", ptr(true), true, false, true},
		{p2, "a", "modified", ptr(false), true, true, true},
		{p2, "e", "modified", ptr(true), false, true, true},
		{p3, "c", "removed", ptr(true), true, true, false},
		{p3, "d", "added", ptr(true), true, false, true},
	}
	got := b.changes(t, "zoning")
	if !slices.EqualFunc(got, want, func(x, y change) bool {
		return x.Poll == y.Poll && x.ID == y.ID && x.Change == y.Change && *x.Geometry == *y.Geometry &&
			x.Props == y.Props && x.Old == y.Old && x.New == y.New
	}) {
		t.Errorf("feature_changes:\n got %s\nwant %s", fmtChanges(got), fmtChanges(want))
	}
	// The modification's hashes chain: old_hash is what the feature had.
	if n := b.count(t, `
		SELECT count(*) FROM feature_changes m JOIN feature_changes_expanded a USING (feature_id)
		WHERE m.poll_id = $1 AND a.poll_id = $2 AND m.old_hash = a.new_hash`, p2, p1); n != 2 {
		t.Errorf("%d modifications chain to the added hash, want 2", n)
	}
	// The first load itself logged one row.
	if n := b.count(t, `SELECT count(*) FROM feature_changes WHERE poll_id = $1 AND change = 'loaded' AND feature_id = ''`, p1); n != 1 ||
		b.count(t, `SELECT count(*) FROM feature_changes WHERE poll_id = $1`, p1) != 1 {
		t.Errorf("the first load logged %d loaded rows and others besides, want exactly one", n)
	}
}

func fmtChanges(cs []change) string {
	var s []string
	for _, c := range cs {
		g := "nil"
		if c.Geometry != nil {
			g = fmt.Sprint(*c.Geometry)
		}
		s = append(s, fmt.Sprintf("{%d %s %s geom=%s props=%v old=%v new=%v}", c.Poll, c.ID, c.Change, g, c.Props, c.Old, c.New))
	}
	return strings.Join(s, " ")
}

// TestReorderedKeysAreNotAModification: the properties hash is over the
// normalised jsonb, so a server that reorders keys or changes whitespace
// modifies nothing, and an id-less feature keeps its id.
func TestReorderedKeysAreNotAModification(t *testing.T) {
	t.Parallel()
	for _, path := range unchangedPaths {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			testReorderedKeys(t, path)
		})
	}
}

// testReorderedKeys takes path (unchangedPaths) to find the second poll
// unchanged.
func testReorderedKeys(t *testing.T, path string) {
	b := setup(t)
	useUnchangedPath(b.store, path)
	feed := feedInfo("reorder")
	g := point(-78.6, 35.8, 4326)
	first := []ft.Feature{
		feature("a", g, json.RawMessage(`{"pin":"0001","owner":"X","acres":1.5,"tags":{"b":1,"a":2}}`)),
		feature("", g, json.RawMessage(`{"k":"v","n":1}`)),
	}
	b.poll(t, feed, first)
	var anonID string
	b.scalar(t, &anonID, `SELECT feature_id FROM features WHERE feed = 'reorder' AND feature_id <> 'a'`)

	second := []ft.Feature{
		feature("a", g, json.RawMessage(`{ "tags" : {"a":2, "b":1}, "acres": 1.5,  "owner":"X", "pin":"0001" }`)),
		feature("", g, json.RawMessage("{\n  \"n\": 1,\n  \"k\": \"v\"\n}")),
	}
	_, res := b.poll(t, feed, second)
	if want := (feeds.ApplyResult{Features: 2, Unchanged: 2}); res != want {
		t.Fatalf("reordered keys: %+v, want %+v", res, want)
	}
	if n := b.count(t, `SELECT count(*) FROM features WHERE feed = 'reorder' AND feature_id = $1`, anonID); n != 1 {
		t.Errorf("id-less feature lost its id %s", anonID)
	}
	if _, unchanged := postgis.LargeUnchangedChecks(b.store); path == "large" && unchanged != 1 {
		t.Errorf("the large check found the reordered snapshot unchanged %d times, want 1", unchanged)
	}
	// A changed value still is a modification.
	third := []ft.Feature{
		feature("a", g, json.RawMessage(`{"pin":"0001","owner":"Y","acres":1.5,"tags":{"b":1,"a":2}}`)),
		second[1],
	}
	if _, res := b.poll(t, feed, third); res.Modified != 1 || res.Unchanged != 1 {
		t.Errorf("changed value: %+v, want 1 modified, 1 unchanged", res)
	}
}

// TestIdenticalPollWritesNoFeatureRows counts the tuples written to features
// through the statistics collector, on a one-connection pool so that the
// backend that applied is the one whose statistics are flushed on demand.
func TestIdenticalPollWritesNoFeatureRows(t *testing.T) {
	t.Parallel()
	for _, path := range unchangedPaths {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			testIdenticalPoll(t, path)
		})
	}
}

// unchangedPaths name the ways an apply can find a snapshot unchanged:
// the small statement, the large one, and ApplyDiff itself (sql/apply.sql).
var unchangedPaths = []string{"small", "large", "applySQL"}

// useUnchangedPath makes store take path for any snapshot.
func useUnchangedPath(store *postgis.Store, path string) {
	switch path {
	case "large":
		postgis.SetSmallSnapshot(store, 0)
	case "applySQL":
		postgis.SetSmallSnapshot(store, 0)
		postgis.SetLargeUnchangedCheck(store, false)
	}
}

// TestRepeatedIDIsNotUnchanged: a snapshot with as many rows as the feed
// has features, all with the same content, but one id twice and another
// missing, is not unchanged: the missing feature is removed.
func TestRepeatedIDIsNotUnchanged(t *testing.T) {
	t.Parallel()
	for _, path := range unchangedPaths {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			useUnchangedPath(b.store, path)
			feed := feedInfo("repeated")
			layer := generatePolygons(300)
			b.poll(t, feed, layer)
			again := slices.Clone(layer)
			again[299] = layer[0]
			pollID, res := b.poll(t, feed, again)
			if res != (feeds.ApplyResult{Features: 299, Unchanged: 299, Removed: 1}) {
				t.Errorf("%s: %+v, want 299 features, 1 removed", path, res)
			}
			if n := b.count(t, `SELECT count(*) FROM feature_changes WHERE poll_id = $1 AND change = 'removed' AND feature_id = $2`,
				pollID, layer[299].ID); n != 1 {
				t.Errorf("%s: the missing feature's removal logged %d times", path, n)
			}
		})
	}
}

// testIdenticalPoll polls a layer, a modification, then the same again,
// taking path (unchangedPaths) to find it unchanged.
func testIdenticalPoll(t *testing.T, path string) {
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	b := &bundle{ctx: t.Context(), pool: pool, store: postgis.New(pool)}
	useUnchangedPath(b.store, path)

	// written returns n_tup_ins + n_tup_upd + n_tup_del of the feed's features.
	written := func() (ins, upd, del int64) {
		t.Helper()
		// The flush happens when this transaction ends; the snapshot of
		// statistics is cleared so the next read sees it.
		if _, err := pool.Exec(b.ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(b.ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
			t.Fatal(err)
		}
		// The feed's layer table: its features.
		feed := feedInfo("same")
		if err := pool.QueryRow(b.ctx, `SELECT n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables
			WHERE relid = to_regclass(ingestd_feed_view($1, $2))`,
			feed.Jurisdiction, feed.Feed).Scan(&ins, &upd, &del); err != nil {
			t.Fatal(err)
		}
		return ins, upd, del
	}
	feed := feedInfo("same")
	layer := generatePolygons(500)
	b.poll(t, feed, layer[:250], layer[250:])
	i0, u0, d0 := written()

	// The measurement sees writes: one modification is one update.
	mod := slices.Clone(layer)
	mod[7].Properties = props("pin", "changed")
	b.poll(t, feed, mod)
	i1, u1, d1 := written()
	if i1-i0 != 0 || u1-u0 != 1 || d1-d0 != 0 {
		t.Fatalf("one modified feature: ins %d upd %d del %d, want 0 1 0", i1-i0, u1-u0, d1-d0)
	}

	// The large check ran for the modification (and found it); it skips
	// the next poll, since the last one changed something, and runs for
	// the one after.
	for i, wantChecks := range []int64{1, 2} {
		pollID, res := b.poll(t, feed, mod[:100], mod[100:])
		i2, u2, d2 := written()
		if i2 != i1 || u2 != u1 || d2 != d1 {
			t.Errorf("identical poll %d wrote feature rows: ins %d upd %d del %d", i, i2-i1, u2-u1, d2-d1)
		}
		if res != (feeds.ApplyResult{Features: 500, Unchanged: 500}) {
			t.Errorf("identical poll %d: %+v", i, res)
		}
		if n := b.count(t, `SELECT count(*) FROM feature_changes WHERE poll_id = $1`, pollID); n != 0 {
			t.Errorf("identical poll %d logged %d changes", i, n)
		}
		if path != "large" {
			wantChecks = 0
		}
		wantUnchanged := wantChecks - 1 // the modification's check found it
		if path != "large" {
			wantUnchanged = 0
		}
		if ran, unchanged := postgis.LargeUnchangedChecks(b.store); ran != wantChecks || unchanged != wantUnchanged {
			t.Errorf("after identical poll %d: the large check ran %d times and found %d unchanged, want %d and %d",
				i, ran, unchanged, wantChecks, wantUnchanged)
		}
	}
}

// TestPropsHashIsJSONBSendHash: the props_hash ingestd computes while
// staging is SHA-256 of jsonb_send of the stored properties, as PostgreSQL
// computed it before ingestd did (rows of either kind compare equal).
func TestPropsHashIsJSONBSendHash(t *testing.T) {
	t.Parallel()
	b := setup(t)
	raw := []string{
		`{"b": 1, "a": [1.50, 2e2, -0.0], "é": "\u00e9\t", "nested": {"z": null, "y": true}}`,
		`{"a": 1, "a": 2}`, `{}`, `null`, `[1, {"k": "v"}]`, `"just a string"`, `{"n": 12.340e-1}`,
	}
	var layer []ft.Feature
	for i, r := range raw {
		layer = append(layer, feature(fmt.Sprintf("f%d", i), point(float64(i), 0, 4326), json.RawMessage(r)))
	}
	layer = append(layer, feature("none", point(9, 9, 4326), nil))
	b.poll(t, feedInfo("hashes"), layer)
	// The same layer staged again: each staged props_hash is the hash of
	// the properties the layer gives back (the store's rebuild,
	// feed_layers.select_sql).
	id := b.stage(t, feedInfo("hashes"), layer)
	var rebuild string
	b.scalar(t, &rebuild, `SELECT select_sql FROM feed_layers WHERE feed = 'hashes'`)
	if n := b.count(t, `SELECT count(*) FROM (`+rebuild+`) f JOIN staged_features s ON s.feature_id = f.feature_id
		WHERE s.poll_id = $1
		AND s.props_hash = sha256(coalesce(jsonb_send(f.properties), '\x'::bytea))`, id); n != len(layer) {
		t.Errorf("%d of %d rows have props_hash = sha256(jsonb_send(properties))", n, len(layer))
	}
}
