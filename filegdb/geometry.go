package filegdb

import (
	"errors"
	"fmt"

	"github.com/twpayne/go-geom"
)

// MaxPoints bounds the points of one geometry: a blob claiming more is
// refused before anything is allocated for it. A row is bounded by
// limits.feature_bytes (16 MiB by default) and a point takes at least two
// bytes, so no geometry a row can hold is refused by it.
const MaxPoints = 1 << 24

// Shape types of a geometry blob (the Shapefile's, and Esri's extended
// ones whose high bits carry flags).
const (
	shpNull         = 0
	shpPoint        = 1
	shpPolyline     = 3
	shpPolygon      = 5
	shpMultiPoint   = 8
	shpPointZ       = 9
	shpPolylineZ    = 10
	shpPointZM      = 11
	shpPolylineZM   = 13
	shpPolygonZM    = 15
	shpMultiPointZM = 18
	shpPolygonZ     = 19
	shpMultiPointZ  = 20
	shpPointM       = 21
	shpPolylineM    = 23
	shpPolygonM     = 25
	shpMultiPointM  = 28
	shpMultiPatchM  = 31
	shpMultiPatch   = 32
	shpGeneralLine  = 50
	shpGeneralPoly  = 51
	shpGeneralPoint = 52
	shpGeneralMulti = 53
	shpGeneralPatch = 54

	flagZ      = 1 << 31
	flagM      = 1 << 30
	flagCurves = 1 << 29
)

// ErrCurves is wrapped by the error for a geometry with a Bézier curve
// or an elliptic arc, which ingestd refuses by name rather than store an
// approximation that differs from GDAL's. Circular arcs are densified as
// GDAL densifies them.
var ErrCurves = errors.New("curved segments that ingestd does not densify (Bézier curves, elliptic arcs); export the layer with densified curves")

// ErrMultiPatch is wrapped by the error for a multipatch (3-D surface)
// geometry.
var ErrMultiPatch = errors.New("a multipatch (3-D surface), which ingestd does not read")

// decodeGeometry reads a geometry blob into go-geom: points as Point,
// multipoints as MultiPoint, polylines as MultiLineString and polygons as
// MultiPolygon, the types GDAL reads them as. Z is kept, M dropped (as the
// Shapefile reader drops it). A shape with no points is nil.
func decodeGeometry(b []byte, g *geomField, srid int) (geom.T, error) {
	if g == nil {
		return nil, errors.New("a geometry in a table without a geometry field")
	}
	c := &cursor{b: b}
	typ := c.varuint()
	if c.err != nil {
		return nil, fmt.Errorf("geometry type: %w", c.err)
	}
	base := typ & 0xFF
	hasZ, hasM := false, false
	switch base {
	case shpPointZ, shpPolylineZ, shpPolygonZ, shpMultiPointZ:
		hasZ = true
	case shpPointZM, shpPolylineZM, shpPolygonZM, shpMultiPointZM:
		hasZ, hasM = true, true
	case shpPointM, shpPolylineM, shpPolygonM, shpMultiPointM:
		hasM = true
	case shpGeneralLine, shpGeneralPoly, shpGeneralPoint, shpGeneralMulti:
		hasZ, hasM = typ&flagZ != 0, typ&flagM != 0
		if typ&flagCurves != 0 && base != shpGeneralLine && base != shpGeneralPoly {
			return nil, fmt.Errorf("shape type %#x: curves on a point", typ)
		}
	case shpMultiPatch, shpMultiPatchM, shpGeneralPatch:
		return nil, ErrMultiPatch
	}
	if hasZ && g.zScale == 0 {
		return nil, fmt.Errorf("shape type %#x has Z, the geometry field declares no Z scale", typ)
	}
	layout := geom.XY
	if hasZ {
		layout = geom.XYZ
	}
	d := &shapeDecoder{c: c, g: g, hasZ: hasZ, hasM: hasM, layout: layout}
	var out geom.T
	var err error
	switch base {
	case shpNull:
		return nil, nil
	case shpPoint, shpPointZ, shpPointZM, shpPointM, shpGeneralPoint:
		out, err = d.point()
	case shpMultiPoint, shpMultiPointZ, shpMultiPointZM, shpMultiPointM, shpGeneralMulti:
		out, err = d.multiPoint()
	case shpPolyline, shpPolylineZ, shpPolylineZM, shpPolylineM, shpGeneralLine:
		out, err = d.parts(false, typ&flagCurves != 0 && base == shpGeneralLine)
	case shpPolygon, shpPolygonZ, shpPolygonZM, shpPolygonM, shpGeneralPoly:
		out, err = d.parts(true, typ&flagCurves != 0 && base == shpGeneralPoly)
	default:
		return nil, fmt.Errorf("unknown shape type %#x", typ)
	}
	if err != nil {
		return nil, err
	}
	if out != nil {
		setSRID(out, srid)
	}
	return out, nil
}

type shapeDecoder struct {
	c          *cursor
	g          *geomField
	hasZ, hasM bool
	layout     geom.Layout
}

