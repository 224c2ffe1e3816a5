package geojson

import (
	"errors"
	"fmt"
	"io"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/internal/jsonscan"
)

// The GeoJSON reader's hot path. encoding/json's Decoder scans every feature
// three times (to find its end, to decode the struct, to skip each raw
// member) with a byte-at-a-time state machine: about half of ingestd's CPU
// per GeoJSON feature. jsonStream finds a value's end in one pass over a
// buffer it refills itself, and validJSON checks the grammar with a
// recursive descent; FuzzValidJSON holds validJSON to json.Valid.

// jsonStream reads JSON values from r through a buffer that grows to hold
// the largest single value read.
type jsonStream struct {
	r    io.Reader
	buf  []byte
	pos  int   // next unread byte of buf
	rerr error // the read error that ended the input (io.EOF at the end)
	// maxToken bounds one string (its bytes between the quotes, as
	// written) or scalar; 0 means no bound.
	maxToken int64
	// maxBuf caps the buffer's growth while value reads a value of
	// bounded length; 0 means no cap.
	maxBuf int64
}

func newJSONStream(r io.Reader) *jsonStream {
	return &jsonStream{r: r, buf: make([]byte, 0, 64<<10)}
}

// fill reads more input, keeping buf[keep:] (moved to the front); it
// returns how far the kept bytes moved, and false once the input ended.
func (s *jsonStream) fill(keep int) (int, bool) {
	if s.rerr != nil {
		return 0, false
	}
	n := copy(s.buf[:cap(s.buf)], s.buf[keep:])
	s.buf = s.buf[:n]
	s.pos -= keep
	if len(s.buf) == cap(s.buf) {
		// Double, but not far past what the value being read may hold:
		// a feature at feature_bytes then costs that, not twice that.
		n := 2 * cap(s.buf)
		if s.maxBuf > int64(cap(s.buf)) && int64(n) > s.maxBuf {
			n = int(s.maxBuf)
		}
		grown := make([]byte, len(s.buf), n)
		copy(grown, s.buf)
		s.buf = grown
	}
	for {
		m, err := s.r.Read(s.buf[len(s.buf):cap(s.buf)])
		s.buf = s.buf[:len(s.buf)+m]
		if err != nil {
			s.rerr = err
		}
		if m > 0 || err != nil {
			return keep, m > 0
		}
	}
}

// peek skips whitespace and returns the next byte without consuming it;
// io.EOF at the end of the input.
func (s *jsonStream) peek() (byte, error) {
	for {
		if s.pos = jsonscan.SkipWS(s.buf, s.pos); s.pos < len(s.buf) {
			return s.buf[s.pos], nil
		}
		if _, ok := s.fill(s.pos); !ok {
			return 0, s.endErr()
		}
	}
}

// endErr is why the input ended: io.EOF, or the read error.
func (s *jsonStream) endErr() error {
	if s.rerr == nil {
		return io.EOF
	}
	return s.rerr
}

// expect consumes c, the next non-space byte.
func (s *jsonStream) expect(c byte) error {
	got, err := s.peek()
	if err != nil {
		return unexpectedEnd(err)
	}
	if got != c {
		return fmt.Errorf("unexpected %q, want %q", got, c)
	}
	s.pos++
	return nil
}

// value returns the bytes of the next value, checked with validJSON; they
// stay valid until the next call. The value may not exceed maxLen bytes, nor
// any string or scalar token in it s.maxToken bytes (0: no bound): the
// check runs before each refill, so a 2 GB string costs the buffer a few
// times the bound, never the string. Exceeding either is a *LimitError
// (feature_bytes, value_bytes) whose Where the caller fills in.
func (s *jsonStream) value(maxLen int64) ([]byte, error) {
	if _, err := s.peek(); err != nil {
		return nil, unexpectedEnd(err)
	}
	s.maxBuf = 0
	if maxLen > 0 {
		s.maxBuf = maxLen + 64<<10 // the value, and a read's worth beyond it
	}
	sc := valueScan{maxLen: maxLen, start: s.pos, i: s.pos, scalarStart: -1}
	if err := s.findValueEnd(&sc); err != nil {
		return nil, err
	}
	if err := s.checkBounds(&sc); err != nil {
		return nil, err
	}
	v := s.buf[sc.start:sc.i]
	s.pos = sc.i
	if err := validJSON(v); err != nil {
		return nil, err
	}
	return v, nil
}

