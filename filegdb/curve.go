package filegdb

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Segment types of an extended shape's curves.
const (
	segCircularArc = 1
	segBezier      = 4
	segEllipticArc = 5
)

// Bits of a circular arc's flags, as Esri's extended shape buffer
// defines them.
const (
	arcIsEmpty   = 1 << 0 // an undefined arc
	arcCCW       = 1 << 3 // the arc turns counter-clockwise about its centre
	arcIsLine    = 1 << 5 // a degenerate arc: a straight segment
	arcIsPoint   = 1 << 6 // a degenerate arc: its ends are one point
	arcDefinedIP = 1 << 7 // the two doubles are a point on the arc, not its centre
)

// arcStepDegrees is the largest angle between two stroked vertices of an
// arc, GDAL's default (OGR_ARC_STEPSIZE), so that a densified arc has
// GDAL's vertices.
const arcStepDegrees = 4.0

// curve is one curved segment of a shape: from point start to start+1.
type curve struct {
	start  int
	typ    uint64
	x, y   float64
	bits   uint32
	coords []float64 // the arc's stroked inner vertices, flat, in the layout
	// collapse is set for an arc of no length, its ends and the point
	// given on it one point: GDAL draws nothing for it and keeps that
	// point once.
	collapse bool
}

// readCurves reads the n curve descriptions that follow a shape's points
// (npoints of them): each names the segment it replaces by its first
// point. Only circular arcs are read; a Bézier curve or an elliptic arc
// is refused by name (ErrCurves).
func (d *shapeDecoder) readCurves(n uint64, npoints int) ([]curve, error) {
	// A curve takes at least a start index, a type and two doubles.
	if n > uint64(npoints) || n > uint64(d.c.left()/18) {
		return nil, fmt.Errorf("claims %d curved segments for %d points in %d remaining bytes", n, npoints, d.c.left())
	}
	out := make([]curve, 0, n)
	for i := uint64(0); i < n; i++ {
		start, typ := d.c.varuint(), d.c.varuint()
		if d.c.err != nil {
			return nil, d.fail(fmt.Sprintf("curve %d", i+1))
		}
		if start+1 >= uint64(npoints) {
			return nil, fmt.Errorf("curve %d starts at point %d of %d: no segment follows it", i+1, start, npoints)
		}
		switch typ {
		case segCircularArc:
			c := curve{start: int(start), typ: typ, x: d.c.f64(), y: d.c.f64(), bits: d.c.u32()}
			if d.c.err != nil {
				return nil, d.fail(fmt.Sprintf("curve %d", i+1))
			}
			if math.IsNaN(c.x) || math.IsNaN(c.y) || math.IsInf(c.x, 0) || math.IsInf(c.y, 0) {
				return nil, fmt.Errorf("curve %d: its arc point is not a number", i+1)
			}
			out = append(out, c)
		case segBezier:
			return nil, fmt.Errorf("curve %d: a Bézier segment: %w", i+1, ErrCurves)
		case segEllipticArc:
			return nil, fmt.Errorf("curve %d: an elliptic arc: %w", i+1, ErrCurves)
		default:
			return nil, fmt.Errorf("curve %d: unknown segment type %d", i+1, typ)
		}
	}
	slices.SortFunc(out, func(a, b curve) int { return a.start - b.start })
	for i := 1; i < len(out); i++ {
		if out[i].start == out[i-1].start {
			return nil, fmt.Errorf("two curves replace the segment from point %d", out[i].start)
		}
	}
	return out, nil
}

// densify returns flat and ends with each curve's segment replaced by
// its stroked arc. A curve's segment must lie inside one part.
func (d *shapeDecoder) densify(flat []float64, ends []int, curves []curve) ([]float64, []int, error) {
	stride := d.layout.Stride()
	extra := 0
	for i := range curves {
		c := &curves[i]
		p, q := flat[c.start*stride:(c.start+1)*stride], flat[(c.start+1)*stride:(c.start+2)*stride]
		if k := slices.IndexFunc(ends, func(e int) bool { return e > c.start*stride }); k < 0 || ends[k] <= (c.start+1)*stride {
			return nil, nil, fmt.Errorf("curve from point %d crosses the end of its part", c.start)
		}
		if c.bits&arcDefinedIP != 0 && p[0] == q[0] && p[1] == q[1] && c.x == p[0] && c.y == p[1] {
			c.collapse = true
			continue
		}
		var err error
		if c.coords, err = strokeArc(p, q, c, stride); err != nil {
			return nil, nil, err
		}
		extra += len(c.coords)
		if extra > MaxPoints*stride {
			return nil, nil, fmt.Errorf("its curves densify to more than the %d points a geometry may have", MaxPoints)
		}
	}
	out := make([]float64, 0, len(flat)+extra)
	newEnds := make([]int, len(ends))
	ci := 0
	start := 0
	skip := false
	for k, e := range ends {
		partStart, collapsed := len(out), false
		for pt := start / stride; pt < e/stride; pt++ {
			// The end of a collapsed arc repeats its start: left out,
			// though a curve from it is still drawn.
			if !skip {
				out = append(out, flat[pt*stride:(pt+1)*stride]...)
			}
			skip = false
			if ci < len(curves) && curves[ci].start == pt {
				out = append(out, curves[ci].coords...)
				skip = curves[ci].collapse
				collapsed = collapsed || skip
				ci++
			}
		}
		if collapsed && len(out)-partStart < 2*stride {
			return nil, nil, fmt.Errorf("part %d is one point once its arcs of no length are left out", k+1)
		}
		newEnds[k] = len(out)
		start = e
	}
	return out, newEnds, nil
}

// errArc is a circular arc whose description draws no circle.
var errArc = errors.New("a circular arc that draws no circle")

