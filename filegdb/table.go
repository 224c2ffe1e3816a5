package filegdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/bits"
	"path"
)

// FieldType is the type code of a field descriptor.
type FieldType uint8

// The field types of a .gdbtable's descriptors. Int64, DateOnly, TimeOnly
// and TimestampOffset are those ArcGIS Pro 3.2 added.
const (
	Int16 FieldType = iota
	Int32
	Float32
	Float64
	String
	DateTime
	ObjectID
	Geometry
	Binary
	Raster
	GUID
	GlobalID
	XML
	Int64
	DateOnly
	TimeOnly
	TimestampOffset
)

var fieldTypeNames = [...]string{"Int16", "Int32", "Float32", "Float64", "String", "Date", "OBJECTID",
	"Geometry", "Blob", "Raster", "GUID", "GlobalID", "XML", "Int64", "DateOnly", "TimeOnly", "TimestampOffset"}

func (t FieldType) String() string {
	if int(t) < len(fieldTypeNames) {
		return fieldTypeNames[t]
	}
	return fmt.Sprintf("type %d", t)
}

// OGR is the OGR field type GDAL's OpenFileGDB driver reads a field of
// this type as, the way `ogrinfo` prints it ("" for the OBJECTID, the
// geometry and a raster, which are no attribute).
func (t FieldType) OGR() string {
	switch t {
	case Int16:
		return "Integer(Int16)"
	case Int32:
		return "Integer"
	case Float32:
		return "Real(Float32)"
	case Float64:
		return "Real"
	case String, GUID, GlobalID, XML:
		return "String"
	case DateTime, TimestampOffset:
		return "DateTime"
	case Binary:
		return "Binary"
	case Int64:
		return "Integer64"
	case DateOnly:
		return "Date"
	case TimeOnly:
		return "Time"
	}
	return ""
}

// Field is one field descriptor of a table.
type Field struct {
	Name, Alias string
	Type        FieldType
	Nullable    bool
	// Width is a String's declared maximum length in characters (0: no
	// maximum), else the descriptor's width byte.
	Width int

	rasterKind byte // Raster: 0 external path, 1 managed id, 2 inline
}

// geomField is what the geometry field's descriptor says about
// coordinates: the integer grid they are stored on.
type geomField struct {
	wkt                   string
	xOrig, yOrig, xyScale float64
	zOrig, zScale         float64
	mOrig, mScale         float64
}

// table is one opened .gdbtable with its .gdbtablx.
type table struct {
	label       string // for errors: `table "parcels" (a00000009.gdbtable)`
	data, index *file
	validRows   uint32
	layerType   byte // 0 none, 1 point, 2 multipoint, 3 polyline, 4 polygon, 9 multipatch
	hasZ, hasM  bool
	fields      []Field
	nullable    int
	geom        *geomField
	geomIndex   int // index in fields, -1 without

	// The .gdbtablx: offSize-byte offsets of rows, in blocks of 1024; a
	// sparse index keeps only the blocks its blockMap marks.
	offSize  int
	blocks   uint32
	slots    int64 // row slots the index covers: the largest OBJECTID
	blockMap []byte
	// blocksBefore[i] counts the present blocks before block i*64 of the
	// map, so that finding a row's block costs a popcount of one word.
	blocksBefore []uint32
}

// Hard bounds on what the headers may claim, far above real layers and
// far below what could make an allocation hurt.
const (
	maxFields      = 65535
	maxHeaderBytes = 64 << 20
	maxWKTBytes    = 1 << 20
)

// tableError is a fault of a table's structure (not of one row).
func (t *table) errorf(format string, a ...any) error {
	return &Error{Table: t.label, Msg: fmt.Sprintf(format, a...)}
}

