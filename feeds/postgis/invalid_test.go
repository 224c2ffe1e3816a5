package postgis_test

import (
	"testing"

	"github.com/twpayne/go-geom"

	"github.com/ingestd/ingestd/wfs"
)

// invalidLayer is one valid square and four geometries that are wrong in the
// ways real layers are: a self-intersecting "bowtie" (PostGIS parses it,
// ST_IsValid says no), and three that PostgreSQL would refuse to parse at all,
// which would abort the whole apply if they reached it.
func invalidLayer() []wfs.Feature {
	poly := func(flat ...float64) geom.T {
		return geom.NewPolygonFlat(geom.XY, flat, []int{len(flat)}).SetSRID(4326)
	}
	return []wfs.Feature{
		feature("ok", square(-78.6, 35.7, 0.001), props("n", 1)),
		feature("bowtie", poly(-78.6, 35.7, -78.59, 35.71, -78.59, 35.7, -78.6, 35.71, -78.6, 35.7), props("n", 2)),
		feature("tri", poly(-78.6, 35.7, -78.59, 35.7, -78.6, 35.7), props("n", 3)),
		feature("open", poly(-78.6, 35.7, -78.59, 35.7, -78.59, 35.71, -78.6, 35.71), props("n", 4)),
		feature("dot", geom.NewLineStringFlat(geom.XY, []float64{-78.6, 35.7}).SetSRID(4326), props("n", 5)),
	}
}

func TestInvalidGeometriesAreRepairedAndCounted(t *testing.T) {
	t.Parallel()
	forFirstLoadPaths(t, func(t *testing.T, b *bundle) {
		feed := feedInfo("lots")
		pollID, res := b.poll(t, feed, invalidLayer())
		if res.InvalidGeometries != 4 || res.Added != 5 {
			t.Fatalf("apply: %+v, want 5 added of which 4 invalid", res)
		}
		if n := b.count(t, `SELECT invalid_geometries FROM polls WHERE id = $1`, pollID); n != 4 {
			t.Errorf("polls.invalid_geometries = %d, want 4", n)
		}
		if n := b.count(t, `SELECT count(*) FROM features WHERE feed = 'lots' AND geom IS NOT NULL AND NOT ST_IsValid(geom)`); n != 0 {
			t.Errorf("%d invalid geometries stored", n)
		}
		var bowtie string
		b.scalar(t, &bowtie, `SELECT GeometryType(geom) FROM features WHERE feed = 'lots' AND feature_id = 'bowtie'`)
		if bowtie != "MULTIPOLYGON" {
			t.Errorf("repaired bowtie is a %s, want the MULTIPOLYGON of its two triangles", bowtie)
		}
		// Unparseable geometries keep their feature and properties, without a geometry.
		if n := b.count(t, `SELECT count(*) FROM features WHERE feed = 'lots' AND geom IS NULL AND feature_id IN ('tri', 'open', 'dot')`); n != 3 {
			t.Errorf("%d of the 3 unparseable geometries stored as NULL", n)
		}
		// The same snapshot again is unchanged: broken geometries hash stably.
		_, res = b.poll(t, feed, invalidLayer())
		if res.Unchanged != 5 || res.InvalidGeometries != 0 {
			t.Errorf("second poll: %+v, want 5 unchanged and nothing judged", res)
		}
	})
}

func TestInvalidGeometriesSkipped(t *testing.T) {
	t.Parallel()
	forFirstLoadPaths(t, func(t *testing.T, b *bundle) {
		feed := feedInfo("lots")
		feed.Guard.SkipInvalid = true
		_, res := b.poll(t, feed, invalidLayer())
		if res.InvalidGeometries != 4 || res.Added != 1 {
			t.Fatalf("apply: %+v, want 1 added and 4 invalid skipped", res)
		}
		if n := b.count(t, `SELECT count(*) FROM features WHERE feed = 'lots'`); n != 1 {
			t.Errorf("%d features stored, want only the valid one", n)
		}
		if n := b.count(t, `SELECT count(*) FROM feature_changes WHERE feed = 'lots'`); n != 1 {
			t.Errorf("%d changes logged, want 1 (skipped features are not added)", n)
		}
	})
}

// An id on two pages means the pages do not add up to one snapshot: the
// apply refuses it and the feed keeps its features.
func TestIDOnTwoPagesIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("pages")
	b.poll(t, feed, []wfs.Feature{feature("a", point(1, 1, 4326), nil), feature("b", point(2, 2, 4326), nil)})

	id := b.stage(t, feed,
		[]wfs.Feature{feature("a", point(1, 1, 4326), nil), feature("c", point(3, 3, 4326), nil)},
		[]wfs.Feature{feature("c", point(3, 3, 4326), nil)}, // page 1 repeats c: paging moved
	)
	b.applyIncomplete(t, id, feed, `"c" on pages 0, 1`)
	if n := b.count(t, `SELECT count(*) FROM features WHERE feed = 'pages'`); n != 2 {
		t.Errorf("%d features after the refused snapshot, want the previous 2", n)
	}
}