// valueScan is value's place in s.buf while it looks for the end of one
// value. A refill moves the bytes kept to the front, and every offset here
// with them.
type valueScan struct {
	maxLen      int64 // bound on the value's length; 0: none
	start       int   // the value's first byte
	i           int   // the next byte to scan
	depth       int   // objects and arrays open
	inString    bool  // i is inside the string opened at strStart
	strStart    int   // the opening quote of the last string
	scalarStart int   // the first byte of the scalar being scanned; -1: none
}

// findValueEnd moves sc.i just past the value that starts at sc.start: past
// the closing byte of a string or container, or up to the delimiter that
// ends a scalar. It only finds where the value ends; validJSON checks its
// grammar.
func (s *jsonStream) findValueEnd(sc *valueScan) error {
	for {
		if sc.i == len(s.buf) {
			ok, err := s.refillValue(sc)
			if err != nil {
				return err
			}
			if !ok {
				if sc.depth == 0 && sc.i > sc.start {
					return nil // a number or literal that ends the input
				}
				return unexpectedEnd(s.endErr())
			}
			continue
		}
		if sc.depth > 0 {
			if done, err := s.scanContainer(sc); done || err != nil {
				return err
			}
			continue
		}
		c := s.buf[sc.i]
		if sc.depth == 0 && sc.i > sc.start {
			// A scalar ends at a delimiter.
			if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				return nil
			}
			sc.i++
			continue
		}
		switch c {
		case '"', '{', '[', '}', ']', ',', ':', ' ', '\t', '\n', '\r':
			if sc.scalarStart >= 0 {
				if s.maxToken > 0 && int64(sc.i-sc.scalarStart) > s.maxToken {
					return s.tokenTooLong()
				}
				sc.scalarStart = -1
			}
		default:
			if sc.scalarStart < 0 {
				sc.scalarStart = sc.i
			}
		}
		switch c {
		case '"':
			if err := s.findStringEnd(sc); err != nil {
				return err
			}
			if sc.depth == 0 {
				return nil
			}
			continue
		case '{', '[':
			sc.depth++
		case '}', ']':
			sc.depth--
			if sc.depth < 0 {
				return fmt.Errorf("unexpected %q", c)
			}
		}
		sc.i++
		if sc.depth == 0 && (c == '}' || c == ']') {
			return nil
		}
	}
}

// delimiter marks the bytes that end a scalar token inside a value
// (findValueEnd's delimiters); every other byte outside a string is part
// of one.
var delimiter = [256]bool{'"': true, '{': true, '[': true, '}': true, ']': true, ',': true, ':': true, ' ': true, '\t': true, '\n': true, '\r': true}

// scanContainer is findValueEnd inside an open container (sc.depth > 0),
// its hot loop: the place kept in locals, a scalar's bytes skipped by a
// table lookup each. It returns at the end of the buffer (done false: the
// caller refills) or when the outermost container closes (done true).
func (s *jsonStream) scanContainer(sc *valueScan) (done bool, err error) {
	buf, i, depth, scalarStart := s.buf, sc.i, sc.depth, sc.scalarStart
	for i < len(buf) {
		c := buf[i]
		if !delimiter[c] {
			if scalarStart < 0 {
				scalarStart = i
			}
			i++
			continue
		}
		if scalarStart >= 0 {
			if s.maxToken > 0 && int64(i-scalarStart) > s.maxToken {
				sc.i = i
				return false, s.tokenTooLong()
			}
			scalarStart = -1
		}
		switch c {
		case '"':
			sc.i, sc.depth, sc.scalarStart = i, depth, -1
			if err := s.findStringEnd(sc); err != nil {
				return false, err
			}
			buf, i = s.buf, sc.i
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				sc.i, sc.depth, sc.scalarStart = i+1, 0, -1
				return true, nil
			}
		}
		i++
	}
	sc.i, sc.depth, sc.scalarStart = i, depth, scalarStart
	return false, nil
}

