// Package jsonbtext renders a feature's JSON properties as PostgreSQL's
// jsonb text, the form PostgreSQL prints a jsonb value in, so that the
// store can hash and compare properties without asking PostgreSQL to
// parse them. It uses no database; its tests hold it to PostgreSQL's own
// output.
package jsonbtext

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// Feature properties are compared by the hash of their jsonb text, the form
// PostgreSQL prints a jsonb value in (jsonb_out, jsonb_send): keys sorted by
// byte length and then bytewise, the last of duplicate keys kept, numbers as
// numeric prints them, strings with PostgreSQL's escapes, ", " and ": " as
// separators. ingestd computes that text itself while staging (Append) so
// that PostgreSQL parses properties only for features that are written: the
// staged text is cast to jsonb on insert, and parsing the normalised text
// gives the same jsonb as parsing the source's.
//
// TestJSONBTextMatchesPostgres and FuzzJSONBText hold it to PostgreSQL's own
// output.
//
// Text that jsonb cannot hold is repaired, faithfully and visibly, rather
// than failing the poll (one feature's bad string must not block a layer):
// each byte of invalid UTF-8 becomes U+FFFD (as Go's decoding of a string
// does), a \u0000 escape becomes U+FFFD (jsonb is text, which cannot hold
// NUL), and a lone surrogate escape (\ud800 without a low surrogate after
// it, or a low one alone) becomes U+FFFD. The normalizer records which
// repairs it made (Repairs), so the poll can count them per kind and the
// feed's invalid_feature policy can skip such features instead. What has no
// faithful repair (not JSON at all, a number numeric cannot hold) is still
// an error.

// ErrInvalid is what Append returns for input PostgreSQL's jsonb rejects
// too (wrapped with the reason).
var ErrInvalid = errors.New("properties are not valid jsonb")

// ErrNumberRange is wrapped (with ErrInvalid) by the error for a number that
// numeric cannot hold.
var ErrNumberRange = errors.New("number out of numeric's range")

// Repairs is a mask of the kinds of repair Append made (and the store's
// staging of ids, which repairs text the same way).
type Repairs uint8

// The kinds of repair, bits of Repairs.
const (
	RepairUTF8      Repairs = 1 << iota // invalid UTF-8 → U+FFFD
	RepairNUL                           // \u0000 (or a NUL byte in an id) → U+FFFD
	RepairSurrogate                     // a lone surrogate escape → U+FFFD
)

// Replacement is U+FFFD in UTF-8, what every repair writes.
const Replacement = "\uFFFD"

// jsonbMaxDepth bounds nesting; PostgreSQL's parser stops at its stack depth
// limit, a few thousand levels with the default max_stack_depth.
const jsonbMaxDepth = 1000

// numeric's limits (src/backend/utils/adt/numeric.c): the exponent of a
// number's text and the digits before and after the decimal point.
const (
	numericMaxExponent  = 1<<30 - 1 // INT_MAX / 2
	numericMaxDscale    = 0x3FFF
	numericMaxIntDigits = 131072
)

// Normalizer renders JSON text as jsonb text; its buffers are reused
// from call to call.
type Normalizer struct {
	in  []byte
	pos int
	// levels[d] holds the rendered keys and values of the object being
	// sorted at depth d; members their offsets, innermost last.
	levels  [][]byte
	members []jsonbMember
	order   []int
	// The keys (rendered, as offsets into lastKeyText) of the last
	// top-level object whose members were sorted, and their order.
	lastKeyText []byte
	lastKeys    [][2]int
	lastOrder   []int
	// repairs has a bit set per kind of repair the last Append made.
	repairs Repairs
}

// jsonbMember is one rendered key/value pair of an object, as offsets into
// the buffer of its depth.
type jsonbMember struct {
	key, value [2]int
	escaped    bool // the rendered key holds an escape
	// The key's length and first 8 bytes (big-endian, zero-padded): most
	// comparisons end there.
	klen    int
	kprefix uint64
}

// Append appends the jsonb text of the JSON document in to dst, repairing
// what jsonb cannot hold (see Repairs).
func (n *Normalizer) Append(dst, in []byte) ([]byte, error) {
	n.in, n.pos, n.members, n.repairs = in, 0, n.members[:0], 0
	n.skipSpace()
	out, err := n.value(dst, 0)
	if err != nil {
		return dst, err
	}
	n.skipSpace()
	if n.pos != len(n.in) {
		return dst, n.errorf("unexpected %q after the value", n.in[n.pos])
	}
	return out, nil
}

