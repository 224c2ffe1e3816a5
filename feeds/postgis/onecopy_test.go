package postgis_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/twpayne/go-geom"

	ft "github.com/ingestd/ingestd/feature"
)

// setupOneCopy is setup: every store keeps one copy of each layer.
func setupOneCopy(t *testing.T) *bundle {
	t.Helper()
	return setup(t)
}

// rebuilt maps each feature id of the feed's layer to its properties as
// the layer rebuilds them (feed_layers.select_sql), as jsonb text.
func (b *bundle) rebuilt(t *testing.T, feed string) map[string]string {
	t.Helper()
	var sel string
	b.scalar(t, &sel, "SELECT select_sql FROM ingestd.feed_layers WHERE jurisdiction = 'wake' AND feed = $1", feed)
	return b.textMap(t, "SELECT feature_id, properties::text FROM ("+sel+") g")
}

// asJSONB is each raw JSON object's jsonb text, as PostgreSQL prints it.
func (b *bundle) asJSONB(t *testing.T, raw map[string]json.RawMessage) map[string]string {
	t.Helper()
	out := map[string]string{}
	for id, r := range raw {
		var s string
		b.scalar(t, &s, "SELECT $1::jsonb::text", string(r))
		out[id] = s
	}
	return out
}

func equalMaps(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d rows, want %d: %v", what, len(got), len(want), got)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s %s: %s, want %s", what, k, got[k], w)
		}
	}
}

// oneCopyFeatures are features whose properties need every part of the
// rebuild: a double precision column at one scale, a value of another
// scale, an absent key, a null, a string among integers, a nested value,
// a date among timestamps; a Point among MultiPoints.
func oneCopyFeatures() (map[string]json.RawMessage, []ft.Feature) {
	raw := map[string]json.RawMessage{
		"a": json.RawMessage(`{"acres": 1.50, "n": 1, "name": "one", "when": "2024-01-02T03:04:05Z", "tags": {"k": [1, 2]}}`),
		"b": json.RawMessage(`{"acres": 2.25, "n": 2, "name": null, "when": "2024-01-03"}`),
		"c": json.RawMessage(`{"acres": 3.125, "n": "three", "name": "three", "when": "2024-01-04T00:00:00Z"}`),
		"d": json.RawMessage(`{"acres": 1e3, "n": 4}`),
	}
	var fs []ft.Feature
	for i, id := range []string{"a", "b", "c", "d"} {
		g := multiPoint(float64(i), 35)
		if id == "b" {
			g = point(float64(i)-78, 35, 4326)
		}
		fs = append(fs, feature(id, g, raw[id]))
	}
	return raw, fs
}

func TestOneCopyFirstLoadRebuildsEveryRow(t *testing.T) {
	t.Parallel()
	b := setupOneCopy(t)
	feed := feedInfo("parcels")
	raw, fs := oneCopyFeatures()
	_, res := b.poll(t, feed, fs)
	if res.Added != 4 || res.Features != 4 {
		t.Fatalf("first load: %+v", res)
	}
	equalMaps(t, "rebuilt", b.rebuilt(t, "parcels"), b.asJSONB(t, raw))
	// The feed's features are in its layer table alone.
	if n := b.count(t, "SELECT count(*) FROM pg_inherits WHERE inhparent = 'ingestd.features'::regclass"); n != 0 {
		t.Errorf("%d partitions of features, want none", n)
	}
	if n := b.count(t, "SELECT count(*) FROM wake.parcels WHERE octet_length(ingestd_hash) = 16"); n != 4 {
		t.Errorf("%d rows with a 16-byte hash, want 4", n)
	}
	// The Point is kept as sent behind the layer's MultiPoint.
	geoms := b.textMap(t, "SELECT feature_id, ST_AsText(geom) FROM ("+
		"SELECT o.feature_id, CASE WHEN o.ingestd_geom_single THEN ST_GeometryN(o.geom, 1) ELSE coalesce(ST_GeomFromEWKB(o.ingestd_geom), o.geom) END AS geom FROM wake.parcels o) g")
	if geoms["b"] != "POINT(-77 35)" {
		t.Errorf("b's geometry rebuilt as %s", geoms["b"])
	}
	// A poll of the same features changes nothing.
	_, res = b.poll(t, feed, fs)
	if res.Unchanged != 4 || res.Added+res.Modified+res.Removed != 0 {
		t.Fatalf("same snapshot: %+v", res)
	}
}