// openTable opens the table named base (e.g. "a00000009") in dir of
// fsys and reads its header, field descriptors and index header.
func openTable(fsys fs.FS, dir, base, label string, sp spool) (t *table, err error) {
	t = &table{label: label, geomIndex: -1}
	defer func() {
		if err != nil {
			t.close()
		}
	}()
	if t.data, err = openFile(fsys, path.Join(dir, base+".gdbtable"), sp); err != nil {
		return nil, t.fileError(".gdbtable", err)
	}
	if t.index, err = openFile(fsys, path.Join(dir, base+".gdbtablx"), sp); err != nil {
		return nil, t.fileError(".gdbtablx", err)
	}
	if err := t.readHeader(); err != nil {
		return nil, err
	}
	if err := t.readIndexHeader(); err != nil {
		return nil, err
	}
	return t, nil
}

// fileError says that the table's file ext cannot be opened: missing
// from the geodatabase (a zip made without it), in ingestd's words, else
// the cause.
func (t *table) fileError(ext string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return &Error{Table: t.label, Msg: "its " + ext + " is missing: the geodatabase was zipped without it, and a table is read through both its .gdbtable and its .gdbtablx"}
	}
	return &Error{Table: t.label, Msg: "opening its " + ext, Err: err}
}

func (t *table) close() error {
	if t == nil {
		return nil
	}
	return errors.Join(t.data.close(), t.index.close())
}

// readHeader reads the 40-byte header and the field descriptors.
func (t *table) readHeader() error {
	var h [40]byte
	if err := t.data.readAt(h[:], 0); err != nil {
		return t.errorf("its header is cut short (%d bytes)", t.data.size)
	}
	le := binary.LittleEndian
	if v := le.Uint32(h[0:]); v != 3 && v != 4 {
		return t.errorf("not a File Geodatabase table: header version %d, want 3 or 4", v)
	}
	t.validRows = le.Uint32(h[4:])
	descOff := int64(le.Uint64(h[32:]))
	var n [4]byte
	if err := t.data.readAt(n[:], descOff); err != nil {
		return t.errorf("its field descriptors' offset %d is past the end of the file (%d bytes)", descOff, t.data.size)
	}
	size := int64(le.Uint32(n[:]))
	if size > maxHeaderBytes || size > t.data.size-descOff-4 {
		return t.errorf("its field descriptors claim %d bytes, past the end of the file (%d bytes)", size, t.data.size)
	}
	desc := make([]byte, size)
	if err := t.data.readAt(desc, descOff+4); err != nil {
		return t.errorf("reading its field descriptors: %v", err)
	}
	return t.parseFields(desc)
}

// parseFields reads the field descriptors (after their length).
func (t *table) parseFields(desc []byte) error {
	c := &cursor{b: desc}
	version := c.u32()
	layer := c.u32()
	nFields := int(c.u16())
	if c.err != nil {
		return t.errorf("its field descriptors are cut short")
	}
	if version != 3 && version != 4 {
		return t.errorf("field descriptors of version %d, want 3 or 4", version)
	}
	t.layerType = byte(layer)
	t.hasZ = layer&(1<<31) != 0
	t.hasM = layer&(1<<30) != 0
	if nFields > c.left()/3 {
		return t.errorf("claims %d fields, more than its descriptors' %d bytes can hold", nFields, c.left())
	}
	t.fields = make([]Field, 0, nFields)
	for i := 0; i < nFields; i++ {
		f, err := t.parseField(c)
		if err == nil && c.err != nil {
			err = c.err
		}
		if err != nil {
			return t.errorf("field descriptor %d: %v", i+1, err)
		}
		if f.Nullable {
			t.nullable++
		}
		if f.Type == Geometry {
			if t.geomIndex >= 0 {
				return t.errorf("field descriptor %d: a second geometry field", i+1)
			}
			t.geomIndex = len(t.fields)
		}
		t.fields = append(t.fields, f)
	}
	return nil
}