// Repairs returns the kinds of repair the last Append made.
func (n *Normalizer) Repairs() Repairs { return n.repairs }

func (n *Normalizer) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: at byte %d: %s", ErrInvalid, n.pos, fmt.Sprintf(format, args...))
}

// rangeError is the error for a number numeric cannot hold.
func (n *Normalizer) rangeError() error {
	return fmt.Errorf("%w: at byte %d: value overflows numeric format: %w", ErrInvalid, n.pos, ErrNumberRange)
}

func (n *Normalizer) skipSpace() {
	for n.pos < len(n.in) {
		switch n.in[n.pos] {
		case ' ', '\t', '\n', '\r':
			n.pos++
		default:
			return
		}
	}
}

// value renders the value at pos.
func (n *Normalizer) value(dst []byte, depth int) ([]byte, error) {
	if n.pos >= len(n.in) {
		return dst, n.errorf("unexpected end of input")
	}
	switch c := n.in[n.pos]; {
	case c == '{':
		if depth >= jsonbMaxDepth {
			return dst, n.errorf("nested deeper than %d", jsonbMaxDepth)
		}
		return n.object(dst, depth+1)
	case c == '[':
		if depth >= jsonbMaxDepth {
			return dst, n.errorf("nested deeper than %d", jsonbMaxDepth)
		}
		return n.array(dst, depth+1)
	case c == '"':
		dst, _, err := n.string(dst)
		return dst, err
	case c == '-' || ('0' <= c && c <= '9'):
		return n.number(dst)
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(n.in[n.pos:], []byte(lit)) {
				n.pos += len(lit)
				return append(dst, lit...), nil
			}
		}
		return dst, n.errorf("unexpected %q", c)
	}
}

func (n *Normalizer) array(dst []byte, depth int) ([]byte, error) {
	n.pos++ // [
	dst = append(dst, '[')
	n.skipSpace()
	if n.pos < len(n.in) && n.in[n.pos] == ']' {
		n.pos++
		return append(dst, ']'), nil
	}
	for first := true; ; first = false {
		if !first {
			dst = append(dst, ", "...)
		}
		n.skipSpace()
		var err error
		if dst, err = n.value(dst, depth); err != nil {
			return dst, err
		}
		n.skipSpace()
		if n.pos >= len(n.in) {
			return dst, n.errorf("unterminated array")
		}
		switch n.in[n.pos] {
		case ',':
			n.pos++
		case ']':
			n.pos++
			return append(dst, ']'), nil
		default:
			return dst, n.errorf("unexpected %q in array", n.in[n.pos])
		}
	}
}

// object renders the members into the buffer of its depth, then writes
// them to dst in jsonb's key order, the last of equal keys winning. Each
// depth has its own buffer so that a nested object's members never share
// memory with the output they are being copied into.
func (n *Normalizer) object(dst []byte, depth int) ([]byte, error) {
	n.pos++ // {
	n.skipSpace()
	if n.pos < len(n.in) && n.in[n.pos] == '}' {
		n.pos++
		return append(dst, "{}"...), nil
	}
	for len(n.levels) <= depth {
		n.levels = append(n.levels, nil)
	}
	buf := n.levels[depth][:0]
	// This object's members follow those of the objects enclosing it;
	// they are removed again before returning.
	base := len(n.members)
	for {
		n.skipSpace()
		if n.pos >= len(n.in) || n.in[n.pos] != '"' {
			return dst, n.errorf("object key must be a string")
		}
		var m jsonbMember
		var err error
		m.key[0] = len(buf)
		if buf, m.escaped, err = n.string(buf); err != nil {
			return dst, err
		}
		m.key[1] = len(buf)
		n.skipSpace()
		if n.pos >= len(n.in) || n.in[n.pos] != ':' {
			return dst, n.errorf("expected ':' after object key")
		}
		n.pos++
		n.skipSpace()
		m.value[0] = len(buf)
		if buf, err = n.value(buf, depth); err != nil {
			return dst, err
		}
		m.value[1] = len(buf)
		n.members = append(n.members, m)
		n.skipSpace()
		if n.pos >= len(n.in) {
			return dst, n.errorf("unterminated object")
		}
		if n.in[n.pos] == ',' {
			n.pos++
			continue
		}
		if n.in[n.pos] != '}' {
			return dst, n.errorf("unexpected %q in object", n.in[n.pos])
		}
		n.pos++
		break
	}
	n.levels[depth] = buf
	members := n.members[base:]
	dst = append(dst, '{')
	for i, m := range n.keyOrder(buf, members, depth) {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = append(dst, buf[members[m].key[0]:members[m].key[1]]...)
		dst = append(dst, ": "...)
		dst = append(dst, buf[members[m].value[0]:members[m].value[1]]...)
	}
	n.members = n.members[:base]
	return append(dst, '}'), nil
}

