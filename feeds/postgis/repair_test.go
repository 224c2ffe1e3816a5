package postgis_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twpayne/go-geom"

	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
)

// familyLayers are a polygonal and a lineal layer, each with valid
// features, an invalid geometry whose ST_MakeValid is a
// GeometryCollection of its family and another, and one whose repair has
// nothing of its family left. repaired maps the repairable ids to the
// type they are stored as.
func familyLayers(valid bool) (polys, lines []ft.Feature) {
	poly := func(flat ...float64) geom.T {
		return geom.NewPolygonFlat(geom.XY, flat, []int{len(flat)}).SetSRID(4326)
	}
	mline := func(ends []int, flat ...float64) geom.T {
		return geom.NewMultiLineStringFlat(geom.XY, flat, ends).SetSRID(4326)
	}
	line := func(flat ...float64) geom.T { return geom.NewLineStringFlat(geom.XY, flat).SetSRID(4326) }
	ok := square(0.5, 0.5, 0.1)
	polys = []ft.Feature{
		feature("square", square(0, 0, 0.1), props("n", 1)),
		feature("multi", geom.NewMultiPolygonFlat(geom.XY, []float64{1, 0, 1.1, 0, 1.1, 0.1, 1, 0}, [][]int{{8}}).SetSRID(4326), props("n", 2)),
		// A square with a spike: GEOMETRYCOLLECTION(POLYGON, LINESTRING).
		feature("spike", poly(0, 0, 2, 0, 2, 2, 3, 3, 2, 2, 0, 2, 0, 0), props("n", 3)),
		// A ring of no area: ST_MakeValid's answer is lines only.
		feature("flat", poly(0, 0, 1, 1, 2, 2, 0, 0), props("n", 4)),
	}
	lines = []ft.Feature{
		feature("line", line(0, 0, 1, 1), props("n", 1)),
		// One line and one of two equal points: GEOMETRYCOLLECTION(POINT, LINESTRING).
		feature("mixed", mline([]int{4, 8}, 0, 0, 1, 1, 2, 2, 2, 2), props("n", 2)),
		// Two equal points: ST_MakeValid's answer is a point.
		feature("stub", line(1, 1, 1, 1), props("n", 3)),
	}
	if valid {
		polys[2].Geometry, polys[3].Geometry = ok, ok
		lines[1].Geometry, lines[2].Geometry = mline([]int{4}, 0, 0, 1, 1), line(1, 1, 2, 2)
	}
	return polys, lines
}

// TestRepairKeepsTheFamily: an invalid geometry is stored as the part of
// its repair of its own family (a polygon's polygonal part, a line's
// lineal part), counted among the invalid geometries, and shown by the
// typed view; one with nothing of its family left is stored without a
// geometry. On every path that writes: the first loads and the diff.
func TestRepairKeepsTheFamily(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, b *bundle, polysFeed, linesFeed feeds.FeedInfo, resP, resL feeds.ApplyResult) {
		t.Helper()
		if resP.InvalidGeometries != 2 || resL.InvalidGeometries != 2 {
			t.Errorf("invalid geometries: polygons %+v, lines %+v; want 2 each", resP, resL)
		}
		for feed, want := range map[string]string{
			polysFeed.Feed: "flat:-,multi:MULTIPOLYGON,spike:POLYGON,square:POLYGON",
			linesFeed.Feed: "line:LINESTRING,mixed:MULTILINESTRING,stub:-",
		} {
			var got string
			b.scalar(t, &got, `SELECT string_agg(feature_id || ':' || coalesce(GeometryType(geom), '-'), ',' ORDER BY feature_id)
				FROM features WHERE feed = $1`, feed)
			if got != want {
				t.Errorf("%s stored: %s, want %s", feed, got, want)
			}
		}
		var area float64
		b.scalar(t, &area, `SELECT ST_Area(geom) FROM features WHERE feed = $1 AND feature_id = 'spike'`, polysFeed.Feed)
		if area != 4 {
			t.Errorf("repaired spike's area %v, want the square's 4", area)
		}
		for _, v := range []struct {
			feed feeds.FeedInfo
			want string
		}{
			{polysFeed, "flat:-,multi:MULTIPOLYGON,spike:MULTIPOLYGON,square:MULTIPOLYGON"},
			{linesFeed, "line:MULTILINESTRING,mixed:MULTILINESTRING,stub:-"},
		} {
			var got string
			b.scalar(t, &got, fmt.Sprintf(`SELECT string_agg(feature_id || ':' || coalesce(GeometryType(geom), '-'), ',' ORDER BY feature_id)
				FROM %s`, b.viewName(t, v.feed)))
			if got != v.want {
				t.Errorf("%s's typed view: %s, want %s", v.feed.Feed, got, v.want)
			}
		}
	}
	polysFeed, linesFeed := feedInfo("parcels"), feedInfo("centerlines")
	forFirstLoadPaths(t, func(t *testing.T, b *bundle) {
		polys, lines := familyLayers(false)
		_, resP := b.poll(t, polysFeed, polys)
		_, resL := b.poll(t, linesFeed, lines)
		check(t, b, polysFeed, linesFeed, resP, resL)
	})
	t.Run("diff", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		polys, lines := familyLayers(true)
		b.poll(t, polysFeed, polys)
		b.poll(t, linesFeed, lines)
		polys, lines = familyLayers(false)
		_, resP := b.poll(t, polysFeed, polys)
		_, resL := b.poll(t, linesFeed, lines)
		if resP.Modified != 2 || resL.Modified != 2 {
			t.Fatalf("second polls: %+v, %+v; want 2 modified each", resP, resL)
		}
		check(t, b, polysFeed, linesFeed, resP, resL)
	})
}

// TestRepairFunction pins ingestd_repair_geometry on the shapes it meets:
// a single type stays single with one part left, a multi type stays
// multi, a collection is repaired as ST_MakeValid repairs it.
func TestRepairFunction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for in, want := range map[string]string{
		"POLYGON((0 0,2 0,2 2,3 3,2 2,0 2,0 0))":                    "POLYGON((2 0,0 0,0 2,2 2,2 0))",
		"POLYGON((0 0,1 1,1 0,0 1,0 0))":                            "MULTIPOLYGON(((0 1,0.5 0.5,0 0,0 1)),((1 0,0.5 0.5,1 1,1 0)))",
		"MULTIPOLYGON(((0 0,2 0,2 2,3 3,2 2,0 2,0 0)))":             "MULTIPOLYGON(((2 0,0 0,0 2,2 2,2 0)))",
		"POLYGON((0 0,1 1,2 2,0 0))":                                "-",
		"LINESTRING(1 1,1 1)":                                       "-",
		"MULTILINESTRING((0 0,1 1),(2 2,2 2))":                      "MULTILINESTRING((0 0,1 1))",
		"GEOMETRYCOLLECTION(POLYGON((0 0,1 1,2 2,0 0)),POINT(5 5))": "GEOMETRYCOLLECTION(MULTILINESTRING((0 0,1 1),(1 1,2 2)),POINT(5 5))",
	} {
		var got string
		b.scalar(t, &got, `SELECT coalesce(ST_AsText(ingestd_repair_geometry(ST_GeomFromText($1, 4326))), '-')`, in)
		if got != want {
			t.Errorf("repair of %s = %s, want %s", in, got, want)
		}
		if !strings.HasPrefix(want, "-") {
			var valid bool
			b.scalar(t, &valid, `SELECT ST_IsValid(ingestd_repair_geometry(ST_GeomFromText($1, 4326)))`, in)
			if !valid {
				t.Errorf("repair of %s is not valid", in)
			}
		}
	}
}
