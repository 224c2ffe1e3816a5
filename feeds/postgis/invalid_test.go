package postgis_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twpayne/go-geom"

	"github.com/ingestd/ingestd/config"
	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
)

// invalidLayer is one valid square and four geometries that are wrong in the
// ways real layers are: a self-intersecting "bowtie" (PostGIS parses it,
// ST_IsValid says no), and three that PostgreSQL would refuse to parse at all,
// which would abort the whole apply if they reached it.
func invalidLayer() []ft.Feature {
	poly := func(flat ...float64) geom.T {
		return geom.NewPolygonFlat(geom.XY, flat, []int{len(flat)}).SetSRID(4326)
	}
	return []ft.Feature{
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
		if n := b.count(t, `SELECT count(*) FROM feature_changes_expanded WHERE feed = 'lots'`); n != 1 {
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
	b.poll(t, feed, []ft.Feature{feature("a", point(1, 1, 4326), nil), feature("b", point(2, 2, 4326), nil)})

	id := b.stage(t, feed,
		[]ft.Feature{feature("a", point(1, 1, 4326), nil), feature("c", point(3, 3, 4326), nil)},
		[]ft.Feature{feature("c", point(3, 3, 4326), nil)}, // page 1 repeats c: paging moved
	)
	b.applyIncomplete(t, id, feed, `"c" on pages 0, 1`)
	if n := b.count(t, `SELECT count(*) FROM features WHERE feed = 'pages'`); n != 2 {
		t.Errorf("%d features after the refused snapshot, want the previous 2", n)
	}
}

// outOfRangeLayer is three features in range and six whose coordinates are no
// place on Earth once in EPSG:4326: lon 500 and lat 100 in EPSG:4326, lon
// 500 in another geographic CRS (NAD83, which ST_Transform passes through as
// it is) and without a CRS (taken as 4326), lon 180.0000001, and a
// collection with one member out of range. The corners of the range itself are in it.
func outOfRangeLayer() []ft.Feature {
	return []ft.Feature{
		feature("ok", square(-78.6, 35.7, 0.001), props("n", 1)),
		feature("corner", geom.NewMultiPointFlat(geom.XY, []float64{-180, -90, 180, 90}).SetSRID(4326), props("n", 2)),
		feature("mercator", point(-8749000, 4260000, 3857), props("n", 3)),
		feature("lon500", point(500, 35.7, 4326), props("n", 4)),
		feature("lat100", point(-78.6, 100, 4326), props("n", 5)),
		feature("nad83", point(500, 35.7, 4269), props("n", 6)),
		feature("nosrid", point(-500, 35.7, 0), props("n", 7)),
		feature("justout", point(180.0000001, 0, 4326), props("n", 9)),
		feature("collection", geom.NewGeometryCollection().MustPush(
			geom.NewPointFlat(geom.XY, []float64{-78.6, 35.7}),
			geom.NewLineStringFlat(geom.XY, []float64{-78.6, 35.7, -78.6, 90.5})).SetSRID(4326), props("n", 8)),
	}
}

// TestCoordinatesOutOfRangeAreInvalid: a geometry outside longitudes ±180
// and latitudes ±90 (after the transform to EPSG:4326) is an invalid
// geometry, on every path: repaired (stored without it, as there is no
// faithful repair) and counted, or skipped.
func TestCoordinatesOutOfRangeAreInvalid(t *testing.T) {
	t.Parallel()
	const outside = 6
	repaired := func(t *testing.T, b *bundle, res feeds.ApplyResult) {
		t.Helper()
		if res.InvalidGeometries != outside {
			t.Errorf("apply: %+v, want %d invalid geometries", res, outside)
		}
		if n := b.count(t, `SELECT count(*) FROM features WHERE feed = 'range' AND geom IS NULL`); n != outside {
			t.Errorf("%d features stored without a geometry, want %d", n, outside)
		}
		if n := b.count(t, `SELECT count(*) FROM features WHERE feed = 'range' AND geom IS NOT NULL
			AND ST_XMin(geom) >= -180 AND ST_XMax(geom) <= 180 AND ST_YMin(geom) >= -90 AND ST_YMax(geom) <= 90`); n != 3 {
			t.Errorf("%d features stored in range, want 3", n)
		}
	}
	forFirstLoadPaths(t, func(t *testing.T, b *bundle) {
		_, res := b.poll(t, feedInfo("range"), outOfRangeLayer())
		repaired(t, b, res)
	})
	t.Run("refresh", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		feed := feedInfo("range")
		b.poll(t, feed, []ft.Feature{feature("lon500", point(-78.6, 35.7, 4326), props("n", 0))})
		_, res := b.poll(t, feed, outOfRangeLayer())
		repaired(t, b, res)
	})
	t.Run("skip", func(t *testing.T) {
		t.Parallel()
		forFirstLoadPaths(t, func(t *testing.T, b *bundle) {
			feed := feedInfo("range")
			feed.Guard.SkipInvalid = true
			_, res := b.poll(t, feed, outOfRangeLayer())
			if res.InvalidGeometries != outside || res.Added != 3 {
				t.Errorf("apply: %+v, want 3 added and %d invalid skipped", res, outside)
			}
			// A refresh keeps the previous version of a feature whose new
			// geometry is out of range.
			_, res = b.poll(t, feed, []ft.Feature{
				feature("ok", point(-78.6, 100, 4326), props("n", 1)),
				feature("corner", point(-78.6, 35.7, 4326), props("n", 2)),
				feature("mercator", point(-8749000, 4260000, 3857), props("n", 3)),
			})
			if res.InvalidGeometries != 1 || res.Modified != 1 {
				t.Errorf("refresh: %+v, want 1 modified and 1 invalid skipped", res)
			}
			var typ string
			b.scalar(t, &typ, `SELECT GeometryType(geom) FROM features WHERE feed = 'range' AND feature_id = 'ok'`)
			if typ != "POLYGON" {
				t.Errorf("ok is a %s after its out-of-range update, want its previous POLYGON", typ)
			}
		})
	})
}

// TestExtentGuardIgnoresEmptyGeometries: an empty geometry lies nowhere, so
// it counts neither inside nor outside the jurisdiction's bbox; a layer of
// mostly empty geometries is not held for lying outside it.
func TestExtentGuardIgnoresEmptyGeometries(t *testing.T) {
	t.Parallel()
	forFirstLoadPaths(t, func(t *testing.T, b *bundle) {
		feed := feedInfo("empties")
		feed.Guard.BBox = &config.BBox{MinX: -79, MinY: 35, MaxX: -78, MaxY: 36}
		layer := []ft.Feature{feature("in", point(-78.6, 35.7, 4326), nil)}
		for i := range 3 {
			layer = append(layer,
				feature(fmt.Sprintf("empty%d", i), geom.NewPointEmpty(geom.XY).SetSRID(4326), nil),
				feature(fmt.Sprintf("emptygc%d", i), geom.NewGeometryCollection().SetSRID(2264), nil))
		}
		if _, res := b.poll(t, feed, layer); res.Added != len(layer) {
			t.Errorf("apply: %+v, want all %d added", res, len(layer))
		}
		// A first load in a projected CRS declared as EPSG:4326 lies out of
		// range: held by the extent, not stored without its geometries.
		wrong := feedInfo("wrongcrs")
		wrong.Guard.BBox = feed.Guard.BBox
		id := b.stage(t, wrong, []ft.Feature{feature("a", point(2000000, 700000, 4326), nil),
			feature("b", point(2000100, 700000, 4326), nil), feature("c", point(-78.6, 35.7, 4326), nil)})
		var held *feeds.HeldError
		if _, err := b.store.Apply(b.ctx, id, wrong); !errors.As(err, &held) || !strings.Contains(held.Reason, "2 of 3 located") {
			t.Errorf("first load out of range: %v, want held naming 2 of 3", err)
		}
		// Still held when the located features lie outside.
		layer = append(layer, feature("out1", point(10, 10, 4326), nil), feature("out2", point(10, 10, 4326), nil))
		id = b.stage(t, feed, layer)
		_, err := b.store.Apply(b.ctx, id, feed)
		if !errors.As(err, &held) || !strings.Contains(held.Reason, "2 of 3 located") {
			t.Errorf("apply with 2 of 3 located outside: %v, want held naming 2 of 3", err)
		}
	})
}

// TestCoordinatesOutsideTheCRSDomainAreInvalid: a coordinate PROJ refuses to
// transform (here 10^12 m in UTM zone 17N: "Point outside of projection
// domain") makes PostGIS abort the statement; the apply runs again with
// transforms that give that geometry no value, so the one feature is an
// invalid geometry (stored without it, or skipped) and the layer applies.
func TestCoordinatesOutsideTheCRSDomainAreInvalid(t *testing.T) {
	t.Parallel()
	layer := func() []ft.Feature {
		return []ft.Feature{
			feature("ok", point(712000, 3953000, 32617), props("n", 1)),
			feature("far", point(1e12, 1e12, 32617), props("n", 2)),
			feature("gc", geom.NewGeometryCollection().MustPush(geom.NewPointFlat(geom.XY, []float64{712000, 3953000}),
				geom.NewPointFlat(geom.XY, []float64{-1e12, 1e12})).SetSRID(32617), props("n", 3)),
		}
	}
	check := func(t *testing.T, b *bundle, res feeds.ApplyResult) {
		t.Helper()
		if res.InvalidGeometries != 2 {
			t.Errorf("apply: %+v, want 2 invalid geometries", res)
		}
		if n := b.count(t, `SELECT count(*) FROM features WHERE feed = 'utm' AND geom IS NULL AND feature_id IN ('far', 'gc')`); n != 2 {
			t.Errorf("%d of the 2 untransformable geometries stored as NULL", n)
		}
		if n := b.count(t, `SELECT count(*) FROM features WHERE feed = 'utm' AND feature_id = 'ok' AND ST_Y(geom) BETWEEN 35 AND 36`); n != 1 {
			t.Errorf("ok not stored in EPSG:4326")
		}
	}
	forFirstLoadPaths(t, func(t *testing.T, b *bundle) {
		feed := feedInfo("utm")
		feed.Guard.BBox = &config.BBox{MinX: -79, MinY: 35, MaxX: -78, MaxY: 36}
		_, res := b.poll(t, feed, layer())
		check(t, b, res)
	})
	t.Run("refresh", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		feed := feedInfo("utm")
		b.poll(t, feed, []ft.Feature{feature("ok", point(-78.6, 35.7, 4326), nil)})
		_, res := b.poll(t, feed, layer())
		check(t, b, res)
	})
}
