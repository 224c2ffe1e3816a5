package flatgeobuf

import (
	"fmt"
	"strings"

	"github.com/ingestd/ingestd/schema"
)

// Column types of header.fbs.
const (
	colByte byte = iota
	colUByte
	colBool
	colShort
	colUShort
	colInt
	colUInt
	colLong
	colULong
	colFloat
	colDouble
	colString
	colJSON
	colDateTime
	colBinary
)

// ColumnType maps a FlatGeobuf column type (header.fbs's ColumnType) to
// the typed view's column type: the integers up to Long are bigint, ULong
// numeric (it passes bigint), Float and Double double precision, Bool
// boolean, String text, Json jsonb, DateTime timestamptz, Binary text
// (written base64). It reports false for a type the schema does not
// define.
func ColumnType(t byte) (schema.Type, bool) {
	switch t {
	case colByte, colUByte, colShort, colUShort, colInt, colUInt, colLong:
		return schema.BigInt, true
	case colULong:
		return schema.Numeric, true
	case colBool:
		return schema.Boolean, true
	case colFloat, colDouble:
		return schema.Double, true
	case colString, colBinary:
		return schema.Text, true
	case colJSON:
		return schema.JSON, true
	case colDateTime:
		return schema.Timestamp, true
	}
	return "", false
}

// Geometry types of header.fbs (WKB's numbering).
const (
	geomUnknown byte = iota
	geomPoint
	geomLineString
	geomPolygon
	geomMultiPoint
	geomMultiLineString
	geomMultiPolygon
	geomCollection
)

var geometryNames = map[byte]string{
	geomPoint: "Point", geomLineString: "LineString", geomPolygon: "Polygon",
	geomMultiPoint: "MultiPoint", geomMultiLineString: "MultiLineString",
	geomMultiPolygon: "MultiPolygon", geomCollection: "GeometryCollection",
}

// header is what the reader needs of the file's header.
type header struct {
	name          string
	geometryType  byte
	hasZ, hasM    bool
	columns       []column
	featuresCount uint64
	indexNodeSize uint16
	crsOrg        string
	crsCode       int32
}

// column is one attribute column.
type column struct {
	name string
	typ  byte
}

// Header field indexes (header.fbs).
const (
	hName = iota
	hEnvelope
	hGeometryType
	hHasZ
	hHasM
	hHasT
	hHasTM
	hColumns
	hFeaturesCount
	hIndexNodeSize
	hCRS
)

// parseHeader reads the header table in buf.
func parseHeader(buf []byte) (h header, err error) {
	defer guard(&err)
	t := root(buf)
	h.name = string(t.bytes(hName))
	h.geometryType = t.uint8(hGeometryType, 0)
	h.hasZ = t.uint8(hHasZ, 0) != 0
	h.hasM = t.uint8(hHasM, 0) != 0
	if t.uint8(hHasT, 0) != 0 || t.uint8(hHasTM, 0) != 0 {
		return h, fmt.Errorf("geometries with T or TM values are not supported")
	}
	start, n := t.vector(hColumns, 4)
	for i := range n {
		c := t.element(start, i)
		typ := c.uint8(1, 0)
		if _, ok := ColumnType(typ); !ok {
			return h, fmt.Errorf("column %d has unknown type %d", i, typ)
		}
		h.columns = append(h.columns, column{name: string(c.bytes(0)), typ: typ})
	}
	h.featuresCount = t.uint64(hFeaturesCount)
	h.indexNodeSize = t.uint16(hIndexNodeSize, 16)
	if crs, ok := t.child(hCRS); ok {
		h.crsOrg = string(crs.bytes(0))
		h.crsCode = crs.int32(1, 0)
	}
	return h, nil
}

// srid is the header CRS's EPSG code.
func (h *header) srid() (int, error) {
	switch {
	case h.crsOrg != "" && !strings.EqualFold(h.crsOrg, "EPSG"):
		return 0, fmt.Errorf("its CRS is %s:%d, not an EPSG code (only EPSG CRSs are read; the feed's crs: can name one)", h.crsOrg, h.crsCode)
	case h.crsCode <= 0:
		return 0, fmt.Errorf("its header names no EPSG CRS (crs code %d; the feed's crs: can name one)", h.crsCode)
	}
	return int(h.crsCode), nil
}

// indexSize is the size in bytes of the packed Hilbert R-tree that
// follows the header (spec: PackedRTree::size), 0 when there is none.
func (h *header) indexSize() (int64, error) {
	if h.indexNodeSize == 0 || h.featuresCount == 0 {
		return 0, nil
	}
	nodeSize := max(uint64(h.indexNodeSize), 2)
	n := h.featuresCount
	if n > 1<<40 {
		return 0, fmt.Errorf("header counts %d features", n)
	}
	// As the format's calcTreeSize: at least one level above the leaves,
	// so that one feature's index is two nodes (its leaf and the root).
	nodes := n
	for {
		n = (n + nodeSize - 1) / nodeSize
		nodes += n
		if n == 1 {
			break
		}
	}
	const nodeItemBytes = 40 // minX, minY, maxX, maxY, offset
	return int64(nodes * nodeItemBytes), nil
}
