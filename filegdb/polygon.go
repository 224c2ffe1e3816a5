package filegdb

import "github.com/twpayne/go-geom"

// ring is one ring of a polygon shape, as a range of its flat coordinates.
type ring struct{ start, end int }

// assemblePolygons groups a polygon shape's rings as GDAL does: clockwise
// rings (the shells, as Esri writes them) each start a polygon, and a
// counter-clockwise ring is a hole of the first shell that contains it;
// a hole inside no shell is a polygon of its own, so that nothing is
// lost. The result is always a MultiPolygon, GDAL's type for the layer.
func assemblePolygons(layout geom.Layout, flat []float64, ends []int) *geom.MultiPolygon {
	stride := layout.Stride()
	var shells, holes []ring
	start := 0
	for _, e := range ends {
		r := ring{start: start, end: e}
		if signedArea(flat[r.start:r.end], stride) <= 0 {
			shells = append(shells, r)
		} else {
			holes = append(holes, r)
		}
		start = e
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
	coords := make([]float64, 0, len(flat))
	endss := make([][]int, 0, len(members))
	for _, rs := range members {
		var e []int
		for _, r := range rs {
			coords = append(coords, flat[r.start:r.end]...)
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

// setSRID gives g its SRID.
func setSRID(g geom.T, srid int) {
	switch g := g.(type) {
	case *geom.Point:
		g.SetSRID(srid)
	case *geom.MultiPoint:
		g.SetSRID(srid)
	case *geom.MultiLineString:
		g.SetSRID(srid)
	case *geom.MultiPolygon:
		g.SetSRID(srid)
	}
}
