package postgis_test

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/twpayne/go-geom"

	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
)

// oddFeatures are features whose hashes take the unusual branches of
// staging: no properties (missing and empty), a null, an empty and a broken
// geometry, one PostGIS parses but finds invalid, properties that are not
// JSON or hold a number numeric cannot, text repaired to U+FFFD, a feature
// without an id, and a geometry in another CRS.
func oddFeatures() []ft.Feature {
	bowtie := geom.NewPolygonFlat(geom.XY, []float64{-78.6, 35.7, -78.59, 35.71, -78.59, 35.7, -78.6, 35.71, -78.6, 35.7}, []int{10}).SetSRID(4326)
	open := geom.NewPolygonFlat(geom.XY, []float64{-78.6, 35.7, -78.59, 35.7, -78.59, 35.71, -78.6, 35.71}, []int{8}).SetSRID(4326)
	return []ft.Feature{
		feature("plain", square(-78.6, 35.7, 0.001), props("n", 1)),
		feature("no-props", point(-78.6, 35.7, 4326), nil),
		feature("empty-props", point(-78.6, 35.7, 4326), json.RawMessage(`{}`)),
		feature("null-geom", nil, props("n", 2)),
		feature("null-both", nil, nil),
		feature("empty-geom", geom.NewPolygon(geom.XY).SetSRID(4326), props("n", 3)),
		feature("bowtie", bowtie, props("n", 4)),
		feature("open-ring", open, props("n", 5)),
		feature("not-json", point(-78.6, 35.7, 4326), json.RawMessage(`{"n": `)),
		feature("huge-number", point(-78.6, 35.7, 4326), json.RawMessage(`{"n": 1e1000000}`)),
		feature("bad-utf8", point(-78.6, 35.7, 4326), json.RawMessage("{\"s\": \"a\xffb\"}")),
		feature("", point(-78.61, 35.71, 4326), props("n", 6)),
		feature("state-plane", point(2100000, 740000, 2264), props("n", 7)),
	}
}

// usableOdd is oddFeatures less the two whose properties have no faithful
// repair, which an apply never writes.
func usableOdd() []ft.Feature {
	return slices.DeleteFunc(oddFeatures(), func(f ft.Feature) bool { return f.ID == "not-json" || f.ID == "huge-number" })
}

// stagedHashes maps poll pollID's staged rows, by the id the apply names
// them with, to the content hash SQL computes from their two hashes (the
// layer's ingestd_hash), and reports the rows whose stored content_hash
// differs from it.
func (b *bundle) stagedHashes(t *testing.T, pollID int64) (want map[string]string, differ []string) {
	t.Helper()
	want = b.textMap(t, `SELECT CASE WHEN feature_id = '' THEN encode(sha256(geom_hash || props_hash), 'hex') ELSE feature_id END,
			encode(substring(sha256(geom_hash || props_hash) for 16), 'hex')
		FROM staged_features WHERE poll_id = $1`, pollID)
	stored := b.textMap(t, `SELECT CASE WHEN feature_id = '' THEN encode(sha256(geom_hash || props_hash), 'hex') ELSE feature_id END,
			coalesce(encode(content_hash, 'hex'), 'NULL')
		FROM staged_features WHERE poll_id = $1`, pollID)
	for id, h := range want {
		if stored[id] != h {
			differ = append(differ, id+": staged "+stored[id]+", SQL "+h)
		}
	}
	return want, differ
}

// layerHashes maps the feed's layer rows to their ingestd_hash, in hex.
func (b *bundle) layerHashes(t *testing.T, feed feeds.FeedInfo) map[string]string {
	t.Helper()
	var table string
	b.scalar(t, &table, `SELECT ingestd_feed_view($1, $2)`, feed.Jurisdiction, feed.Feed)
	return b.textMap(t, `SELECT feature_id, coalesce(encode(ingestd_hash, 'hex'), 'NULL') FROM `+table)
}

