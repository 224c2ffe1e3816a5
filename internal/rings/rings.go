// Package rings groups the rings of an Esri polygon shape (a Shapefile
// record, a File Geodatabase blob) into polygons as GDAL does: the
// formats store a polygon's rings as one flat list, shells clockwise and
// holes counter-clockwise, without saying which hole belongs to which
// shell.
package rings

import "github.com/twpayne/go-geom"

// Ring is one ring of a shape, as the range [Start, End) of its flat
// coordinates.
type Ring struct{ Start, End int }

// Group groups rings as GDAL does for a well-formed file: clockwise
// rings (or degenerate ones) are shells, each starting a polygon; a
// counter-clockwise ring is a hole of the first shell that contains its
// first vertex; a hole inside no shell is a polygon of its own, so that
// nothing is lost. Each polygon lists its shell first.
func Group(flat []float64, stride int, rs []Ring) [][]Ring {
	var shells, holes []Ring
	for _, r := range rs {
		if signedArea(flat[r.Start:r.End], stride) <= 0 {
			shells = append(shells, r)
		} else {
			holes = append(holes, r)
		}
	}
	members := make([][]Ring, len(shells))
	for i, s := range shells {
		members[i] = []Ring{s}
	}
	for _, h := range holes {
		placed := false
		for i, s := range shells {
			if inRing(flat[h.Start], flat[h.Start+1], flat[s.Start:s.End], stride) {
				members[i] = append(members[i], h)
				placed = true
				break
			}
		}
		if !placed {
			members = append(members, []Ring{h})
		}
	}
	return members
}

// Polygon is the polygon of rs (its shell first) over flat.
func Polygon(layout geom.Layout, flat []float64, rs []Ring) *geom.Polygon {
	var coords []float64
	var ends []int
	for _, r := range rs {
		coords = append(coords, flat[r.Start:r.End]...)
		ends = append(ends, len(coords))
	}
	return geom.NewPolygonFlat(layout, coords, ends)
}

// MultiPolygon is the multipolygon of the groups over flat, in their
// order.
func MultiPolygon(layout geom.Layout, flat []float64, groups [][]Ring) *geom.MultiPolygon {
	coords := make([]float64, 0, len(flat))
	endss := make([][]int, 0, len(groups))
	for _, rs := range groups {
		var e []int
		for _, r := range rs {
			coords = append(coords, flat[r.Start:r.End]...)
			e = append(e, len(coords))
		}
		endss = append(endss, e)
	}
	return geom.NewMultiPolygonFlat(layout, coords, endss)
}

// signedArea is twice the ring's signed area: negative when clockwise.
func signedArea(flat []float64, stride int) float64 {
	var a float64
	n := len(flat) / stride
	for i := 0; i < n; i++ {
		j := (i + 1) % n
		a += flat[i*stride]*flat[j*stride+1] - flat[j*stride]*flat[i*stride+1]
	}
	return a
}

// inRing reports whether (x, y) is inside the ring (even-odd rule).
func inRing(x, y float64, flat []float64, stride int) bool {
	in := false
	n := len(flat) / stride
	for i, j := 0, n-1; i < n; j, i = i, i+1 {
		xi, yi := flat[i*stride], flat[i*stride+1]
		xj, yj := flat[j*stride], flat[j*stride+1]
		if (yi > y) != (yj > y) && x < (xj-xi)*(y-yi)/(yj-yi)+xi {
			in = !in
		}
	}
	return in
}