func (t *table) parseField(c *cursor) (Field, error) {
	var f Field
	f.Name = c.utf16(int(c.u8()))
	f.Alias = c.utf16(int(c.u8()))
	f.Type = FieldType(c.u8())
	if c.err != nil {
		return f, c.err
	}
	switch f.Type {
	case ObjectID:
		c.take(2)
	case Geometry:
		c.u8()
		f.Nullable = c.u8()&1 != 0
		g, err := t.parseGeomField(c)
		if err != nil {
			return f, err
		}
		t.geom = g
	case String:
		f.Width = int(c.u32())
		flag := c.u8()
		f.Nullable = flag&1 != 0
		def, err := c.count("bytes of default value", 1)
		if err != nil {
			return f, err
		}
		c.take(def)
	case Binary, GUID, GlobalID, XML:
		f.Width = int(c.u8())
		f.Nullable = c.u8()&1 != 0
	case Raster:
		c.u8()
		f.Nullable = c.u8()&1 != 0
		c.utf16(int(c.u8())) // the raster column's name
		c.utf16(int(c.u16()) / 2)
		switch magic := c.u8(); magic {
		case 0:
		case 1, 5, 7:
			n := 4 // x, y origins, xy scale, xy tolerance
			if magic == 5 || magic == 7 {
				n += 3
			}
			if magic == 7 {
				n += 3
			}
			c.take(8 * n)
		default:
			return f, fmt.Errorf("raster field %q: unknown layout %d", f.Name, magic)
		}
		f.rasterKind = c.u8()
		if f.rasterKind > 2 {
			return f, fmt.Errorf("raster field %q: unknown raster kind %d", f.Name, f.rasterKind)
		}
	case Int16, Int32, Float32, Float64, DateTime, Int64, DateOnly, TimeOnly, TimestampOffset:
		f.Width = int(c.u8())
		f.Nullable = c.u8()&1 != 0
		c.take(int(c.u8())) // default value
	default:
		return f, fmt.Errorf("field %q has type code %d, which ingestd does not know", f.Name, f.Type)
	}
	return f, c.err
}

// parseGeomField reads the geometry field's CRS and coordinate grid.
func (t *table) parseGeomField(c *cursor) (*geomField, error) {
	g := &geomField{}
	n := int(c.u16())
	if n > maxWKTBytes {
		return nil, fmt.Errorf("a CRS of %d bytes", n)
	}
	g.wkt = c.utf16(n / 2)
	flags := c.u8()
	g.xOrig, g.yOrig, g.xyScale = c.f64(), c.f64(), c.f64()
	hasM, hasZ := flags&2 != 0, flags&4 != 0
	if hasM {
		g.mOrig, g.mScale = c.f64(), c.f64()
	}
	if hasZ {
		g.zOrig, g.zScale = c.f64(), c.f64()
	}
	c.f64() // xy tolerance
	if hasM {
		c.f64()
	}
	if hasZ {
		c.f64()
	}
	c.take(32) // extent
	if t.hasZ {
		c.take(16)
	}
	if t.hasM {
		c.take(16)
	}
	c.u8()
	grids := c.u32()
	if c.err != nil {
		return nil, c.err
	}
	if grids < 1 || grids > 3 {
		return nil, fmt.Errorf("geometry field: %d spatial index grid sizes, want 1 to 3", grids)
	}
	c.take(8 * int(grids))
	if !(g.xyScale > 0) || (t.hasZ && hasZ && !(g.zScale > 0)) || (hasM && !(g.mScale > 0)) {
		return nil, fmt.Errorf("geometry field: a coordinate scale that is not positive (xy %v, z %v, m %v)", g.xyScale, g.zScale, g.mScale)
	}
	if t.hasZ && !hasZ {
		g.zScale, g.zOrig = 1, 0
	}
	return g, c.err
}

