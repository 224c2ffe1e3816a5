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
	start := s.pos
	i, depth, inString := s.pos, 0, false
	strStart, scalarStart := 0, -1 // of the string or scalar being scanned
	s.maxBuf = 0
	if maxLen > 0 {
		s.maxBuf = maxLen + 64<<10 // the value, and a read's worth beyond it
	}
	refill := func() (bool, error) {
		if maxLen > 0 && int64(i-start) > maxLen {
			return false, &feature.LimitError{Name: "feature_bytes", Max: maxLen}
		}
		if err := s.checkToken(inString, strStart, scalarStart, i); err != nil {
			return false, err
		}
		moved, ok := s.fill(start)
		i -= moved
		strStart -= moved
		if scalarStart >= 0 {
			scalarStart -= moved
		}
		start = 0
		return ok, nil
	}
	for {
		if i == len(s.buf) {
			ok, err := refill()
			if err != nil {
				return nil, err
			}
			if !ok {
				if depth == 0 && !inString && i > start {
					break // a number or literal that ends the input
				}
				return nil, unexpectedEnd(s.endErr())
			}
			continue
		}
		c := s.buf[i]
		if inString {
			switch c {
			case '\\':
				if i+1 == len(s.buf) {
					// Keep the escape and its next byte together.
					ok, err := refill()
					if err != nil {
						return nil, err
					}
					if !ok {
						return nil, unexpectedEnd(s.endErr())
					}
					continue
				}
				i += 2
				continue
			case '"':
				inString = false
				if s.maxToken > 0 && int64(i-strStart-1) > s.maxToken {
					return nil, &feature.LimitError{Name: "value_bytes", Max: s.maxToken}
				}
			}
			i++
			if !inString && depth == 0 {
				break
			}
			continue
		}
		if depth == 0 && i > start {
			// A scalar ends at a delimiter.
			if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				break
			}
			i++
			continue
		}
		switch c {
		case '"', '{', '[', '}', ']', ',', ':', ' ', '\t', '\n', '\r':
			if scalarStart >= 0 {
				if s.maxToken > 0 && int64(i-scalarStart) > s.maxToken {
					return nil, &feature.LimitError{Name: "value_bytes", Max: s.maxToken}
				}
				scalarStart = -1
			}
		default:
			if scalarStart < 0 {
				scalarStart = i
			}
		}
		switch c {
		case '"':
			inString, strStart = true, i
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("unexpected %q", c)
			}
		}
		i++
		if depth == 0 && !inString && (c == '}' || c == ']') {
			break
		}
	}
	if maxLen > 0 && int64(i-start) > maxLen {
		return nil, &feature.LimitError{Name: "feature_bytes", Max: maxLen}
	}
	if err := s.checkToken(false, 0, scalarStart, i); err != nil {
		return nil, err
	}
	v := s.buf[start:i]
	s.pos = i
	if err := validJSON(v); err != nil {
		return nil, err
	}
	return v, nil
}

// checkToken fails when the string (from strStart, its quote) or the scalar
// (from scalarStart, -1 when none) being scanned at i exceeds s.maxToken.
func (s *jsonStream) checkToken(inString bool, strStart, scalarStart, i int) error {
	if s.maxToken <= 0 {
		return nil
	}
	n := 0
	if inString {
		n = i - strStart - 1
	} else if scalarStart >= 0 {
		n = i - scalarStart
	}
	if int64(n) > s.maxToken {
		return &feature.LimitError{Name: "value_bytes", Max: s.maxToken}
	}
	return nil
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