// findStringEnd moves sc.i just past the string whose opening quote is at
// sc.i. An escape and the byte after it are read together (a refill keeps
// them together too), so an escaped quote never ends the string.
func (s *jsonStream) findStringEnd(sc *valueScan) error {
	sc.inString, sc.strStart = true, sc.i
	buf, i := s.buf, sc.i+1
	for {
		for i < len(buf) && buf[i] != '"' && buf[i] != '\\' {
			i++
		}
		switch {
		case i < len(buf) && buf[i] == '"':
			sc.i, sc.inString = i+1, false
			if s.maxToken > 0 && int64(i-sc.strStart-1) > s.maxToken {
				return s.tokenTooLong()
			}
			return nil
		case i+1 < len(buf): // an escape, and the byte it escapes
			i += 2
			continue
		}
		// The buffer ends inside the string, or between an escape and its byte.
		sc.i = i
		ok, err := s.refillValue(sc)
		if err != nil {
			return err
		}
		if !ok {
			return unexpectedEnd(s.endErr())
		}
		buf, i = s.buf, sc.i
	}
}

// refillValue reads more input, keeping the value from sc.start (moved to
// the front, sc's offsets with it); false once the input ended. It first
// checks the bounds, so that a value or token past its bound is refused
// before the buffer grows for more of it.
func (s *jsonStream) refillValue(sc *valueScan) (bool, error) {
	if err := s.checkBounds(sc); err != nil {
		return false, err
	}
	moved, ok := s.fill(sc.start)
	sc.i -= moved
	sc.strStart -= moved
	if sc.scalarStart >= 0 {
		sc.scalarStart -= moved
	}
	sc.start = 0
	return ok, nil
}

// checkBounds fails when the value scanned so far exceeds sc.maxLen, or the
// string (from sc.strStart, its quote) or the scalar (from sc.scalarStart)
// being scanned at sc.i exceeds s.maxToken.
func (s *jsonStream) checkBounds(sc *valueScan) error {
	if sc.maxLen > 0 && int64(sc.i-sc.start) > sc.maxLen {
		return &feature.LimitError{Name: "feature_bytes", Max: sc.maxLen}
	}
	if s.maxToken <= 0 {
		return nil
	}
	n := 0
	if sc.inString {
		n = sc.i - sc.strStart - 1
	} else if sc.scalarStart >= 0 {
		n = sc.i - sc.scalarStart
	}
	if int64(n) > s.maxToken {
		return s.tokenTooLong()
	}
	return nil
}

// tokenTooLong is the error for a string or scalar longer than s.maxToken.
func (s *jsonStream) tokenTooLong() error {
	return &feature.LimitError{Name: "value_bytes", Max: s.maxToken}
}

func unexpectedEnd(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// errSyntax reports invalid JSON.
type errSyntax struct {
	offset int
	msg    string
}

func (e *errSyntax) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.offset, e.msg)
}

// maxJSONDepth is encoding/json's nesting limit.
const maxJSONDepth = 10000

// validJSON checks that b is exactly one JSON value (whitespace around it
// allowed), as json.Valid does.
func validJSON(b []byte) error {
	v := jsonValidator{b: b}
	v.space()
	if err := v.value(0); err != nil {
		return err
	}
	v.space()
	if v.i != len(b) {
		return v.fail("data after the value")
	}
	return nil
}

type jsonValidator struct {
	b []byte
	i int
}

func (v *jsonValidator) fail(msg string) error { return &errSyntax{offset: v.i, msg: msg} }

func (v *jsonValidator) space() { v.i = jsonscan.SkipWS(v.b, v.i) }

