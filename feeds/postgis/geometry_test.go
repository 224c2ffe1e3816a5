package postgis_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/twpayne/go-geom"

	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
)

// geometryCase is one geometry a decoder can produce, and what PostGIS
// stores for it: its GeometryType, or "" when the geometry cannot be parsed
// and the feature is stored without it (counted invalid).
type geometryCase struct {
	name string
	g    geom.T
	want string
	// invalid: PostGIS parses it but ST_IsValid does not accept it; stored
	// repaired by ST_MakeValid and counted invalid.
	invalid bool
}

// layouts are every coordinate layout a decoder can produce.
var layouts = []geom.Layout{geom.XY, geom.XYZ, geom.XYM, geom.XYZM}

// coords returns n points' flat coordinates in layout l near (-78.6, 35.7),
// the first equal to the last when closed.
func coords(l geom.Layout, n int, closed bool) []float64 {
	var flat []float64
	for i := range n {
		k := i
		if closed && i == n-1 {
			k = 0
		}
		x, y := -78.6+0.001*float64(k%2), 35.7+0.001*float64(k/2)
		if k == 2 {
			x, y = -78.599, 35.701
		}
		if k == 3 {
			x, y = -78.6, 35.701
		}
		flat = append(flat, x, y)
		for range l.Stride() - 2 {
			flat = append(flat, 7)
		}
	}
	return flat
}

// geometryCases covers every geometry type in every layout, empty and not,
// GeometryCollections with members, empty and nested, and the ways a
// geometry can be unparseable.
func geometryCases() []geometryCase {
	var cases []geometryCase
	add := func(name, want string, g geom.T) { cases = append(cases, geometryCase{name: name, g: g, want: want}) }
	for _, l := range layouts {
		ring := coords(l, 5, true)
		s := l.Stride()
		pt := geom.NewPointFlat(l, coords(l, 1, false))
		ls := geom.NewLineStringFlat(l, coords(l, 3, false))
		poly := geom.NewPolygonFlat(l, ring, []int{len(ring)})
		add(l.String()+" point", "POINT", pt)
		add(l.String()+" empty point", "POINT", geom.NewPointEmpty(l))
		add(l.String()+" line", "LINESTRING", ls)
		add(l.String()+" empty line", "LINESTRING", geom.NewLineString(l))
		add(l.String()+" polygon", "POLYGON", poly)
		add(l.String()+" empty polygon", "POLYGON", geom.NewPolygon(l))
		add(l.String()+" multipoint", "MULTIPOINT", geom.NewMultiPointFlat(l, coords(l, 3, false)))
		add(l.String()+" empty multipoint", "MULTIPOINT", geom.NewMultiPoint(l))
		add(l.String()+" multiline", "MULTILINESTRING", geom.NewMultiLineStringFlat(l, coords(l, 4, false), []int{2 * s, 4 * s}))
		add(l.String()+" empty multiline", "MULTILINESTRING", geom.NewMultiLineString(l))
		add(l.String()+" multiline with an empty member", "MULTILINESTRING",
			geom.NewMultiLineStringFlat(l, coords(l, 2, false), []int{0, 2 * s}))
		add(l.String()+" multipolygon", "MULTIPOLYGON", geom.NewMultiPolygonFlat(l, ring, [][]int{{len(ring)}}))
		add(l.String()+" empty multipolygon", "MULTIPOLYGON", geom.NewMultiPolygon(l))
		add(l.String()+" multipolygon with an empty member", "MULTIPOLYGON",
			geom.NewMultiPolygonFlat(l, ring, [][]int{{}, {len(ring)}}))
		add(l.String()+" collection", "GEOMETRYCOLLECTION", geom.NewGeometryCollection().MustPush(pt, ls, poly))
		add(l.String()+" nested collection", "GEOMETRYCOLLECTION",
			geom.NewGeometryCollection().MustPush(pt, geom.NewGeometryCollection().MustPush(ls, geom.NewGeometryCollection().MustPush(poly))))
		add(l.String()+" collection of empties", "GEOMETRYCOLLECTION",
			geom.NewGeometryCollection().MustPush(geom.NewPointEmpty(l), geom.NewPolygon(l)))

		// Unparseable: stored without a geometry.
		add(l.String()+" one-point line", "", geom.NewLineStringFlat(l, coords(l, 1, false)))
		add(l.String()+" open ring", "", geom.NewPolygonFlat(l, coords(l, 5, false), []int{5 * s}))
		add(l.String()+" empty ring", "", geom.NewPolygonFlat(l, nil, []int{0}))
		add(l.String()+" NaN", "", geom.NewPointFlat(l, append([]float64{math.NaN()}, coords(l, 1, false)[1:]...)))
		add(l.String()+" +Inf", "", geom.NewLineStringFlat(l, append(coords(l, 1, false), append([]float64{math.Inf(1)}, coords(l, 1, false)[1:]...)...)))
		add(l.String()+" -Inf in a multipolygon", "", geom.NewMultiPolygonFlat(l, append([]float64{math.Inf(-1)}, ring[1:]...), [][]int{{len(ring)}}))
		add(l.String()+" collection with an open ring", "",
			geom.NewGeometryCollection().MustPush(pt, geom.NewPolygonFlat(l, coords(l, 5, false), []int{5 * s})))
		add(l.String()+" nested collection with a NaN", "",
			geom.NewGeometryCollection().MustPush(geom.NewGeometryCollection().MustPush(geom.NewPointFlat(l, append([]float64{math.NaN()}, coords(l, 1, false)[1:]...)))))
	}
	add("empty collection", "GEOMETRYCOLLECTION", geom.NewGeometryCollection())
	add("collection of an empty collection", "GEOMETRYCOLLECTION", geom.NewGeometryCollection().MustPush(geom.NewGeometryCollection()))
	add("collection mixing XY and XYZ", "", geom.NewGeometryCollection().MustPush(
		geom.NewPointFlat(geom.XY, []float64{-78.6, 35.7}), geom.NewPointFlat(geom.XYZ, []float64{-78.6, 35.7, 1})))
	add("collection with a nil member", "", geom.NewGeometryCollection().MustPush(nil))
	add("point without a layout", "", geom.NewPointEmpty(geom.NoLayout))
	bowtie := geom.NewPolygonFlat(geom.XY, []float64{-78.6, 35.7, -78.59, 35.71, -78.59, 35.7, -78.6, 35.71, -78.6, 35.7}, []int{10})
	cases = append(cases, geometryCase{name: "collection with a bowtie", want: "GEOMETRYCOLLECTION", invalid: true,
		g: geom.NewGeometryCollection().MustPush(geom.NewPointFlat(geom.XY, []float64{-78.6, 35.7}), bowtie)})
	return cases
}

