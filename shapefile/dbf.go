package shapefile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/ingestd/ingestd/schema"
)

// field is one DBF field descriptor.
type field struct {
	name     string
	typ      byte
	length   int
	decimals int
	offset   int // in the record, after the deletion flag
	column   schema.Type
	ogr      string // the OGR field type GDAL reads it as, for messages and tests
}

// dbf reads a .dbf record by record.
type dbf struct {
	r       io.Reader
	records int
	recLen  int
	ldid    byte
	fields  []field
	buf     []byte
}

// openDBF reads a .dbf's header and field descriptors. The names are
// decoded by enc once the caller has chosen it (see nameFields).
func openDBF(r io.Reader) (*dbf, [][]byte, error) {
	var h [32]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, nil, fmt.Errorf(".dbf: header: %w", eof(err))
	}
	d := &dbf{r: r, records: int(binary.LittleEndian.Uint32(h[4:8])), recLen: int(binary.LittleEndian.Uint16(h[10:12])), ldid: h[29]}
	headerLen := int(binary.LittleEndian.Uint16(h[8:10]))
	if headerLen < 33 {
		return nil, nil, fmt.Errorf(".dbf: header of %d bytes: not a dBASE file", headerLen)
	}
	rest := make([]byte, headerLen-32)
	if _, err := io.ReadFull(r, rest); err != nil {
		return nil, nil, fmt.Errorf(".dbf: field descriptors: %w", eof(err))
	}
	var names [][]byte
	offset := 0
	for i := 0; i+32 <= len(rest) && rest[i] != 0x0D; i += 32 {
		fd := rest[i : i+32]
		name := fd[:11]
		if j := bytes.IndexByte(name, 0); j >= 0 {
			name = name[:j]
		}
		f := field{typ: fd[11], length: int(fd[16]), decimals: int(fd[17]), offset: offset}
		if f.typ == 'C' {
			// dBASE and GDAL read a wide character field's length over
			// both bytes.
			f.length = int(binary.LittleEndian.Uint16(fd[16:18]))
			f.decimals = 0
		}
		f.column, f.ogr = columnType(f)
		offset += f.length
		d.fields = append(d.fields, f)
		names = append(names, bytes.TrimSpace(name))
	}
	if offset+1 != d.recLen {
		return nil, nil, fmt.Errorf(".dbf: fields of %d bytes in records of %d: the header is damaged", offset, d.recLen-1)
	}
	d.buf = make([]byte, d.recLen)
	return d, names, nil
}

// columnType maps a DBF field to the view's column type, as GDAL's
// Shapefile driver types it (its OGR type second).
func columnType(f field) (schema.Type, string) {
	switch f.typ {
	case 'N', 'F':
		switch {
		case f.decimals > 0:
			return schema.Double, "Real"
		case f.length < 10:
			return schema.BigInt, "Integer"
		case f.length < 19:
			return schema.BigInt, "Integer64"
		}
		return schema.Double, "Real"
	case 'D':
		return schema.Date, "Date"
	case 'L':
		return schema.Boolean, "Integer(Boolean)"
	}
	return schema.Text, "String"
}

// next reads the next record into d.buf; deleted reports its flag.
func (d *dbf) next() (deleted bool, err error) {
	if _, err := io.ReadFull(d.r, d.buf); err != nil {
		return false, eof(err)
	}
	switch d.buf[0] {
	case ' ':
		return false, nil
	case '*':
		return true, nil
	}
	return false, fmt.Errorf("deletion flag 0x%02X, want ' ' or '*': the records are out of step", d.buf[0])
}

// value is field f of the current record, without its padding.
func (d *dbf) value(f *field) []byte {
	return bytes.Trim(d.buf[1+f.offset:1+f.offset+f.length], " \x00")
}

// appendValue appends field f's value as JSON: a number, a boolean, a
// string (dates as YYYY-MM-DD) or null when blank or unreadable.
func appendValue(dst []byte, f *field, v []byte, enc Encoding) ([]byte, bool) {
	if len(v) == 0 {
		return append(dst, "null"...), false
	}
	switch f.typ {
	case 'N', 'F':
		return appendNumber(dst, f, v), false
	case 'D':
		if len(v) == 8 && allDigits(v) && string(v) != "00000000" {
			dst = append(dst, '"')
			dst = append(dst, v[0:4]...)
			dst = append(dst, '-')
			dst = append(dst, v[4:6]...)
			dst = append(dst, '-')
			dst = append(dst, v[6:8]...)
			return append(dst, '"'), false
		}
		return append(dst, "null"...), false
	case 'L':
		switch v[0] {
		case 'T', 't', 'Y', 'y':
			return append(dst, "true"...), false
		case 'F', 'f', 'N', 'n':
			return append(dst, "false"...), false
		}
		return append(dst, "null"...), false
	}
	s, repaired := enc.Decode(v)
	return appendString(dst, s), repaired
}

// appendNumber appends a numeric field's text as a JSON number, or null
// when it is no number (stars for an overflow, a lone sign).
func appendNumber(dst []byte, f *field, v []byte) []byte {
	s := string(v)
	if f.column == schema.BigInt {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return strconv.AppendInt(dst, n, 10)
		}
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
		return append(dst, "null"...)
	}
	return strconv.AppendFloat(dst, x, 'g', -1, 64)
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// appendString appends s (valid UTF-8) as a JSON string.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
