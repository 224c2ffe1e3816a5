package postgis

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/ewkb"
)

// encodeGeometry returns g as little-endian EWKB and, when PostgreSQL would
// refuse to parse it, why (broken; the EWKB is then for hashing only). b is
// nil when g cannot be encoded at all. Whatever the geometry — any type,
// layout, nesting or emptiness a decoder can produce — it returns and never
// panics: go-geom panics on some methods of some types (FlatCoords of a
// GeometryCollection), and one feature must not cost the process.
func encodeGeometry(g geom.T) (b []byte, broken string) {
	defer func() {
		if r := recover(); r != nil {
			broken = "the geometry cannot be encoded: " + boundText(fmt.Sprint(r), maxQuotedLen)
		}
	}()
	b, err := ewkb.Marshal(g, binary.LittleEndian)
	if err != nil {
		return nil, "the geometry cannot be encoded: " + boundText(err.Error(), maxQuotedLen)
	}
	return b, brokenGeometry(g)
}

// brokenGeometry says why PostgreSQL would refuse to parse g at all, or ""
// when it would not. Such a geometry would abort the statement that applies
// the whole snapshot, so it is caught while staging: one bad feature must not
// cost the layer. (Topological validity — self-intersections and the like —
// is PostGIS's to judge, in Apply; so is the coordinate range.)
//
// Empty geometries of every type are fine (PostGIS stores POINT EMPTY,
// LINESTRING EMPTY, GEOMETRYCOLLECTION EMPTY …); a GeometryCollection is
// checked member by member, nested ones included.
func brokenGeometry(g geom.T) string {
	switch g := g.(type) {
	case *geom.GeometryCollection:
		return brokenCollection(g)
	case *geom.Point, *geom.LineString, *geom.Polygon, *geom.MultiPoint, *geom.MultiLineString, *geom.MultiPolygon:
	default:
		return fmt.Sprintf("unsupported geometry type %T", g)
	}
	switch g.Layout() {
	case geom.XY, geom.XYZ, geom.XYM, geom.XYZM:
	default:
		return fmt.Sprintf("unsupported coordinate layout %v", g.Layout())
	}
	stride := g.Stride()
	flat := g.FlatCoords()
	if len(flat)%stride != 0 {
		return "the coordinates do not fill whole points"
	}
	for _, v := range flat {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "a coordinate is not a finite number"
		}
	}
	switch g := g.(type) {
	case *geom.LineString:
		if n := g.NumCoords(); n == 1 {
			return "a line string needs at least 2 points"
		}
	case *geom.MultiLineString:
		for i := range g.NumLineStrings() {
			if g.LineString(i).NumCoords() == 1 {
				return "a line string needs at least 2 points"
			}
		}
	case *geom.Polygon:
		return brokenRings(flat, g.Ends(), stride)
	case *geom.MultiPolygon:
		start := 0
		for _, ends := range g.Endss() {
			if reason := brokenRings(flat[start:], shift(ends, start), stride); reason != "" {
				return reason
			}
			if len(ends) > 0 {
				start = ends[len(ends)-1]
			}
		}
	}
	return ""
}

// brokenCollection checks a GeometryCollection's members, recursively.
// PostGIS refuses a collection whose members' dimensions differ from its
// own ("Dimensions mismatch in lwcollection"): the EWKB writes the
// collection with the layout covering all members, and each member with its
// own. An empty nested collection has no layout and is written 2D.
func brokenCollection(g *geom.GeometryCollection) string {
	layout := effectiveLayout(g)
	for i, m := range g.Geoms() {
		if m == nil {
			return fmt.Sprintf("member %d of the geometry collection is null", i)
		}
		if effectiveLayout(m) != layout {
			return fmt.Sprintf("member %d of the geometry collection has layout %v, the collection %v",
				i, effectiveLayout(m), layout)
		}
		if reason := brokenGeometry(m); reason != "" {
			return fmt.Sprintf("member %d of the geometry collection: %s", i, reason)
		}
	}
	return ""
}

// effectiveLayout is the layout g's EWKB is written with: an empty
// collection without a layout is written as 2D.
func effectiveLayout(g geom.T) geom.Layout {
	if l := g.Layout(); l != geom.NoLayout {
		return l
	}
	return geom.XY
}

// brokenRings checks the rings of one polygon: flat holds its coordinates
// from its first ring on, ends the offsets where each ring ends.
func brokenRings(flat []float64, ends []int, stride int) string {
	start := 0
	for i, end := range ends {
		if end < start || end > len(flat) {
			return fmt.Sprintf("ring %d's end is out of range", i)
		}
		n := (end - start) / stride
		if n < 4 {
			return fmt.Sprintf("ring %d has %d points; a ring needs at least 4", i, n)
		}
		for k := range 2 {
			if flat[start+k] != flat[end-stride+k] {
				return fmt.Sprintf("ring %d does not close", i)
			}
		}
		start = end
	}
	return ""
}

func shift(ends []int, by int) []int {
	out := make([]int, len(ends))
	for i, e := range ends {
		out[i] = e - by
	}
	return out
}