// readIndexHeader reads the .gdbtablx's header and, when its blocks are
// sparse, its block map.
func (t *table) readIndexHeader() error {
	var h [16]byte
	if err := t.index.readAt(h[:], 0); err != nil {
		return t.errorf("its .gdbtablx header is cut short (%d bytes)", t.index.size)
	}
	le := binary.LittleEndian
	t.blocks = le.Uint32(h[4:])
	rows := le.Uint32(h[8:])
	t.offSize = int(le.Uint32(h[12:]))
	if t.offSize < 4 || t.offSize > 6 {
		return t.errorf(".gdbtablx: offsets of %d bytes, want 4 to 6", t.offSize)
	}
	if t.blocks == 0 {
		if rows != 0 || t.validRows != 0 {
			return t.errorf(".gdbtablx indexes no row, the header counts %d rows", t.validRows)
		}
		return nil
	}
	offsets := int64(t.blocks) * 1024 * int64(t.offSize)
	if 16+offsets+16 > t.index.size {
		return t.errorf(".gdbtablx: %d blocks of offsets need %d bytes, the file holds %d", t.blocks, 16+offsets+16, t.index.size)
	}
	var tr [16]byte
	if err := t.index.readAt(tr[:], 16+offsets); err != nil {
		return t.errorf(".gdbtablx: its trailer: %v", err)
	}
	mapWords, mapBits, blocks := le.Uint32(tr[0:]), le.Uint32(tr[4:]), le.Uint32(tr[8:])
	if blocks != t.blocks {
		return t.errorf(".gdbtablx: its trailer counts %d blocks, its header %d", blocks, t.blocks)
	}
	if mapWords == 0 {
		t.slots = int64(rows)
		if int64(rows) > int64(t.blocks)*1024 {
			return t.errorf(".gdbtablx counts %d rows in %d blocks of 1024", rows, t.blocks)
		}
		return nil
	}
	if int64(rows) > int64(mapBits)*1024 {
		return t.errorf(".gdbtablx counts %d rows in a map of %d blocks of 1024", rows, mapBits)
	}
	n := int64(mapBits+7) / 8
	if n > t.index.size-16-offsets-16 {
		return t.errorf(".gdbtablx: its block map of %d bits runs past the end of the file", mapBits)
	}
	t.blockMap = make([]byte, (n+7)/8*8)
	if err := t.index.readAt(t.blockMap[:n], 16+offsets+16); err != nil {
		return t.errorf(".gdbtablx: its block map: %v", err)
	}
	var present uint32
	for i := 0; i < len(t.blockMap); i += 8 {
		t.blocksBefore = append(t.blocksBefore, present)
		present += uint32(bits.OnesCount64(le.Uint64(t.blockMap[i:])))
	}
	if present != t.blocks {
		return t.errorf(".gdbtablx: its block map marks %d blocks, its header counts %d", present, t.blocks)
	}
	t.slots = int64(rows)
	return nil
}

// skipAbsent is the first row slot from i on that lies in a block the
// index holds, so that a sparse index of few blocks is walked block by
// block and not row by row.
func (t *table) skipAbsent(i int64) int64 {
	if t.blockMap == nil {
		return i
	}
	for i < t.slots {
		b := i / 1024
		if t.blockMap[b/8]&(1<<(b%8)) != 0 {
			return i
		}
		i = (b + 1) * 1024
	}
	return i
}

// rowOffset is the offset in the .gdbtable of row slot i (OBJECTID i+1),
// 0 for a deleted row or one in an absent block.
func (t *table) rowOffset(i int64) (int64, error) {
	slot := i
	if t.blockMap != nil {
		b := i / 1024
		if t.blockMap[b/8]&(1<<(b%8)) == 0 {
			return 0, nil
		}
		w := b / 64
		word := binary.LittleEndian.Uint64(t.blockMap[w*8:])
		before := int64(t.blocksBefore[w]) + int64(bits.OnesCount64(word&(1<<(b%64)-1)))
		slot = before*1024 + i%1024
	}
	var p [8]byte
	if err := t.index.readAt(p[:t.offSize], 16+slot*int64(t.offSize)); err != nil {
		return 0, fmt.Errorf(".gdbtablx: the offset of row %d: %v", i+1, err)
	}
	return int64(binary.LittleEndian.Uint64(p[:])), nil
}