func (v *jsonValidator) value(depth int) error {
	if v.i >= len(v.b) {
		return io.ErrUnexpectedEOF
	}
	switch c := v.b[v.i]; {
	case c == '{' || c == '[':
		if depth >= maxJSONDepth {
			return v.fail("nested too deeply")
		}
		return v.container(depth + 1)
	case c == '"':
		return v.string()
	case c == '-' || ('0' <= c && c <= '9'):
		return v.number()
	case c == 't':
		return v.literal("true")
	case c == 'f':
		return v.literal("false")
	case c == 'n':
		return v.literal("null")
	default:
		return v.fail(fmt.Sprintf("unexpected %q", c))
	}
}

// container checks an object or array; the opening bracket is at i.
func (v *jsonValidator) container(depth int) error {
	object := v.b[v.i] == '{'
	closing := byte(']')
	if object {
		closing = '}'
	}
	v.i++
	v.space()
	if v.i < len(v.b) && v.b[v.i] == closing {
		v.i++
		return nil
	}
	for {
		v.space()
		if object {
			if v.i >= len(v.b) || v.b[v.i] != '"' {
				return v.fail("object key must be a string")
			}
			if err := v.string(); err != nil {
				return err
			}
			v.space()
			if v.i >= len(v.b) || v.b[v.i] != ':' {
				return v.fail("missing ':' after object key")
			}
			v.i++
			v.space()
		}
		if err := v.value(depth); err != nil {
			return err
		}
		v.space()
		if v.i >= len(v.b) {
			return io.ErrUnexpectedEOF
		}
		switch v.b[v.i] {
		case ',':
			v.i++
		case closing:
			v.i++
			return nil
		default:
			return v.fail(fmt.Sprintf("unexpected %q", v.b[v.i]))
		}
	}
}

func (v *jsonValidator) string() error {
	v.i++ // "
	for v.i < len(v.b) {
		switch c := v.b[v.i]; {
		case c == '"':
			v.i++
			return nil
		case c == '\\':
			if v.i+1 >= len(v.b) {
				return io.ErrUnexpectedEOF
			}
			switch v.b[v.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				v.i += 2
			case 'u':
				if v.i+6 > len(v.b) {
					return io.ErrUnexpectedEOF
				}
				for _, h := range v.b[v.i+2 : v.i+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return v.fail("invalid \\u escape")
					}
				}
				v.i += 6
			default:
				return v.fail("invalid escape")
			}
		case c < 0x20:
			return v.fail("control character in string")
		default:
			v.i++
		}
	}
	return io.ErrUnexpectedEOF
}

func (v *jsonValidator) number() error {
	if v.b[v.i] == '-' {
		v.i++
	}
	if v.i >= len(v.b) {
		return io.ErrUnexpectedEOF
	}
	switch {
	case v.b[v.i] == '0':
		v.i++
	case '1' <= v.b[v.i] && v.b[v.i] <= '9':
		v.digits()
	default:
		return v.fail("invalid number")
	}
	if v.i < len(v.b) && v.b[v.i] == '.' {
		v.i++
		if v.digits() == 0 {
			return v.fail("invalid number")
		}
	}
	if v.i < len(v.b) && (v.b[v.i] == 'e' || v.b[v.i] == 'E') {
		v.i++
		if v.i < len(v.b) && (v.b[v.i] == '+' || v.b[v.i] == '-') {
			v.i++
		}
		if v.digits() == 0 {
			return v.fail("invalid number")
		}
	}
	return nil
}

func (v *jsonValidator) digits() int {
	start := v.i
	for v.i < len(v.b) && '0' <= v.b[v.i] && v.b[v.i] <= '9' {
		v.i++
	}
	return v.i - start
}

func (v *jsonValidator) literal(lit string) error {
	if len(v.b)-v.i < len(lit) {
		return io.ErrUnexpectedEOF
	}
	if string(v.b[v.i:v.i+len(lit)]) != lit {
		return v.fail("invalid literal")
	}
	v.i += len(lit)
	return nil
}