// keyOrder returns the indexes of members in jsonb's key order, the last of
// equal keys kept. A layer's features mostly have the same keys in the same
// order, so the order of the last top-level object is reused when its keys
// repeat.
func (n *Normalizer) keyOrder(buf []byte, members []jsonbMember, depth int) []int {
	if depth == 1 && len(members) == len(n.lastKeys) {
		same := true
		for i, m := range members {
			if !bytes.Equal(buf[m.key[0]:m.key[1]], n.lastKeyText[n.lastKeys[i][0]:n.lastKeys[i][1]]) {
				same = false
				break
			}
		}
		if same {
			return n.lastOrder
		}
	}
	order := n.order[:0]
	for i := range members {
		k := jsonbKey(buf, members[i])
		members[i].klen = len(k)
		var prefix [8]byte
		copy(prefix[:], k)
		members[i].kprefix = binary.BigEndian.Uint64(prefix[:])
		order = append(order, i)
	}
	compare := func(a, b *jsonbMember) int {
		switch {
		case a.klen != b.klen:
			return a.klen - b.klen
		case a.kprefix != b.kprefix:
			if a.kprefix < b.kprefix {
				return -1
			}
			return 1
		case a.klen <= 8:
			return 0
		}
		return bytes.Compare(jsonbKey(buf, *a), jsonbKey(buf, *b))
	}
	// Stable: equal keys stay in input order, so the last one is the
	// source's last. Objects are small: insertion sort.
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && compare(&members[order[j-1]], &members[order[j]]) > 0; j-- {
			order[j-1], order[j] = order[j], order[j-1]
		}
	}
	kept := order[:0]
	for i, m := range order {
		if i+1 < len(order) && compare(&members[order[i+1]], &members[m]) == 0 {
			continue
		}
		kept = append(kept, m)
	}
	n.order = order
	if depth != 1 {
		return kept
	}
	n.lastKeyText, n.lastKeys = n.lastKeyText[:0], n.lastKeys[:0]
	for _, m := range members {
		start := len(n.lastKeyText)
		n.lastKeyText = append(n.lastKeyText, buf[m.key[0]:m.key[1]]...)
		n.lastKeys = append(n.lastKeys, [2]int{start, len(n.lastKeyText)})
	}
	n.lastOrder = append(n.lastOrder[:0], kept...)
	return n.lastOrder
}

// jsonbKey is the member's key as jsonb compares it: the unescaped bytes.
func jsonbKey(buf []byte, m jsonbMember) []byte {
	q := buf[m.key[0]+1 : m.key[1]-1]
	if !m.escaped {
		return q
	}
	return jsonbUnquote(q)
}

// jsonbUnquote is the content of a string that string() rendered, without
// its quotes: only its own escapes (\" \\ \b \f \n \r \t \u00xx) occur.
func jsonbUnquote(q []byte) []byte {
	out := make([]byte, 0, len(q))
	for i := 0; i < len(q); i++ {
		if q[i] != '\\' {
			out = append(out, q[i])
			continue
		}
		i++
		switch q[i] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			out = append(out, byte(hexValue(q[i+3])<<4|hexValue(q[i+4])))
			i += 4
		default: // " and \
			out = append(out, q[i])
		}
	}
	return out
}

func hexValue(c byte) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case 'a' <= c && c <= 'f':
		return rune(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return rune(c-'A') + 10
	}
	return -1
}