func multiPoint(x, y float64) geom.T {
	return geom.NewMultiPointFlat(geom.XY, []float64{x - 78, y}).SetSRID(4326)
}

// A layer whose values its columns give back stores no rest: the
// profile's exact columns cost nothing per row.
func TestOneCopyExactColumnsNeedNoRest(t *testing.T) {
	t.Parallel()
	b := setupOneCopy(t)
	fs := generatePolygons(300)
	b.poll(t, feedInfo("parcels"), fs)
	if n := b.count(t, "SELECT count(*) FROM wake.parcels WHERE ingestd_rest IS NOT NULL OR ingestd_absent IS NOT NULL OR ingestd_geom IS NOT NULL"); n != 0 {
		t.Errorf("%d rows with a rest, absent keys or a geometry apart, want none", n)
	}
	raw := map[string]json.RawMessage{}
	for _, f := range fs {
		raw[f.ID] = f.Properties
	}
	equalMaps(t, "rebuilt", b.rebuilt(t, "parcels"), b.asJSONB(t, raw))
}

// A later snapshot is diffed against the layer table: each change is
// classified (geometry, properties) from the one stored hash, the
// superseded versions go to history in the generic form, and the change
// log carries 16-byte hashes.
func TestOneCopyDiffHistoryAndChangeLog(t *testing.T) {
	t.Parallel()
	b := setupOneCopy(t)
	feed := feedInfo("parcels")
	feed.Guard.MaxShrink = 0.9
	raw, fs := oneCopyFeatures()
	b.poll(t, feed, fs)
	next := []ft.Feature{
		feature("a", fs[0].Geometry, raw["a"]),                                                     // unchanged
		feature("b", point(5, 5, 4326), raw["b"]),                                                  // geometry
		feature("c", fs[2].Geometry, json.RawMessage(`{"acres": 3.50, "n": 3, "name": "three"}`)),  // properties
		feature("e", multiPoint(9, 9), json.RawMessage(`{"acres": 0.75, "n": 5, "name": "five"}`)), // added; d removed
	}
	_, res := b.poll(t, feed, next)
	if res.Added != 1 || res.Modified != 2 || res.Removed != 1 || res.Unchanged != 1 {
		t.Fatalf("diff: %+v", res)
	}
	changes := b.textMap(t, `SELECT feature_id, change || ' g=' || coalesce(geometry_changed::text, '?') || ' p=' || properties_changed::text
		|| ' ' || coalesce(octet_length(old_hash), 0) || '/' || coalesce(octet_length(new_hash), 0)
		FROM ingestd.feature_changes WHERE feature_id <> ''`)
	equalMaps(t, "changes", changes, map[string]string{
		"b": "modified g=true p=false 16/16", "c": "modified g=false p=true 16/16",
		"e": "added g=true p=true 0/16", "d": "removed g=true p=true 16/0"})
	history := b.textMap(t, "SELECT feature_id, properties::text FROM ingestd.feature_history")
	old := b.asJSONB(t, raw)
	equalMaps(t, "history", history, map[string]string{"b": old["b"], "c": old["c"], "d": old["d"]})
	var g string
	b.scalar(t, &g, "SELECT ST_AsText(geom) FROM ingestd.feature_history WHERE feature_id = 'b'")
	if g != "POINT(-77 35)" {
		t.Errorf("b's superseded geometry %s", g)
	}
	want := b.asJSONB(t, map[string]json.RawMessage{"a": raw["a"], "b": raw["b"], "c": next[2].Properties, "e": next[3].Properties})
	equalMaps(t, "rebuilt", b.rebuilt(t, "parcels"), want)
}

