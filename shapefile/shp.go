package shapefile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/twpayne/go-geom"
)

// Shape types of the .shp (Technical Description, table 1).
const (
	shapeNull        = 0
	shapePoint       = 1
	shapePolyLine    = 3
	shapePolygon     = 5
	shapeMultiPoint  = 8
	shapePointZ      = 11
	shapePolyLineZ   = 13
	shapePolygonZ    = 15
	shapeMultiPointZ = 18
	shapePointM      = 21
	shapePolyLineM   = 23
	shapePolygonM    = 25
	shapeMultiPointM = 28
)

// shapeNames names the shape types for messages and the declared geometry.
var shapeNames = map[int32]string{
	shapeNull: "Null", shapePoint: "Point", shapePolyLine: "PolyLine", shapePolygon: "Polygon",
	shapeMultiPoint: "MultiPoint", shapePointZ: "PointZ", shapePolyLineZ: "PolyLineZ", shapePolygonZ: "PolygonZ",
	shapeMultiPointZ: "MultiPointZ", shapePointM: "PointM", shapePolyLineM: "PolyLineM", shapePolygonM: "PolygonM",
	shapeMultiPointM: "MultiPointM", 31: "MultiPatch",
}

// shpHeader is the 100-byte header of a .shp or .shx.
type shpHeader struct {
	words     int64 // file length in 16-bit words
	shapeType int32
}

// readHeader reads and checks the 100-byte header of a .shp or .shx.
func readHeader(r io.Reader, what string) (shpHeader, error) {
	var b [100]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return shpHeader{}, fmt.Errorf("%s: header: %w", what, eof(err))
	}
	if code := binary.BigEndian.Uint32(b[0:4]); code != 9994 {
		return shpHeader{}, fmt.Errorf("%s: file code %d, want 9994: not a shapefile", what, code)
	}
	if v := binary.LittleEndian.Uint32(b[28:32]); v != 1000 {
		return shpHeader{}, fmt.Errorf("%s: version %d, want 1000", what, v)
	}
	h := shpHeader{words: int64(binary.BigEndian.Uint32(b[24:28])), shapeType: int32(binary.LittleEndian.Uint32(b[32:36]))}
	if _, ok := shapeNames[h.shapeType]; !ok {
		return h, fmt.Errorf("%s: unknown shape type %d", what, h.shapeType)
	}
	if h.shapeType == 31 {
		return h, fmt.Errorf("%s: shape type MultiPatch is not supported", what)
	}
	return h, nil
}

// eof turns an early io.EOF into io.ErrUnexpectedEOF: a file cut short.
func eof(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// shpRecord is one record's content as read: its shape type and bytes.
type shpRecord struct {
	number int32
	buf    []byte // the content, shape type first; reused
}

// readRecord reads the next record of the .shp into rec (io.EOF at the
// end of the file). maxBytes bounds its content.
func readRecord(r io.Reader, rec *shpRecord, maxBytes int64) error {
	var h [8]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		if err == io.EOF {
			return io.EOF
		}
		return fmt.Errorf("record header: %w", eof(err))
	}
	rec.number = int32(binary.BigEndian.Uint32(h[0:4]))
	n := int64(binary.BigEndian.Uint32(h[4:8])) * 2
	if n < 4 {
		return fmt.Errorf("record %d: content of %d bytes, too short for its shape type", rec.number, n)
	}
	if n > maxBytes {
		return &limitErr{n: n}
	}
	if int64(cap(rec.buf)) < n {
		rec.buf = make([]byte, n)
	}
	rec.buf = rec.buf[:n]
	if _, err := io.ReadFull(r, rec.buf); err != nil {
		return fmt.Errorf("record %d: %w", rec.number, eof(err))
	}
	return nil
}

// limitErr is a record longer than limits.feature_bytes.
type limitErr struct{ n int64 }

func (e *limitErr) Error() string { return fmt.Sprintf("record of %d bytes", e.n) }

// decoder reads a record's content; its methods fail with errShort once
// the content runs out.
type decoder struct {
	b   []byte
	off int
	err error
}

var errShort = errors.New("record content shorter than its shape needs")

func (d *decoder) i32() int32 {
	if d.err != nil || d.off+4 > len(d.b) {
		d.err = errShort
		return 0
	}
	v := int32(binary.LittleEndian.Uint32(d.b[d.off:]))
	d.off += 4
	return v
}

func (d *decoder) f64() float64 {
	if d.err != nil || d.off+8 > len(d.b) {
		d.err = errShort
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(d.b[d.off:]))
	d.off += 8
	return v
}