// string renders the JSON string at pos with PostgreSQL's escaping
// (escape_json): the source's escapes are decoded, then only ", \, the
// five short control escapes and other control characters (as \u00xx) are
// escaped; everything else is written as UTF-8. escaped tells whether the
// rendering holds an escape (its content differs from the string's value).
func (n *Normalizer) string(dst []byte) (_ []byte, escaped bool, _ error) {
	n.pos++ // "
	dst = append(dst, '"')
	for {
		// A run of bytes written as they are.
		run := n.pos
		for run < len(n.in) {
			c := n.in[run]
			if c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
				break
			}
			run++
		}
		dst = append(dst, n.in[n.pos:run]...)
		n.pos = run
		if n.pos >= len(n.in) {
			return dst, escaped, n.errorf("unterminated string")
		}
		c := n.in[n.pos]
		switch {
		case c == '"':
			n.pos++
			return append(dst, '"'), escaped, nil
		case c == '\\':
			r, err := n.escape()
			if err != nil {
				return dst, escaped, err
			}
			before := len(dst)
			dst = appendJSONBRune(dst, r)
			escaped = escaped || dst[before] == '\\'
		case c < 0x20:
			return dst, escaped, n.errorf("control character %#x in string", c)
		default:
			r, size := utf8.DecodeRune(n.in[n.pos:])
			if r == utf8.RuneError && size <= 1 {
				n.repairs |= RepairUTF8
				dst = append(dst, Replacement...)
				n.pos++
				continue
			}
			dst = append(dst, n.in[n.pos:n.pos+size]...)
			n.pos += size
		}
	}
}

// escape decodes the escape sequence at pos (a backslash).
func (n *Normalizer) escape() (rune, error) {
	if n.pos+1 >= len(n.in) {
		return 0, n.errorf("unterminated escape")
	}
	c := n.in[n.pos+1]
	n.pos += 2
	switch c {
	case '"', '\\', '/':
		return rune(c), nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'u':
		r, err := n.hex4()
		if err != nil {
			return 0, err
		}
		switch {
		case r == 0:
			// jsonb is text, and text cannot hold NUL.
			n.repairs |= RepairNUL
			return utf8.RuneError, nil
		case utf16.IsSurrogate(r) && r < 0xDC00:
			// A high surrogate must be followed by an escaped low one;
			// otherwise it stands alone, and whatever follows is read
			// on its own.
			if lo, ok := n.lowSurrogate(); ok {
				return utf16.DecodeRune(r, lo), nil
			}
			n.repairs |= RepairSurrogate
			return utf8.RuneError, nil
		case utf16.IsSurrogate(r):
			n.repairs |= RepairSurrogate
			return utf8.RuneError, nil
		}
		return r, nil
	}
	return 0, n.errorf("invalid escape \\%c", c)
}

// lowSurrogate consumes the escaped low surrogate at pos, if there is one.
func (n *Normalizer) lowSurrogate() (rune, bool) {
	if n.pos+6 > len(n.in) || n.in[n.pos] != '\\' || n.in[n.pos+1] != 'u' {
		return 0, false
	}
	var lo rune
	for _, c := range n.in[n.pos+2 : n.pos+6] {
		v := hexValue(c)
		if v < 0 {
			return 0, false
		}
		lo = lo<<4 | v
	}
	if lo < 0xDC00 || lo > 0xDFFF {
		return 0, false
	}
	n.pos += 6
	return lo, true
}

func (n *Normalizer) hex4() (rune, error) {
	if n.pos+4 > len(n.in) {
		return 0, n.errorf(`"\u" must be followed by four hexadecimal digits`)
	}
	var r rune
	for _, c := range n.in[n.pos : n.pos+4] {
		v := hexValue(c)
		if v < 0 {
			return 0, n.errorf(`"\u" must be followed by four hexadecimal digits`)
		}
		r = r<<4 | v
	}
	n.pos += 4
	return r, nil
}

// appendJSONBRune appends r escaped as PostgreSQL's escape_json does.
func appendJSONBRune(dst []byte, r rune) []byte {
	switch r {
	case '\b':
		return append(dst, `\b`...)
	case '\f':
		return append(dst, `\f`...)
	case '\n':
		return append(dst, `\n`...)
	case '\r':
		return append(dst, `\r`...)
	case '\t':
		return append(dst, `\t`...)
	case '"':
		return append(dst, `\"`...)
	case '\\':
		return append(dst, `\\`...)
	}
	if r < 0x20 {
		const hex = "0123456789abcdef"
		return append(dst, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xF])
	}
	return utf8.AppendRune(dst, r)
}

