package filegdb

import (
	"encoding/binary"
	"fmt"

	"github.com/ingestd/ingestd/feature"
)

// value is one field of a row: its bytes in the row's blob (a fixed-size
// number, a string's UTF-8, a geometry blob), or null.
type value struct {
	null bool
	b    []byte
}

// readRow reads row slot i (OBJECTID i+1) into buf, which it grows at
// most to maxBytes: found is false for a deleted row.
func (t *table) readRow(i int64, buf []byte, maxBytes int64) (blob []byte, found bool, err error) {
	off, err := t.rowOffset(i)
	if err != nil || off == 0 {
		return buf, false, err
	}
	var n [4]byte
	if err := t.data.readAt(n[:], off); err != nil {
		return buf, false, fmt.Errorf("its offset %d is past the end of the .gdbtable (%d bytes)", off, t.data.size)
	}
	size := int32(binary.LittleEndian.Uint32(n[:]))
	if size < 0 {
		return buf, false, nil // freed space: the row was deleted
	}
	if int64(size) > maxBytes {
		return buf, false, &feature.LimitError{Name: "feature_bytes", Max: maxBytes, Where: fmt.Sprintf("%s, row %d (%d bytes)", t.label, i+1, size)}
	}
	if int64(size) > t.data.size-off-4 {
		return buf, false, fmt.Errorf("claims %d bytes at offset %d, past the end of the .gdbtable (%d bytes)", size, off, t.data.size)
	}
	if cap(buf) < int(size) {
		buf = make([]byte, size)
	}
	buf = buf[:size]
	if err := t.data.readAt(buf, off+4); err != nil {
		return buf, false, err
	}
	return buf, true, nil
}

// splitRow cuts a row's blob into its fields' values (vals has one per
// field; the OBJECTID's is null), each checked to lie inside the blob.
func (t *table) splitRow(blob []byte, vals []value, maxValue int64) error {
	c := &cursor{b: blob}
	flags := c.take((t.nullable + 7) / 8)
	if c.err != nil {
		return fmt.Errorf("its null flags are cut short (%d bytes)", len(blob))
	}
	nb := 0
	for i := range t.fields {
		f := &t.fields[i]
		vals[i] = value{}
		if f.Type == ObjectID {
			vals[i].null = true
			continue
		}
		if f.Nullable {
			isNull := flags[nb/8]&(1<<(nb%8)) != 0
			nb++
			if isNull {
				vals[i].null = true
				continue
			}
		}
		var n int
		switch f.Type {
		case Int16:
			n = 2
		case Int32, Float32:
			n = 4
		case Float64, DateTime, Int64, DateOnly, TimeOnly:
			n = 8
		case TimestampOffset:
			n = 10
		case GUID, GlobalID:
			n = 16
		case Raster:
			if f.rasterKind == 1 {
				n = 4
				break
			}
			fallthrough
		case String, XML, Binary, Geometry:
			l := c.varuint()
			if c.err != nil {
				return fmt.Errorf("field %s: %v", f.Name, c.err)
			}
			if l > uint64(c.left()) {
				return fmt.Errorf("field %s claims %d bytes, past the end of the row (%d bytes left)", f.Name, l, c.left())
			}
			n = int(l)
			if f.Type != Geometry && f.Type != Raster && int64(n) > maxValue {
				return &feature.LimitError{Name: "value_bytes", Max: maxValue, Where: fmt.Sprintf("field %s of %d bytes", f.Name, n)}
			}
		}
		vals[i].b = c.take(n)
		if c.err != nil {
			return fmt.Errorf("field %s (%s) runs past the end of the row (%d bytes)", f.Name, f.Type, len(blob))
		}
	}
	return nil
}