func (d *decoder) skip(n int) {
	if d.err != nil || n < 0 || d.off+n > len(d.b) {
		d.err = errShort
		return
	}
	d.off += n
}

// count reads a count of parts or points and checks that the content can
// hold that many items of size bytes each.
func (d *decoder) count(size int) int {
	n := d.i32()
	if d.err == nil && (n < 0 || int64(n)*int64(size) > int64(len(d.b)-d.off)) {
		d.err = errShort
		return 0
	}
	return int(n)
}

// decodeShape turns a record's content into a geometry with srid (nil for a
// Null shape). fileType is the .shp's shape type: a record of another
// (non-null) type is refused, as GDAL would read it as another layer's.
func decodeShape(buf []byte, fileType int32, srid int) (geom.T, error) {
	d := &decoder{b: buf}
	t := d.i32()
	if t == shapeNull {
		return nil, nil
	}
	if t != fileType {
		return nil, fmt.Errorf("shape type %s in a file of %s", shapeName(t), shapeName(fileType))
	}
	var g geom.T
	switch t {
	case shapePoint, shapePointM, shapePointZ:
		g = decodePoint(d, t)
	case shapeMultiPoint, shapeMultiPointM, shapeMultiPointZ:
		g = decodeMultiPoint(d, t)
	case shapePolyLine, shapePolyLineM, shapePolyLineZ, shapePolygon, shapePolygonM, shapePolygonZ:
		g = decodeParts(d, t)
	}
	if d.err != nil {
		return nil, d.err
	}
	setSRID(g, srid)
	return g, nil
}

func shapeName(t int32) string {
	if n, ok := shapeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("%d", t)
}

func isZ(t int32) bool {
	return t == shapePointZ || t == shapeMultiPointZ || t == shapePolyLineZ || t == shapePolygonZ
}

func decodePoint(d *decoder, t int32) geom.T {
	x, y := d.f64(), d.f64()
	if isZ(t) {
		return geom.NewPointFlat(geom.XYZ, []float64{x, y, d.f64()})
	}
	return geom.NewPointFlat(geom.XY, []float64{x, y})
}

// readXY reads n points, then their Z values for a Z type, into a flat
// coordinate slice of the layout.
func readXY(d *decoder, t int32, n int) ([]float64, geom.Layout) {
	layout, stride := geom.XY, 2
	if isZ(t) {
		layout, stride = geom.XYZ, 3
	}
	flat := make([]float64, n*stride)
	for i := 0; i < n; i++ {
		flat[i*stride], flat[i*stride+1] = d.f64(), d.f64()
	}
	if stride == 3 {
		d.skip(16) // Z range
		for i := 0; i < n; i++ {
			flat[i*3+2] = d.f64()
		}
	}
	// M values (optional in Z types, present in M types) are not read.
	return flat, layout
}

func decodeMultiPoint(d *decoder, t int32) geom.T {
	d.skip(32) // bounding box
	n := d.count(16)
	flat, layout := readXY(d, t, n)
	return geom.NewMultiPointFlat(layout, flat)
}

// decodeParts reads a PolyLine or Polygon (and their Z and M types).
func decodeParts(d *decoder, t int32) geom.T {
	d.skip(32) // bounding box
	nParts, nPoints := d.count(4), d.count(16)
	if d.err != nil {
		return nil
	}
	if nParts == 0 || nPoints == 0 {
		d.err = fmt.Errorf("a %s of %d parts and %d points", shapeName(t), nParts, nPoints)
		return nil
	}
	starts := make([]int, nParts)
	for i := range starts {
		starts[i] = int(d.i32())
		if d.err == nil && (starts[i] < 0 || starts[i] >= nPoints || (i > 0 && starts[i] < starts[i-1])) {
			d.err = fmt.Errorf("part %d starts at point %d of %d", i, starts[i], nPoints)
		}
	}
	flat, layout := readXY(d, t, nPoints)
	if d.err != nil {
		return nil
	}
	stride := layout.Stride()
	ends := make([]int, nParts)
	for i := range starts {
		next := nPoints
		if i+1 < nParts {
			next = starts[i+1]
		}
		ends[i] = next * stride
	}
	switch t {
	case shapePolyLine, shapePolyLineM, shapePolyLineZ:
		if nParts == 1 {
			return geom.NewLineStringFlat(layout, flat)
		}
		return geom.NewMultiLineStringFlat(layout, flat, ends)
	}
	return assemblePolygons(layout, flat, starts, ends)
}
