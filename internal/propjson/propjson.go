// Package propjson writes a feature's properties as the JSON object
// feature.Feature.Properties holds, from typed values read out of a binary
// format (GeoPackage rows, FlatGeobuf property buffers): keys rendered
// once per layer, strings repaired as the JSON decoders repair them
// (invalid UTF-8 becomes U+FFFD, counted in Repairs), non-finite numbers,
// which JSON cannot hold, written null.
package propjson

import (
	"encoding/base64"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/ingestd/ingestd/feature"
)

// Keys are a layer's property names, each rendered once as `"name":`.
type Keys [][]byte

// NewKeys renders names as JSON object keys (repairing invalid UTF-8).
func NewKeys(names []string) Keys {
	k := make(Keys, len(names))
	for i, n := range names {
		k[i] = append(AppendString(nil, n), ':')
	}
	return k
}

// Object builds one properties object. The zero value is ready; Reset
// starts the next feature's.
type Object struct {
	buf []byte
	n   int
	// Repairs says which repairs the strings written so far needed.
	Repairs feature.Repairs
}

// Reset starts a new object, keeping the buffer.
func (o *Object) Reset() {
	o.buf = append(o.buf[:0], '{')
	o.n = 0
	o.Repairs = 0
}

// Key starts the member keys[i].
func (o *Object) Key(keys Keys, i int) {
	if len(o.buf) == 0 {
		o.buf = append(o.buf, '{')
	}
	if o.n > 0 {
		o.buf = append(o.buf, ',')
	}
	o.n++
	o.buf = append(o.buf, keys[i]...)
}

// Null writes null.
func (o *Object) Null() { o.buf = append(o.buf, "null"...) }

// Int writes an integer.
func (o *Object) Int(v int64) { o.buf = strconv.AppendInt(o.buf, v, 10) }

// Uint writes an unsigned integer.
func (o *Object) Uint(v uint64) { o.buf = strconv.AppendUint(o.buf, v, 10) }

// Bool writes true or false.
func (o *Object) Bool(v bool) { o.buf = strconv.AppendBool(o.buf, v) }

// Float writes v in the shortest form that reads back as the same value of
// bitSize bits (32: a float32 shows as written, 0.1 and not
// 0.10000000149011612); NaN and ±Inf, which JSON cannot hold, are null.
func (o *Object) Float(v float64, bitSize int) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		o.Null()
		return
	}
	o.buf = strconv.AppendFloat(o.buf, v, 'g', -1, bitSize)
}

// String writes s as a JSON string, its invalid UTF-8 bytes replaced.
func (o *Object) String(s string) {
	if !utf8.ValidString(s) {
		o.Repairs |= feature.RepairedUTF8
	}
	o.buf = AppendString(o.buf, s)
}

// Text writes the text s as a JSON string, its invalid UTF-8 bytes
// replaced.
func (o *Object) Text(s []byte) {
	if !utf8.Valid(s) {
		o.Repairs |= feature.RepairedUTF8
	}
	o.buf = AppendString(o.buf, s)
}

// Base64 writes binary data as a standard base64 string (what GDAL's
// GeoJSON driver writes for a binary field).
func (o *Object) Base64(b []byte) {
	o.buf = append(o.buf, '"')
	o.buf = base64.StdEncoding.AppendEncode(o.buf, b)
	o.buf = append(o.buf, '"')
}

// Raw writes JSON text as it is; the caller has checked it is one valid
// JSON value.
func (o *Object) Raw(v []byte) { o.buf = append(o.buf, v...) }

// Len is the length of the object so far, in bytes.
func (o *Object) Len() int { return len(o.buf) }

// Bytes closes the object and returns it in a slice of its own: the
// properties outlive the feature (the stager holds them), and handing out
// the reused buffer would keep the largest feature's size for good.
func (o *Object) Bytes() []byte {
	if len(o.buf) == 0 {
		o.buf = append(o.buf, '{')
	}
	out := make([]byte, len(o.buf)+1)
	copy(out, o.buf)
	out[len(o.buf)] = '}'
	return out
}

// AppendString appends s as a JSON string; bytes of invalid UTF-8 become
// U+FFFD, one per byte, as encoding/json reads them.
func AppendString[T string | []byte](b []byte, s T) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		var rn rune
		var size int
		switch v := any(s).(type) {
		case string:
			rn, size = utf8.DecodeRuneInString(v[i:])
		case []byte:
			rn, size = utf8.DecodeRune(v[i:])
		}
		if rn == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