// A snapshot with a new key rewrites the layer from itself with the new
// column; the stored rows keep what they were.
func TestOneCopyReshapeOnNewColumn(t *testing.T) {
	t.Parallel()
	b := setupOneCopy(t)
	feed := feedInfo("parcels")
	fs := generatePolygons(50)
	b.poll(t, feed, fs)
	fs[0].Properties = json.RawMessage(`{"pin": "0000000000", "owner": "Example Owner LLC", "acres": 0, "zone": "R-4"}`)
	_, res := b.poll(t, feed, fs)
	if res.Modified != 1 || res.Unchanged != 49 {
		t.Fatalf("reshape: %+v", res)
	}
	if n := b.count(t, "SELECT count(*) FROM wake.parcels WHERE zone = 'R-4'"); n != 1 {
		t.Errorf("%d rows with the new column set, want 1", n)
	}
	raw := map[string]json.RawMessage{}
	for _, f := range fs {
		raw[f.ID] = f.Properties
	}
	equalMaps(t, "rebuilt", b.rebuilt(t, "parcels"), b.asJSONB(t, raw))
}

// A held snapshot writes nothing into the layer.
func TestOneCopyHeldWritesNothing(t *testing.T) {
	t.Parallel()
	b := setupOneCopy(t)
	feed := feedInfo("parcels")
	fs := generatePolygons(50)
	b.poll(t, feed, fs)
	id := b.stage(t, feed, fs[:10])
	if _, err := b.store.Apply(b.ctx, id, feed); err == nil {
		t.Fatal("a snapshot of a fifth of the layer applied")
	}
	if n := b.count(t, "SELECT count(*) FROM wake.parcels"); n != 50 {
		t.Errorf("%d rows after a held snapshot, want 50", n)
	}
}

// The features view's reader (ingestd_layer_features, migration 43)
// rebuilds each row as the store does (feed_layers.select_sql), on rows
// of every kind, properties that are no object included (the store keeps
// them whole in ingestd_rest, a one-element array).
func TestLayerFeaturesMatchesTheStoreRebuild(t *testing.T) {
	t.Parallel()
	b := setup(t)
	raw, fs := oneCopyFeatures()
	for id, r := range map[string]string{"arr": `[1, {"k": "v"}]`, "str": `"just a string"`, "jnull": `null`} {
		raw[id] = json.RawMessage(r)
		fs = append(fs, feature(id, multiPoint(7, 7), raw[id]))
	}
	fs = append(fs, feature("none", multiPoint(8, 8), nil))
	b.poll(t, feedInfo("kinds"), fs)
	var sel string
	b.scalar(t, &sel, "SELECT select_sql FROM ingestd.feed_layers WHERE feed = 'kinds'")
	store := b.textMap(t, "SELECT feature_id, coalesce(properties::text, '-') || ' ' || ST_AsText(geom) FROM ("+sel+") g")
	reader := b.textMap(t, "SELECT feature_id, coalesce(properties::text, '-') || ' ' || ST_AsText(geom) FROM ingestd_layer_features('wake', 'kinds')")
	for id, s := range store {
		if reader[id] != s {
			t.Errorf("%s: the store rebuilds %s, the reader %s", id, s, reader[id])
		}
	}
	if len(reader) != len(store) {
		t.Errorf("the reader gives %d rows, the store %d", len(reader), len(store))
	}
}

// A relation of someone else's under the layer's name is not replaced
// by a first load: the poll fails naming it.
func TestOneCopyFirstLoadLeavesATakenNameAlone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if _, err := b.pool.Exec(b.ctx, `CREATE SCHEMA wake; CREATE TABLE wake.parcels (id int); INSERT INTO wake.parcels VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	feed := feedInfo("parcels")
	_, err := b.store.Apply(b.ctx, b.stage(t, feed, generatePolygons(3)), feed)
	if err == nil || !strings.Contains(err.Error(), `"wake"."parcels" is taken`) {
		t.Fatalf("apply: %v, want the taken name", err)
	}
	if n := b.count(t, "SELECT count(*) FROM wake.parcels"); n != 1 {
		t.Errorf("the user's table has %d rows, want its 1", n)
	}
}
