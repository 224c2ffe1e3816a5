package esrijson

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/ingestd/ingestd/feature"
)

// MaxIDListValue bounds every value of an id list but the objectIds array
// itself (its field name, an error object, members ingestd does not read),
// and every id in it: a few bytes in any real answer, so that a 400 MB
// string in an id list costs a bounded buffer.
const MaxIDListValue = 1 << 20

// ReadObjectIDs streams the object ids of a returnIdsOnly answer
// ({"objectIdFieldName":"OBJECTID","objectIds":[3,1,2,…]}) to add, one at a
// time and in the answer's order: the caller stores and bounds them, and
// the decoder never holds the list, nor allocates per id, so an answer of
// 50 million ids costs what the caller lets it. add's error ends the read
// and is returned as is.
//
// The members may come in any order. An "error" member, wherever it sits,
// makes the answer an error object: ReadObjectIDs returns it as a
// *ServerError (after adding the ids before it), for the caller to judge
// as it judges one sent alone. objectIds null (ArcGIS's answer for no
// feature) or absent is an empty list. Any other value is bounded by
// MaxIDListValue; an id that is not an integer, or a document that is not
// one JSON object, is a *feature.DecodeError.
func ReadObjectIDs(r io.Reader, add func(int64) error) (fieldName string, err error) {
	s := &idScanner{r: bufio.NewReaderSize(r, 64<<10)}
	if err := s.expect('{'); err != nil {
		return "", err
	}
	if c, err := s.peek(); err != nil {
		return "", err
	} else if c == '}' {
		s.skip()
		return "", s.end()
	}
	sawIDs := false
	for {
		raw, err := s.value("a member's name")
		if err != nil {
			return fieldName, err
		}
		var key string
		if raw[0] != '"' || json.Unmarshal(raw, &key) != nil {
			return fieldName, s.fail(fmt.Sprintf("a member's name is not a string: %s", snippet(raw)), nil)
		}
		if err := s.expect(':'); err != nil {
			return fieldName, err
		}
		switch key {
		case "objectIds":
			if sawIDs {
				return fieldName, s.fail(`two "objectIds" members`, nil)
			}
			sawIDs = true
			if err := s.ids(add); err != nil {
				return fieldName, err
			}
		default:
			raw, err := s.value(key)
			if err != nil {
				return fieldName, err
			}
			if !json.Valid(raw) {
				return fieldName, s.fail(fmt.Sprintf("%s: not JSON: %s", key, snippet(raw)), nil)
			}
			switch key {
			case "objectIdFieldName":
				if err := json.Unmarshal(raw, &fieldName); err != nil {
					return fieldName, s.fail(key, err)
				}
			case "error":
				var e ServerError
				if err := json.Unmarshal(raw, &e); err != nil {
					return fieldName, s.fail("error member", err)
				}
				return fieldName, &e
			}
		}
		c, err := s.next()
		switch {
		case err != nil:
			return fieldName, err
		case c == '}':
			return fieldName, s.end()
		case c != ',':
			return fieldName, s.fail(fmt.Sprintf("%q after a member, want , or }", c), nil)
		}
	}
}

// idScanner reads an id list byte by byte from a buffered reader: the
// members it does not stream are captured whole (bounded), then decoded
// by encoding/json, which validates them.
type idScanner struct {
	r   *bufio.Reader
	off int64 // bytes read
	buf []byte
}

func (s *idScanner) fail(msg string, err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if msg != "" {
		msg = ": " + feature.BoundMessage(msg)
	}
	return &feature.DecodeError{Format: "esrijson", Index: -1, Msg: fmt.Sprintf("id list, byte %d%s", s.off, msg), Err: feature.Bound(err)}
}

// read returns the next byte, white space included.
func (s *idScanner) read() (byte, error) {
	c, err := s.r.ReadByte()
	if err != nil {
		return 0, s.fail("", err)
	}
	s.off++
	return c, nil
}

// peek returns the next byte that is not white space, without reading it.
func (s *idScanner) peek() (byte, error) {
	for {
		b, err := s.r.Peek(1)
		if err != nil {
			return 0, s.fail("", err)
		}
		switch b[0] {
		case ' ', '\t', '\n', '\r':
			s.skip()
		default:
			return b[0], nil
		}
	}
}

func (s *idScanner) skip() { _, _ = s.r.ReadByte(); s.off++ }

// discard skips n bytes the caller peeked.
func (s *idScanner) discard(n int) { _, _ = s.r.Discard(n); s.off += int64(n) }

// next reads the next byte that is not white space.
func (s *idScanner) next() (byte, error) {
	if _, err := s.peek(); err != nil {
		return 0, err
	}
	return s.read()
}

func (s *idScanner) expect(want byte) error {
	c, err := s.next()
	if err != nil {
		return err
	}
	if c != want {
		return s.fail(fmt.Sprintf("%q where %q belongs", c, want), nil)
	}
	return nil
}

