package shapefile

import "github.com/twpayne/go-geom"

// ring is one ring of a polygon record, as a range of its flat coordinates.
type ring struct{ start, end int }

// assemblePolygons groups a polygon record's rings as GDAL does for a
// well-formed file: clockwise rings are shells, counter-clockwise rings
// holes of the first shell that contains them; a hole inside no shell is a
// shell of its own. One shell is a Polygon, several a MultiPolygon.
func assemblePolygons(layout geom.Layout, flat []float64, starts, ends []int) geom.T {
	stride := layout.Stride()
	var shells []ring
	var holes []ring
	for i := range starts {
		r := ring{start: starts[i] * stride, end: ends[i]}
		if signedArea(flat[r.start:r.end], stride) <= 0 {
			shells = append(shells, r) // clockwise (or degenerate)
		} else {
			holes = append(holes, r)
		}
	}
	members := make([][]ring, len(shells))
	for i, s := range shells {
		members[i] = []ring{s}
	}
	for _, h := range holes {
		placed := false
		for i, s := range shells {
			if inRing(flat[h.start], flat[h.start+1], flat[s.start:s.end], stride) {
				members[i] = append(members[i], h)
				placed = true
				break
			}
		}
		if !placed {
			members = append(members, []ring{h})
		}
	}
	polygon := func(rs []ring) (coords []float64, ends []int) {
		for _, r := range rs {
			coords = append(coords, flat[r.start:r.end]...)
			ends = append(ends, len(coords))
		}
		return coords, ends
	}
	if len(members) == 1 {
		coords, ends := polygon(members[0])
		return geom.NewPolygonFlat(layout, coords, ends)
	}
	var coords []float64
	var endss [][]int
	for _, rs := range members {
		c, e := polygon(rs)
		for i := range e {
			e[i] += len(coords)
		}
		coords = append(coords, c...)
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

// setSRID gives g its SRID.
func setSRID(g geom.T, srid int) {
	switch g := g.(type) {
	case *geom.Point:
		g.SetSRID(srid)
	case *geom.MultiPoint:
		g.SetSRID(srid)
	case *geom.LineString:
		g.SetSRID(srid)
	case *geom.MultiLineString:
		g.SetSRID(srid)
	case *geom.Polygon:
		g.SetSRID(srid)
	case *geom.MultiPolygon:
		g.SetSRID(srid)
	}
}
