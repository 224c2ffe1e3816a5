package flatgeobuf

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/ingestd/ingestd/feature"
)

// Feature field indexes (feature.fbs).
const (
	fGeometry = iota
	fProperties
	fColumns
)

// value is where one column's value lies in the properties buffer.
type value struct {
	set        bool
	start, end int
}

// decode decodes the feature in r.buf.
func (r *Reader) decode(index int) (f *feature.Feature, err error) {
	defer func() {
		if err != nil {
			err = r.fail(index, "", err)
		}
	}()
	defer guard(&err)
	t := root(r.buf)
	if _, n := t.vector(fColumns, 4); n > 0 {
		return nil, errors.New("a feature with its own columns (no header schema) is not supported")
	}
	f = &r.f
	*f = feature.Feature{}
	if g, ok := t.child(fGeometry); ok {
		budget := len(r.buf)
		d := geomDecoder{hasZ: r.h.hasZ, hasM: r.h.hasM, srid: r.srid, budget: &budget}
		if f.Geometry, err = d.decode(g, r.h.geometryType, 0); err != nil {
			return nil, fmt.Errorf("geometry: %w", err)
		}
	}
	if err := r.properties(index, t.bytes(fProperties), f); err != nil {
		return nil, err
	}
	if reason := feature.RefuseID(f.ID, r.limits.IDBytes); reason != "" {
		*f = feature.Feature{Refused: reason}
	}
	return f, nil
}

// scalarBytes is the size of each fixed-size column type's value.
var scalarBytes = map[byte]int{
	colByte: 1, colUByte: 1, colBool: 1, colShort: 2, colUShort: 2, colInt: 4,
	colUInt: 4, colLong: 8, colULong: 8, colFloat: 4, colDouble: 8,
}

// properties reads the properties buffer (a run of column index, value
// pairs; strings, JSON, date-times and binaries length-prefixed) and
// writes the object in the header's column order. A column the feature
// does not carry is left out, as GDAL reads it (unset, not null); the
// typed view reads both as NULL.
func (r *Reader) properties(index int, b []byte, f *feature.Feature) error {
	for i := range r.values {
		r.values[i] = value{}
	}
	for pos := 0; pos < len(b); {
		if len(b)-pos < 2 {
			return fmt.Errorf("properties cut short at byte %d", pos)
		}
		col := int(binary.LittleEndian.Uint16(b[pos:]))
		pos += 2
		if col >= len(r.h.columns) {
			return fmt.Errorf("property of column %d, the header has %d columns", col, len(r.h.columns))
		}
		c := r.h.columns[col]
		n, fixed := scalarBytes[c.typ]
		start := pos
		if !fixed {
			if len(b)-pos < 4 {
				return fmt.Errorf("column %s: length cut short", strconv.Quote(c.name))
			}
			n = int(binary.LittleEndian.Uint32(b[pos:]))
			start = pos + 4
			if int64(n) > r.limits.ValueBytes {
				return &feature.LimitError{Name: "value_bytes", Max: r.limits.ValueBytes,
					Where: fmt.Sprintf("flatgeobuf %s, column %s", feature.Where(index), feature.Snippet(c.name))}
			}
		}
		if n > len(b)-start {
			return fmt.Errorf("column %s: a %d-byte value past the properties' end", strconv.Quote(c.name), n)
		}
		r.values[col] = value{set: true, start: start, end: start + n}
		pos = start + n
	}
	o := &r.obj
	o.Reset()
	for i, c := range r.h.columns {
		v := r.values[i]
		if !v.set {
			continue
		}
		o.Key(r.keys, i)
		writeValue(o, c.typ, b[v.start:v.end])
		if i == r.idCol {
			f.ID = idString(c.typ, b[v.start:v.end])
		}
	}
	f.Properties = o.Bytes()
	f.Repairs = o.Repairs
	return nil
}

// writer is what writeValue writes to (propjson.Object).
type writer interface {
	Null()
	Int(int64)
	Uint(uint64)
	Bool(bool)
	Float(float64, int)
	Text([]byte)
	Base64([]byte)
	Raw([]byte)
}

// writeValue writes one value of type typ from its bytes v.
func writeValue(o writer, typ byte, v []byte) {
	le := binary.LittleEndian
	switch typ {
	case colByte:
		o.Int(int64(int8(v[0])))
	case colUByte:
		o.Int(int64(v[0]))
	case colBool:
		o.Bool(v[0] != 0)
	case colShort:
		o.Int(int64(int16(le.Uint16(v))))
	case colUShort:
		o.Int(int64(le.Uint16(v)))
	case colInt:
		o.Int(int64(int32(le.Uint32(v))))
	case colUInt:
		o.Int(int64(le.Uint32(v)))
	case colLong:
		o.Int(int64(le.Uint64(v)))
	case colULong:
		o.Uint(le.Uint64(v))
	case colFloat:
		o.Float(float64(math.Float32frombits(le.Uint32(v))), 32)
	case colDouble:
		o.Float(math.Float64frombits(le.Uint64(v)), 64)
	case colJSON:
		// A JSON column holds JSON text; text that is not JSON is kept as
		// a string rather than lost.
		if json.Valid(v) {
			o.Raw(v)
		} else {
			o.Text(v)
		}
	case colBinary:
		o.Base64(v)
	default: // String, DateTime
		o.Text(v)
	}
}

// idString renders an id column's value: text as it is, integers in
// decimal.
func idString(typ byte, v []byte) string {
	var w idWriter
	writeValue(&w, typ, v)
	return w.s
}
