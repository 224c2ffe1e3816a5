package gpkg

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/wkb"
	"github.com/twpayne/go-geom/encoding/wkbcommon"
)

// Blob is what the header of a GeoPackage geometry blob (GeoPackage 1.3,
// §2.1.3, "GeoPackageBinary") says about the geometry that follows it.
type Blob struct {
	// SRSID is the header's srs_id.
	SRSID int32
	// Empty is the header's empty-geometry flag.
	Empty bool
	// Envelope is the header's envelope, [minx maxx miny maxy …] as
	// written (0, 4, 6 or 8 values).
	Envelope []float64
}

// envelopeValues is the number of doubles of each envelope indicator
// (bits 1–3 of the flags); 5–7 are invalid.
var envelopeValues = [...]int{0, 4, 6, 6, 8}

// maxWKBDepth bounds the nesting of geometry collections, so that a
// hostile blob costs an error and not the goroutine's stack.
const maxWKBDepth = 32

// DecodeGeometry decodes a GeoPackage geometry blob: its header (magic
// "GP", version 0, flags, srs_id, envelope) and the ISO WKB geometry after
// it, into go-geom. A header that lies (an envelope longer than the blob,
// an envelope indicator of 5–7, the empty flag over a geometry with
// coordinates) and a WKB whose counts promise more than the blob holds
// are errors; the WKB is walked before go-geom decodes it, so no count in
// it can make an allocation larger than the blob. Extended geometry types
// (the X flag) and curves are refused by name. The geometry's SRID is
// left 0: the layer's SRS gives it.
func DecodeGeometry(b []byte) (geom.T, Blob, error) {
	var h Blob
	if len(b) < 8 {
		return nil, h, fmt.Errorf("geometry blob of %d bytes is shorter than its 8-byte header", len(b))
	}
	if b[0] != 'G' || b[1] != 'P' {
		return nil, h, fmt.Errorf("geometry blob does not start with the GeoPackage magic \"GP\" (% x)", b[:2])
	}
	if b[2] != 0 {
		return nil, h, fmt.Errorf("geometry blob of GeoPackageBinary version %d (only version 0 exists)", b[2])
	}
	flags := b[3]
	if flags&0x20 != 0 {
		return nil, h, errors.New("geometry blob of an extended geometry type (ExtendedGeoPackageBinary) is not supported")
	}
	var order binary.ByteOrder = binary.BigEndian
	if flags&1 != 0 {
		order = binary.LittleEndian
	}
	h.Empty = flags&0x10 != 0
	h.SRSID = int32(order.Uint32(b[4:8]))
	code := int(flags>>1) & 7
	if code >= len(envelopeValues) {
		return nil, h, fmt.Errorf("geometry blob header has envelope indicator %d (valid: 0–4)", code)
	}
	n := envelopeValues[code]
	body := b[8:]
	if len(body) < 8*n {
		return nil, h, fmt.Errorf("geometry blob header declares a %d-byte envelope but %d bytes follow it", 8*n, len(body))
	}
	if n > 0 {
		h.Envelope = make([]float64, n)
		for i := range h.Envelope {
			h.Envelope[i] = math.Float64frombits(order.Uint64(body[8*i:]))
		}
	}
	body = body[8*n:]
	end, err := walkWKB(body, 0)
	if err != nil {
		return nil, h, fmt.Errorf("geometry blob's WKB: %w", err)
	}
	if end != len(body) {
		return nil, h, fmt.Errorf("geometry blob has %d bytes after its WKB geometry", len(body)-end)
	}
	g, err := wkb.Unmarshal(body, wkbcommon.WKBOptionEmptyPointHandling(wkbcommon.EmptyPointHandlingNaN))
	if err != nil {
		return nil, h, fmt.Errorf("geometry blob's WKB: %w", err)
	}
	if p, ok := g.(*geom.Point); ok && allNaN(p.FlatCoords()) {
		// WKB has no empty point; GeoPackage writes one as NaN coordinates.
		g = geom.NewPointEmpty(p.Layout())
	}
	if h.Empty && !g.Empty() {
		return nil, h, fmt.Errorf("geometry blob header flags an empty geometry but its WKB %s has %d coordinates", wkbName(g), Coordinates(g))
	}
	return g, h, nil
}

func allNaN(c []float64) bool {
	for _, v := range c {
		if !math.IsNaN(v) {
			return false
		}
	}
	return len(c) > 0
}

// Coordinates counts g's positions, those of a collection's members
// included.
func Coordinates(g geom.T) int {
	if gc, ok := g.(*geom.GeometryCollection); ok {
		n := 0
		for _, m := range gc.Geoms() {
			n += Coordinates(m)
		}
		return n
	}
	return len(g.FlatCoords()) / max(g.Stride(), 1)
}

// wkbName names g's type for an error.
func wkbName(g geom.T) string { return fmt.Sprintf("%T", g)[len("*geom."):] }

// walkWKB checks the WKB geometry at b[pos:] without allocating: known
// types and dimensions, every count within the bytes left. It returns the
// offset just past the geometry.
func walkWKB(b []byte, depth int) (int, error) {
	if depth > maxWKBDepth {
		return 0, fmt.Errorf("geometry collections nested deeper than %d", maxWKBDepth)
	}
	if len(b) < 5 {
		return 0, fmt.Errorf("geometry header cut short (%d bytes)", len(b))
	}
	var order binary.ByteOrder
	switch b[0] {
	case 0:
		order = binary.BigEndian
	case 1:
		order = binary.LittleEndian
	default:
		return 0, fmt.Errorf("byte order %d (want 0 or 1)", b[0])
	}
	t := order.Uint32(b[1:5])
	dims, base := t/1000, t%1000
	if dims > 3 {
		return 0, fmt.Errorf("geometry type %d is not ISO WKB", t)
	}
	stride := 2 + int(dims+1)/2 // XY 2, XYZ 3, XYM 3, XYZM 4
	pos := 5
	count := func(unit int) (int, error) {
		if len(b)-pos < 4 {
			return 0, fmt.Errorf("count cut short at byte %d", pos)
		}
		n := int(order.Uint32(b[pos:]))
		pos += 4
		if n > (len(b)-pos)/unit {
			return 0, fmt.Errorf("count %d at byte %d needs more than the %d bytes left", n, pos-4, len(b)-pos)
		}
		return n, nil
	}
	points := func() error {
		n, err := count(8 * stride)
		pos += 8 * stride * n
		return err
	}
	switch base {
	case wkbcommon.PointID:
		if len(b)-pos < 8*stride {
			return 0, errors.New("point cut short")
		}
		return pos + 8*stride, nil
	case wkbcommon.LineStringID:
		return pos, points()
	case wkbcommon.PolygonID:
		rings, err := count(4)
		for i := 0; err == nil && i < rings; i++ {
			err = points()
		}
		return pos, err
	case wkbcommon.MultiPointID, wkbcommon.MultiLineStringID, wkbcommon.MultiPolygonID, wkbcommon.GeometryCollectionID:
		parts, err := count(5)
		for i := 0; err == nil && i < parts; i++ {
			var end int
			end, err = walkWKB(b[pos:], depth+1)
			pos += end
		}
		return pos, err
	case 8, 9, 10, 11, 12, 13, 14:
		return 0, fmt.Errorf("curve geometry type %d is not supported", t)
	}
	return 0, fmt.Errorf("unsupported geometry type %d", t)
}
