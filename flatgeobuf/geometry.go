package flatgeobuf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/ingestd/ingestd/feature"
	"github.com/twpayne/go-geom"
)

// Geometry field indexes (feature.fbs).
const (
	gEnds = iota
	gXY
	gZ
	gM
	gT
	gTM
	gType
	gParts
)

// maxDepth bounds the nesting of geometry collections.
const maxDepth = 32

// geomDecoder decodes Geometry tables into go-geom with the header's
// dimensions and the layer's SRID.
type geomDecoder struct {
	hasZ, hasM bool
	srid       int
	// budget is the bytes of the feature the geometry may still read: a
	// sound feature refers to each of its vectors once, but a hostile one
	// may point many parts at the same table or vector, which would make
	// its decoding exponential in time and memory.
	budget *int
}

// spend takes n bytes from the budget.
func (d geomDecoder) spend(n int) error {
	if *d.budget -= n; *d.budget < 0 {
		return errors.New("geometry refers to more data than the feature holds (parts shared or nested in a loop)")
	}
	return nil
}

func (d geomDecoder) layout() geom.Layout {
	switch {
	case d.hasZ && d.hasM:
		return geom.XYZM
	case d.hasZ:
		return geom.XYZ
	case d.hasM:
		return geom.XYM
	}
	return geom.XY
}

// decode decodes the geometry t of type typ (the header's; Unknown means
// the geometry's own type field says it).
func (d geomDecoder) decode(t table, typ byte, depth int) (geom.T, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("geometry collections nested deeper than %d", maxDepth)
	}
	if err := d.spend(4); err != nil {
		return nil, err
	}
	if typ == geomUnknown {
		typ = t.uint8(gType, 0)
	}
	layout := d.layout()
	var g geom.T
	var err error
	switch typ {
	case geomMultiPolygon, geomCollection:
		g, err = d.collection(t, typ, depth)
	case geomPoint, geomLineString, geomPolygon, geomMultiPoint, geomMultiLineString:
		flat, ends, ferr := d.flat(t)
		if ferr != nil {
			return nil, ferr
		}
		g, err = simple(typ, layout, flat, ends)
	default:
		return nil, fmt.Errorf("geometry type %d is not supported", typ)
	}
	if err != nil {
		return nil, err
	}
	return geom.SetSRID(g, d.srid)
}

// simple builds a geometry of one flat coordinate array.
func simple(typ byte, layout geom.Layout, flat []float64, ends []int) (geom.T, error) {
	switch typ {
	case geomPoint:
		switch len(flat) {
		case 0:
			return geom.NewPointEmpty(layout), nil
		case layout.Stride():
			return geom.NewPointFlat(layout, flat), nil
		}
		return nil, fmt.Errorf("point of %d coordinates", len(flat)/layout.Stride())
	case geomLineString:
		return geom.NewLineStringFlat(layout, flat), nil
	case geomMultiPoint:
		return geom.NewMultiPointFlat(layout, flat), nil
	case geomPolygon:
		return geom.NewPolygonFlat(layout, flat, ends), nil
	}
	return geom.NewMultiLineStringFlat(layout, flat, ends), nil
}

// collection decodes a MultiPolygon's polygons or a collection's members
// from the parts vector.
func (d geomDecoder) collection(t table, typ byte, depth int) (geom.T, error) {
	start, n := t.vector(gParts, 4)
	if typ == geomMultiPolygon {
		mp := geom.NewMultiPolygon(d.layout())
		if n == 0 && t.field(gXY) != 0 {
			// One polygon written without parts.
			flat, ends, err := d.flat(t)
			if err != nil {
				return nil, err
			}
			return mp, mp.Push(geom.NewPolygonFlat(d.layout(), flat, ends))
		}
		for i := range n {
			p, err := d.decode(t.element(start, i), geomPolygon, depth+1)
			if err != nil {
				return nil, err
			}
			if err := mp.Push(p.(*geom.Polygon)); err != nil {
				return nil, err
			}
		}
		return mp, nil
	}
	gc := geom.NewGeometryCollection()
	for i := range n {
		m, err := d.decode(t.element(start, i), geomUnknown, depth+1)
		if err != nil {
			return nil, err
		}
		if err := gc.Push(m); err != nil {
			return nil, err
		}
	}
	feature.SetCollectionLayout(gc)
	return gc, nil
}

// flat reads the geometry's coordinates (xy, and z and m as the header
// says) into one flat array, and its part ends in flat units.
func (d geomDecoder) flat(t table) ([]float64, []int, error) {
	xs, nxy := t.vector(gXY, 8)
	if nxy%2 != 0 {
		return nil, nil, fmt.Errorf("xy holds %d values, not pairs", nxy)
	}
	points := nxy / 2
	zs, nz := t.vector(gZ, 8)
	ms, nm := t.vector(gM, 8)
	if d.hasZ && nz != points || d.hasM && nm != points {
		return nil, nil, fmt.Errorf("%d points with %d z and %d m values", points, nz, nm)
	}
	_, ne := t.vector(gEnds, 4)
	if err := d.spend(8*(nxy+nz+nm) + 4*ne); err != nil {
		return nil, nil, err
	}
	stride := d.layout().Stride()
	flat := make([]float64, 0, points*stride)
	b := t.Bytes
	f64 := func(at int) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b[at:])) }
	for i := range points {
		flat = append(flat, f64(xs+16*i), f64(xs+16*i+8))
		if d.hasZ {
			flat = append(flat, f64(zs+8*i))
		}
		if d.hasM {
			flat = append(flat, f64(ms+8*i))
		}
	}
	es, _ := t.vector(gEnds, 4)
	if ne == 0 {
		if points == 0 {
			return flat, nil, nil
		}
		return flat, []int{len(flat)}, nil
	}
	ends := make([]int, ne)
	last := 0
	for i := range ne {
		e := int(binary.LittleEndian.Uint32(b[es+4*i:]))
		if e < last || e > points {
			return nil, nil, fmt.Errorf("part end %d out of order or past the %d points", e, points)
		}
		ends[i], last = e*stride, e
	}
	if last != points {
		return nil, nil, errors.New("the last part ends before the last point")
	}
	return flat, ends, nil
}