// setSRID sets g's SRID whatever its type.
func setSRID(g geom.T, srid int) geom.T {
	switch g := g.(type) {
	case *geom.Point:
		return g.SetSRID(srid)
	case *geom.LineString:
		return g.SetSRID(srid)
	case *geom.Polygon:
		return g.SetSRID(srid)
	case *geom.MultiPoint:
		return g.SetSRID(srid)
	case *geom.MultiLineString:
		return g.SetSRID(srid)
	case *geom.MultiPolygon:
		return g.SetSRID(srid)
	case *geom.GeometryCollection:
		return g.SetSRID(srid)
	}
	panic(fmt.Sprintf("setSRID: %T", g))
}

// TestEveryGeometryTypeAndLayout stages every geometry type in every layout,
// empty and not, GeometryCollections with members, empty and nested, and
// unparseable ones, on every path that writes features (each first load and
// a refresh): the poll applies, no geometry panics or aborts it, what PostGIS
// can parse is stored as its type (2D, EPSG:4326), what it cannot is stored
// without a geometry and counted invalid — or skipped under
// invalid_geometry: skip.
func TestEveryGeometryTypeAndLayout(t *testing.T) {
	t.Parallel()
	cases := geometryCases()
	var layer []ft.Feature
	broken := 0
	for i, c := range cases {
		layer = append(layer, feature(fmt.Sprintf("g%03d", i), setSRID(c.g, 4326), props("case", c.name)))
		if c.want == "" || c.invalid {
			broken++
		}
	}
	check := func(t *testing.T, b *bundle, res feeds.ApplyResult, skip bool) {
		t.Helper()
		if res.InvalidGeometries != broken {
			t.Errorf("apply: %+v, want %d invalid geometries", res, broken)
		}
		for i, c := range cases {
			var typ *string
			err := b.pool.QueryRow(b.ctx, `SELECT GeometryType(geom) || CASE WHEN ST_NDims(geom) = 2 AND ST_SRID(geom) = 4326 AND ST_IsValid(geom) THEN '' ELSE ' (not valid, 2D, 4326)' END
				FROM features WHERE feed = 'shapes' AND feature_id = $1`, fmt.Sprintf("g%03d", i)).Scan(&typ)
			switch {
			case skip && (c.want == "" || c.invalid):
				if err == nil {
					t.Errorf("%s: stored, want skipped", c.name)
				}
			case err != nil:
				t.Errorf("%s: %v", c.name, err)
			case c.want == "" && typ != nil:
				t.Errorf("%s: stored as %s, want without a geometry", c.name, *typ)
			case c.want != "" && (typ == nil || *typ != c.want):
				t.Errorf("%s: stored as %v, want %s", c.name, derefString(typ), c.want)
			}
		}
	}
	forFirstLoadPaths(t, func(t *testing.T, b *bundle) {
		feed := feedInfo("shapes")
		_, res := b.poll(t, feed, layer)
		check(t, b, res, false)
		// Again: nothing changed, whatever the type.
		if _, res := b.poll(t, feed, layer); res.Unchanged != len(layer) {
			t.Errorf("second poll: %+v, want all %d unchanged", res, len(layer))
		}
	})
	t.Run("refresh", func(t *testing.T) {
		t.Parallel()
		for _, skip := range []bool{false, true} {
			b := setup(t)
			feed := feedInfo("shapes")
			feed.Guard.SkipInvalid = skip
			b.poll(t, feed, []ft.Feature{feature("other", point(-78.6, 35.7, 4326), nil)})
			_, res := b.poll(t, feed, layer)
			check(t, b, res, skip)
		}
	})
}

func derefString(s *string) string {
	if s == nil {
		return "NULL"
	}
	return *s
}

// panicky is a geom.T whose every method panics (its embedded geometry is
// nil): no decoder makes one, but staging must not end the process if one
// comes.
type panicky struct{ geom.T }

// TestStagingSurvivesAPanickingGeometry: a panic while encoding a feature
// (the last resort behind encode's own handling) fails its page with an
// error naming the feature, stages nothing of it, and does not end the
// process.
func TestStagingSurvivesAPanickingGeometry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.begin(t, feedInfo("panicky"))
	_, err := b.store.StagePage(b.ctx, id, 0, reader(
		feature("ok", point(-78.6, 35.7, 4326), nil),
		ft.Feature{ID: "bad", Geometry: panicky{}},
	))
	if err == nil || !strings.Contains(err.Error(), "feature 1: cannot be staged") {
		t.Errorf("StagePage: %v, want an error naming feature 1", err)
	}
	if n := b.count(t, `SELECT count(*) FROM staged_features WHERE poll_id = $1`, id); n != 0 {
		t.Errorf("%d rows staged from the failed page", n)
	}
}