func (d *shapeDecoder) fail(what string) error {
	if d.c.err != nil {
		return fmt.Errorf("%s: %w", what, d.c.err)
	}
	return nil
}

func (d *shapeDecoder) point() (geom.T, error) {
	vx, vy := d.c.varuint(), d.c.varuint()
	var vz uint64
	if d.hasZ {
		vz = d.c.varuint()
	}
	if d.hasM {
		d.c.varuint()
	}
	if err := d.fail("point"); err != nil {
		return nil, err
	}
	if vx == 0 && vy == 0 {
		return nil, nil // POINT EMPTY
	}
	coords := []float64{float64(vx-1)/d.g.xyScale + d.g.xOrig, float64(vy-1)/d.g.xyScale + d.g.yOrig}
	if d.hasZ {
		coords = append(coords, float64(vz-1)/d.g.zScale+d.g.zOrig)
	}
	return geom.NewPointFlat(d.layout, coords), nil
}

// npoints reads a point count, bounded by MaxPoints and by the bytes
// left (two at least per point).
func (d *shapeDecoder) npoints() (int, error) {
	v := d.c.varuint()
	if d.c.err != nil {
		return 0, fmt.Errorf("point count: %w", d.c.err)
	}
	if v > MaxPoints {
		return 0, fmt.Errorf("claims %d points, more than the %d a geometry may have", v, MaxPoints)
	}
	if v > uint64(d.c.left()/2) {
		return 0, fmt.Errorf("claims %d points, more than its %d remaining bytes can hold", v, d.c.left())
	}
	return int(v), nil
}

// coords reads n points' XY deltas, then their Z deltas, then skips their
// M, into flat coordinates of d.layout.
func (d *shapeDecoder) coords(n int) ([]float64, error) {
	stride := d.layout.Stride()
	flat := make([]float64, n*stride)
	var x, y int64
	for i := 0; i < n; i++ {
		x += d.c.varint()
		y += d.c.varint()
		flat[i*stride] = float64(x)/d.g.xyScale + d.g.xOrig
		flat[i*stride+1] = float64(y)/d.g.xyScale + d.g.yOrig
	}
	if err := d.fail("coordinates"); err != nil {
		return nil, err
	}
	if d.hasZ {
		var z int64
		for i := 0; i < n; i++ {
			z += d.c.varint()
			flat[i*stride+2] = float64(z)/d.g.zScale + d.g.zOrig
		}
		if err := d.fail("Z values"); err != nil {
			return nil, err
		}
	}
	if d.hasM {
		// A single 0x42 byte stands for a whole array of missing M.
		if d.c.left() > 0 && d.c.b[d.c.pos] == 0x42 {
			d.c.pos++
		} else {
			for i := 0; i < n; i++ {
				d.c.varint()
			}
		}
		if err := d.fail("M values"); err != nil {
			return nil, err
		}
	}
	return flat, nil
}

func (d *shapeDecoder) bbox() {
	for range 4 {
		d.c.varuint()
	}
}

func (d *shapeDecoder) multiPoint() (geom.T, error) {
	n, err := d.npoints()
	if err != nil || n == 0 {
		return nil, err
	}
	d.bbox()
	if err := d.fail("extent"); err != nil {
		return nil, err
	}
	flat, err := d.coords(n)
	if err != nil {
		return nil, err
	}
	return geom.NewMultiPointFlat(d.layout, flat), nil
}

// parts reads a polyline or a polygon.
func (d *shapeDecoder) parts(polygon, curves bool) (geom.T, error) {
	n, err := d.npoints()
	if err != nil || n == 0 {
		return nil, err
	}
	nparts := d.c.varuint()
	var ncurves uint64
	if curves {
		ncurves = d.c.varuint()
	}
	d.bbox()
	if err := d.fail("header"); err != nil {
		return nil, err
	}
	if nparts == 0 || nparts > uint64(n) {
		return nil, fmt.Errorf("%d parts for %d points", nparts, n)
	}
	ends := make([]int, nparts)
	stride := d.layout.Stride()
	total := 0
	for i := range ends[:nparts-1] {
		k := d.c.varuint()
		if d.c.err != nil {
			return nil, d.fail("part sizes")
		}
		if k > uint64(n-total) {
			return nil, fmt.Errorf("part %d claims %d points, more than the %d left of %d", i+1, k, n-total, n)
		}
		total += int(k)
		ends[i] = total * stride
	}
	ends[nparts-1] = n * stride
	flat, err := d.coords(n)
	if err != nil {
		return nil, err
	}
	if ncurves > 0 {
		curves, err := d.readCurves(ncurves, n)
		if err != nil {
			return nil, err
		}
		if flat, ends, err = d.densify(flat, ends, curves); err != nil {
			return nil, err
		}
	}
	if !polygon {
		return geom.NewMultiLineStringFlat(d.layout, flat, ends), nil
	}
	for i, e := range ends {
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		if e-start < 4*stride {
			return nil, fmt.Errorf("ring %d has %d points, fewer than the 4 of a closed ring", i+1, (e-start)/stride)
		}
	}
	return assemblePolygons(d.layout, flat, ends), nil
}