// end checks that nothing but white space follows the document.
func (s *idScanner) end() error {
	for {
		b, err := s.r.Peek(1)
		switch {
		case err == io.EOF:
			return nil
		case err != nil:
			return s.fail("after the document", err)
		}
		switch b[0] {
		case ' ', '\t', '\n', '\r':
			s.skip()
		default:
			return s.fail(fmt.Sprintf("data after the document (%q)", b[0]), nil)
		}
	}
}

// value captures the next JSON value whole, at most MaxIDListValue bytes.
// It only finds the value's end (strings, escapes, nesting); the caller's
// json.Unmarshal validates it.
func (s *idScanner) value(what string) ([]byte, error) {
	if _, err := s.peek(); err != nil {
		return nil, err
	}
	s.buf = s.buf[:0]
	depth, inString, escaped := 0, false, false
	for {
		if len(s.buf) == MaxIDListValue {
			return nil, s.fail(fmt.Sprintf("%s: a value longer than %d bytes (the bound of an id list's members)", what, MaxIDListValue), nil)
		}
		c, err := s.read()
		if err != nil {
			return nil, err
		}
		s.buf = append(s.buf, c)
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
				if depth == 0 {
					return s.buf, nil
				}
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth--; depth < 0 {
				return nil, s.fail(fmt.Sprintf("%s: %q where a value belongs", what, c), nil)
			}
			if depth == 0 {
				return s.buf, nil
			}
		case depth == 0 && s.scalarEnds():
			return s.buf, nil
		}
	}
}

// scalarEnds reports whether the next byte ends a scalar (a number, true,
// false, null): a delimiter, white space, or the end of the body.
func (s *idScanner) scalarEnds() bool {
	b, err := s.r.Peek(1)
	if err != nil {
		return true
	}
	switch b[0] {
	case ',', '}', ']', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// ids reads the objectIds value, null or an array of integers, handing
// each id to add.
func (s *idScanner) ids(add func(int64) error) error {
	c, err := s.peek()
	if err != nil {
		return err
	}
	if c == 'n' {
		raw, err := s.value("objectIds")
		if err != nil {
			return err
		}
		if string(raw) != "null" {
			return s.fail(fmt.Sprintf("objectIds is not an array: %s", snippet(raw)), nil)
		}
		return nil
	}
	if c != '[' {
		raw, _ := s.value("objectIds")
		return s.fail(fmt.Sprintf("objectIds is not an array: %s", snippet(raw)), nil)
	}
	s.skip()
	if c, err := s.peek(); err != nil {
		return err
	} else if c == ']' {
		s.skip()
		return nil
	}
	for i := 0; ; i++ {
		// The id and the byte after it, read from the buffer in place:
		// a byte at a time through bufio, and strconv, cost 70 ns an
		// id (BenchmarkReadObjectIDs).
		win, _ := s.r.Peek(maxIDChars + 1)
		if len(win) == 0 || whiteSpace(win[0]) {
			if _, err := s.peek(); err != nil {
				return err
			}
			win, _ = s.r.Peek(maxIDChars + 1)
		}
		n := 0
		for n < len(win) && numberByte(win[n]) {
			n++
		}
		switch {
		case n > maxIDChars:
			return s.fail(fmt.Sprintf("objectIds[%d] is longer than %d characters: not an object id", i, maxIDChars), nil)
		case n == 0:
			return s.fail(fmt.Sprintf("objectIds[%d] is not a number (starts with %q)", i, win[0]), nil)
		}
		id, ok := parseID(win[:n])
		if !ok {
			return s.fail(fmt.Sprintf("objectIds[%d] is not an integer object id: %s", i, snippet(win[:n])), nil)
		}
		var after byte
		if n < len(win) {
			after = win[n]
		}
		s.discard(n)
		if err := add(id); err != nil {
			return err
		}
		switch after {
		case ',':
			s.skip()
			continue
		case ']':
			s.skip()
			return nil
		}
		c, err := s.next()
		switch {
		case err != nil:
			return err
		case c == ']':
			return nil
		case c != ',':
			return s.fail(fmt.Sprintf("%q after objectIds[%d], want , or ]", c, i), nil)
		}
	}
}

// maxIDChars bounds an id's text: an int64 is at most 20 characters.
const maxIDChars = 32

// whiteSpace reports whether c is JSON's white space.
func whiteSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// parseID reads b as an integer as JSON writes it (no plus sign, no
// leading zero) within int64.
func parseID(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 || (b[0] == '0' && len(b) > 1) {
		return 0, false
	}
	var u uint64 // 19 digits fit
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	switch {
	case neg && u <= 1<<63:
		return -int64(u), true // -(1<<63) wraps to math.MinInt64, itself
	case !neg && u <= math.MaxInt64:
		return int64(u), true
	}
	return 0, false
}

// numberByte reports whether c may be part of a JSON number.
func numberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}