// strokeArc is the inner vertices of the arc from p to q as GDAL strokes
// it (OGRGeometryFactory::curveToLineString with its defaults): the arc
// cut into equal angles of about arcStepDegrees, their number rounded,
// then at least 7 and odd (GDAL keeps room to hide the arc in the
// vertices' lowest bits), Z interpolated along the angle.
func strokeArc(p, q []float64, c *curve, stride int) ([]float64, error) {
	x0, y0, x2, y2 := p[0], p[1], q[0], q[1]
	if c.bits&arcDefinedIP == 0 {
		// GDAL reads the degenerate flags only of an arc given by its
		// centre, whose centre then means nothing: the segment stays
		// straight.
		if c.bits&(arcIsEmpty|arcIsLine|arcIsPoint) != 0 {
			return nil, nil
		}
		ccw := c.bits&arcCCW != 0
		sweep := 2 * math.Pi
		if x0 != x2 || y0 != y2 {
			sweep = angleBetween(math.Atan2(y0-c.y, x0-c.x), math.Atan2(y2-c.y, x2-c.x), ccw)
		} else if !ccw {
			sweep = -sweep
		}
		return strokeAbout(p, q, c.x, c.y, sweep, stride)
	}
	// An arc given by a point on it is drawn through that point whatever
	// its flags say; ArcGIS writes a straight "arc" with the chord's
	// midpoint, which GDAL keeps as a vertex.
	x1, y1 := c.x, c.y
	if x0 != x2 || y0 != y2 {
		return strokeThrough(p, x1, y1, q, stride)
	}
	if x1 == x0 && y1 == y0 {
		return nil, errArc
	}
	// A full circle, the point given across it: GDAL draws it as two
	// half circles, p to that point and back, each through the point its
	// own formula picks on the circle (not a quarter of the way round),
	// Z held at p's until the second half.
	cx, cy := (x0+x1)/2, (y0+y1)/2
	mid := pointAt(x1, y1, p, p, 0, stride)
	first, err := strokeThrough(p, cx-(y1-cy), cy+(x0-cx), mid, stride)
	if err != nil {
		return nil, err
	}
	second, err := strokeThrough(mid, cx+(y1-cy), cy-(x0-cx), q, stride)
	if err != nil {
		return nil, err
	}
	out := append(first, mid...)
	return append(out, second...), nil
}

// strokeThrough is the inner vertices of the arc from p through (x1, y1)
// to q, whose ends differ.
func strokeThrough(p []float64, x1, y1 float64, q []float64, stride int) ([]float64, error) {
	x0, y0, x2, y2 := p[0], p[1], q[0], q[1]
	// The circumcentre, computed on differences scaled to one so that
	// large projected coordinates lose no precision.
	dx01, dy01, dx12, dy12 := x1-x0, y1-y0, x2-x1, y2-y1
	scale := max(math.Abs(dx01), math.Abs(dy01), math.Abs(dx12), math.Abs(dy12))
	if scale == 0 {
		return nil, nil
	}
	ax, ay, bx, by := dx01/scale, dy01/scale, (x2-x0)/scale, (y2-y0)/scale
	det := 2 * (ax*by - ay*bx)
	if math.Abs(det) < 1e-8 {
		// The three points are in a line: GDAL keeps the middle one.
		return pointAt(x1, y1, p, q, 0.5, stride), nil
	}
	a2, b2 := ax*ax+ay*ay, bx*bx+by*by
	cx := x0 + scale*(by*a2-ay*b2)/det
	cy := y0 + scale*(ax*b2-bx*a2)/det
	// Counter-clockwise when the middle point is left of the chord.
	ccw := ax*by-ay*bx > 0
	sweep := angleBetween(math.Atan2(y0-cy, x0-cx), math.Atan2(y2-cy, x2-cx), ccw)
	return strokeAbout(p, q, cx, cy, sweep, stride)
}

// strokeAbout is the inner vertices of the arc from p turning sweep
// radians about (cx, cy) to q.
func strokeAbout(p, q []float64, cx, cy, sweep float64, stride int) ([]float64, error) {
	x0, y0 := p[0], p[1]
	r := math.Hypot(x0-cx, y0-cy)
	if r == 0 || math.IsNaN(r) || math.IsInf(r, 0) {
		return nil, errArc
	}
	n := int(math.Abs(sweep)/(arcStepDegrees*math.Pi/180) + 0.5)
	if n < 7 {
		n = 7
	} else {
		n = 7 + 2*((n-7+1)/2)
	}
	a0 := math.Atan2(y0-cy, x0-cx)
	step := sweep / float64(n)
	out := make([]float64, 0, (n-1)*stride)
	for i := 1; i < n; i++ {
		a := a0 + float64(i)*step
		out = append(out, pointAt(cx+r*math.Cos(a), cy+r*math.Sin(a), p, q, float64(i)/float64(n), stride)...)
	}
	return out, nil
}

// pointAt is the vertex (x, y) at fraction f of the way from p to q,
// its Z interpolated between theirs.
func pointAt(x, y float64, p, q []float64, f float64, stride int) []float64 {
	if stride == 2 {
		return []float64{x, y}
	}
	return []float64{x, y, p[2] + f*(q[2]-p[2])}
}

// angleBetween is the signed angle turning from a0 to a2, positive
// (0, 2π] counter-clockwise, negative [-2π, 0) clockwise.
func angleBetween(a0, a2 float64, ccw bool) float64 {
	d := math.Mod(a2-a0, 2*math.Pi)
	if ccw {
		if d <= 0 {
			d += 2 * math.Pi
		}
		return d
	}
	if d >= 0 {
		d -= 2 * math.Pi
	}
	return d
}