// checkLayerHashes fails t unless every row of the feed's layer has the
// hash want gives its id, and the layer holds every id of want but skip.
func (b *bundle) checkLayerHashes(t *testing.T, feed feeds.FeedInfo, want map[string]string, skip ...string) {
	t.Helper()
	got := b.layerHashes(t, feed)
	expect := maps.Clone(want)
	for _, id := range skip {
		delete(expect, id)
	}
	for id, h := range expect {
		if got[id] != h {
			t.Errorf("layer row %q: ingestd_hash %s, want %s", id, got[id], h)
		}
	}
	for id := range got {
		if _, ok := expect[id]; !ok {
			t.Errorf("layer has row %q, not staged", id)
		}
	}
}

// TestStagedContentHashMatchesSQL: the content hash staging computes in Go
// is byte for byte the one SQL computes from the row's geometry and
// properties hashes (the bytes every layer's ingestd_hash already holds),
// for the odd features too, and is what the first load stores.
func TestStagedContentHashMatchesSQL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("odd")
	id := b.stage(t, feed, oddFeatures())
	want, differ := b.stagedHashes(t, id)
	if len(want) != len(oddFeatures()) {
		t.Fatalf("%d staged rows, want %d", len(want), len(oddFeatures()))
	}
	for _, d := range differ {
		t.Error(d)
	}
	if _, err := b.store.Apply(b.ctx, id, feed); err != nil {
		t.Fatal(err)
	}
	// Properties with no faithful repair are never written.
	b.checkLayerHashes(t, feed, want, "not-json", "huge-number")
	// The same features again are unchanged: the layer's hashes and the
	// staged ones compare equal, in the small snapshot's check and the
	// large one's.
	if _, res := b.poll(t, feed, usableOdd()); res.Unchanged != len(usableOdd()) || res.Modified+res.Added+res.Removed != 0 {
		t.Errorf("the same snapshot again: %+v, want all unchanged", res)
	}
	postgis.SetSmallSnapshot(b.store, 0)
	postgis.SetLargeUnchangedCheck(b.store, true)
	checks, unchanged := postgis.LargeUnchangedChecks(b.store)
	if _, res := b.poll(t, feed, usableOdd()); res.Unchanged != len(usableOdd()) || res.Modified+res.Added+res.Removed != 0 {
		t.Errorf("the same snapshot, checked as a large one: %+v, want all unchanged", res)
	}
	if c, u := postgis.LargeUnchangedChecks(b.store); c != checks+1 || u != unchanged+1 {
		t.Errorf("large unchanged check ran %d times and found the snapshot unchanged %d times, want 1 and 1", c-checks, u-unchanged)
	}
}

// TestRowsStagedWithoutContentHash: a row staged before the column existed
// (a poll resumed across the upgrade: content_hash NULL) is hashed by the
// apply as before, in a first load, an unchanged check and a diff.
func TestRowsStagedWithoutContentHash(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("legacy")
	stageLegacy := func(fs []ft.Feature) (int64, map[string]string) {
		t.Helper()
		id := b.stage(t, feed, fs)
		want, _ := b.stagedHashes(t, id)
		if n := b.count(t, `WITH u AS (UPDATE wake.ingestd_staged SET content_hash = NULL WHERE poll_id = $1 RETURNING 1)
			SELECT count(*) FROM u`, id); n != len(fs) {
			t.Fatalf("cleared the hash of %d staged rows, want %d", n, len(fs))
		}
		return id, want
	}
	apply := func(id int64) feeds.ApplyResult {
		t.Helper()
		res, err := b.store.Apply(b.ctx, id, feed)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	id, want := stageLegacy(oddFeatures())
	apply(id)
	b.checkLayerHashes(t, feed, want, "not-json", "huge-number")

	id, _ = stageLegacy(usableOdd())
	if res := apply(id); res.Unchanged != len(usableOdd()) || res.Modified+res.Added+res.Removed != 0 {
		t.Errorf("the same snapshot staged without hashes: %+v, want all unchanged", res)
	}

	changed := usableOdd()
	changed[0].Properties = props("n", 100)
	id, want = stageLegacy(changed)
	if res := apply(id); res.Modified != 1 || res.Added+res.Removed != 0 {
		t.Errorf("one feature changed, staged without hashes: %+v, want 1 modified", res)
	}
	b.checkLayerHashes(t, feed, want)
}