// number renders the JSON number at pos as numeric_out prints what
// numeric_in read: the exact value, with as many fractional digits as the
// text had after the point minus its exponent (never fewer than 0), so
// 1.50 stays 1.50, 1.5e1 is 15, 15e-1 is 1.5 and -0.0 is 0.0.
func (n *Normalizer) number(dst []byte) ([]byte, error) {
	start := n.pos
	neg := n.in[n.pos] == '-'
	if neg {
		n.pos++
	}
	intDigits := n.digits()
	if len(intDigits) == 0 || (len(intDigits) > 1 && intDigits[0] == '0') {
		return dst, n.errorf("invalid number")
	}
	var fracDigits []byte
	if n.pos < len(n.in) && n.in[n.pos] == '.' {
		n.pos++
		if fracDigits = n.digits(); len(fracDigits) == 0 {
			return dst, n.errorf("invalid number")
		}
	}
	zero := allZeros(intDigits) && allZeros(fracDigits)
	if n.pos == len(n.in) || (n.in[n.pos] != 'e' && n.in[n.pos] != 'E') {
		// The common case: numeric prints the text as it is, except for
		// the sign of a zero.
		if len(fracDigits) > numericMaxDscale || len(intDigits) > numericMaxIntDigits {
			return dst, n.rangeError()
		}
		if neg && zero {
			start++
		}
		return append(dst, n.in[start:n.pos]...), nil
	}
	exp, err := n.exponent()
	if err != nil {
		return dst, err
	}
	return n.shiftedNumber(dst, neg, zero, intDigits, fracDigits, exp)
}

// exponent consumes the exponent of a number, its 'e' or 'E' at pos.
func (n *Normalizer) exponent() (int, error) {
	n.pos++
	expNeg := false
	if n.pos < len(n.in) && (n.in[n.pos] == '+' || n.in[n.pos] == '-') {
		expNeg = n.in[n.pos] == '-'
		n.pos++
	}
	expDigits := n.digits()
	if len(expDigits) == 0 {
		return 0, n.errorf("invalid number")
	}
	exp := 0
	for _, c := range expDigits {
		if exp = exp*10 + int(c-'0'); exp >= numericMaxExponent {
			return 0, n.rangeError()
		}
	}
	if expNeg {
		exp = -exp
	}
	return exp, nil
}

// shiftedNumber renders the number of sign neg, digits intDigits.fracDigits
// (zero: all of them are 0) and exponent exp, as numeric_out would.
func (n *Normalizer) shiftedNumber(dst []byte, neg, zero bool, intDigits, fracDigits []byte, exp int) ([]byte, error) {
	dscale := max(len(fracDigits)-exp, 0)
	if dscale > numericMaxDscale {
		return dst, n.rangeError()
	}
	if zero {
		dst = append(dst, '0')
		if dscale > 0 {
			dst = append(append(dst, '.'), bytes.Repeat([]byte{'0'}, dscale)...)
		}
		return dst, nil
	}
	// The mantissa's significant digits, and where the point falls among
	// them after the shift.
	digits := append(append(make([]byte, 0, len(intDigits)+len(fracDigits)), intDigits...), fracDigits...)
	pointAt := len(intDigits) + exp
	lead := len(digits) - len(bytes.TrimLeft(digits, "0"))
	digits, pointAt = digits[lead:], pointAt-lead
	if pointAt > numericMaxIntDigits {
		return dst, n.rangeError()
	}
	if neg {
		dst = append(dst, '-')
	}
	switch {
	case pointAt <= 0:
		dst = append(dst, '0')
	case pointAt >= len(digits):
		dst = append(append(dst, digits...), bytes.Repeat([]byte{'0'}, pointAt-len(digits))...)
	default:
		dst = append(dst, digits[:pointAt]...)
	}
	if dscale > 0 {
		// The fraction: zeros between the point and the digits, the
		// digits after the point, then zeros up to dscale (the text's
		// trailing zeros that the shift moved past the digits).
		frac := make([]byte, 0, dscale)
		if pointAt < 0 {
			frac = append(frac, bytes.Repeat([]byte{'0'}, -pointAt)...)
		}
		frac = append(frac, digits[min(max(pointAt, 0), len(digits)):]...)
		for len(frac) < dscale {
			frac = append(frac, '0')
		}
		dst = append(append(dst, '.'), frac[:dscale]...)
	}
	return dst, nil
}

// digits consumes the decimal digits at pos.
func (n *Normalizer) digits() []byte {
	start := n.pos
	for n.pos < len(n.in) && '0' <= n.in[n.pos] && n.in[n.pos] <= '9' {
		n.pos++
	}
	return n.in[start:n.pos]
}

func allZeros(b []byte) bool {
	for _, c := range b {
		if c != '0' {
			return false
		}
	}
	return true
}
