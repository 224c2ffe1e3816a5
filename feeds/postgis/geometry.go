package postgis

import (
	"fmt"
	"math"

	"github.com/twpayne/go-geom"
)

// brokenGeometry says why PostgreSQL would refuse to parse g at all, or ""
// when it would not. Such a geometry would abort the statement that applies
// the whole snapshot, so it is caught while staging: one bad feature must not
// cost the layer. (Topological validity — self-intersections and the like —
// is PostGIS's to judge, in Apply.)
func brokenGeometry(g geom.T) string {
	flat := g.FlatCoords()
	for _, v := range flat {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "a coordinate is not a finite number"
		}
	}
	stride := g.Stride()
	switch g := g.(type) {
	case *geom.LineString:
		if g.NumCoords() < 2 {
			return "a line string needs at least 2 points"
		}
	case *geom.MultiLineString:
		for i := range g.NumLineStrings() {
			if g.LineString(i).NumCoords() < 2 {
				return "a line string needs at least 2 points"
			}
		}
	case *geom.Polygon:
		return brokenRings(g.FlatCoords(), g.Ends(), stride)
	case *geom.MultiPolygon:
		start := 0
		for _, ends := range g.Endss() {
			if reason := brokenRings(g.FlatCoords()[start:], shift(ends, start), stride); reason != "" {
				return reason
			}
			if len(ends) > 0 {
				start = ends[len(ends)-1]
			}
		}
	}
	return ""
}

// brokenRings checks the rings of one polygon: flat holds its coordinates
// from its first ring on, ends the offsets where each ring ends.
func brokenRings(flat []float64, ends []int, stride int) string {
	start := 0
	for i, end := range ends {
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
