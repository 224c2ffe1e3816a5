package flatgeobuf

import (
	"errors"

	flatbuffers "github.com/google/flatbuffers/go"
)

// errMalformed is what a FlatBuffers access out of range becomes.
var errMalformed = errors.New("damaged: an offset or length in its FlatBuffers table points outside it")

// slot is a field's offset in a table's vtable: 4 + 2 × its index in the
// schema.
func slot(field int) flatbuffers.VOffsetT { return flatbuffers.VOffsetT(4 + 2*field) }

// table is a FlatBuffers table whose vectors are checked against its
// buffer before use.
type table struct{ flatbuffers.Table }

// root is the root table of buf (not size-prefixed).
func root(buf []byte) table {
	if len(buf) < 4 {
		panic(errMalformed)
	}
	return table{flatbuffers.Table{Bytes: buf, Pos: flatbuffers.GetUOffsetT(buf)}}
}

// field returns the absolute position of field's value, 0 when absent.
func (t table) field(field int) flatbuffers.UOffsetT {
	o := flatbuffers.UOffsetT(t.Offset(slot(field)))
	if o == 0 {
		return 0
	}
	return o + t.Pos
}

// child is the table field refers to.
func (t table) child(field int) (table, bool) {
	p := t.field(field)
	if p == 0 {
		return table{}, false
	}
	return table{flatbuffers.Table{Bytes: t.Bytes, Pos: t.Indirect(p)}}, true
}

// vector returns the start and length of field's vector of elem-byte
// elements, checked to lie within the buffer.
func (t table) vector(field, elem int) (start, n int) {
	o := flatbuffers.UOffsetT(t.Offset(slot(field)))
	if o == 0 {
		return 0, 0
	}
	s, l := int(t.Vector(o)), t.VectorLen(o)
	if s < 0 || l < 0 || s > len(t.Bytes) || l > (len(t.Bytes)-s)/elem {
		panic(errMalformed)
	}
	return s, l
}

// bytes is field's string or byte vector.
func (t table) bytes(field int) []byte {
	s, n := t.vector(field, 1)
	return t.Bytes[s : s+n]
}

func (t table) uint8(field int, def byte) byte {
	if p := t.field(field); p != 0 {
		return t.GetByte(p)
	}
	return def
}

func (t table) int32(field int, def int32) int32 {
	if p := t.field(field); p != 0 {
		return t.GetInt32(p)
	}
	return def
}

func (t table) uint64(field int) uint64 {
	if p := t.field(field); p != 0 {
		return t.GetUint64(p)
	}
	return 0
}

func (t table) uint16(field int, def uint16) uint16 {
	if p := t.field(field); p != 0 {
		return t.GetUint16(p)
	}
	return def
}

// element is the table at index i of a vector of tables starting at start.
func (t table) element(start, i int) table {
	p := flatbuffers.UOffsetT(start + 4*i)
	return table{flatbuffers.Table{Bytes: t.Bytes, Pos: t.Indirect(p)}}
}

// guard turns a panic of the FlatBuffers runtime (an index out of range)
// into *err.
func guard(err *error) {
	if p := recover(); p != nil {
		if e, ok := p.(error); ok && (errors.Is(e, errMalformed) || isRuntime(e)) {
			*err = errMalformed
			return
		}
		panic(p)
	}
}

// isRuntime reports whether e is a runtime error (an index out of range).
func isRuntime(e error) bool {
	_, ok := e.(interface{ RuntimeError() })
	return ok
}
