package schema

import (
	"encoding/json"
	"fmt"
)

// scanObject reads the top level of the JSON object in and calls fn for
// each member with its name and the kind of its value. Written by hand
// because it runs for every staged feature: it classifies values without
// building them (no allocation but for keys), and skips nested ones.
func scanObject(in []byte, fn func(name []byte, v scanned)) error {
	s := scanner{in: in}
	s.space()
	if !s.eat('{') {
		return ErrNotObject
	}
	s.space()
	if s.eat('}') {
		return s.end()
	}
	for {
		s.space()
		raw, escaped, err := s.str()
		if err != nil {
			return err
		}
		name := raw[1 : len(raw)-1]
		if escaped {
			var unq string
			if err := json.Unmarshal(raw, &unq); err != nil {
				return s.errorf("bad key: %v", err)
			}
			name = []byte(unq)
		}
		s.space()
		if !s.eat(':') {
			return s.errorf("expected ':'")
		}
		s.space()
		v, err := s.value()
		if err != nil {
			return err
		}
		fn(name, v)
		s.space()
		if s.eat(',') {
			continue
		}
		if s.eat('}') {
			return s.end()
		}
		return s.errorf("expected ',' or '}'")
	}
}

type scanner struct {
	in  []byte
	pos int
}

func (s *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("schema: properties at byte %d: %s", s.pos, fmt.Sprintf(format, args...))
}

func (s *scanner) end() error {
	s.space()
	if s.pos != len(s.in) {
		return s.errorf("unexpected data after the object")
	}
	return nil
}

func (s *scanner) space() {
	for s.pos < len(s.in) {
		switch s.in[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *scanner) eat(c byte) bool {
	if s.pos < len(s.in) && s.in[s.pos] == c {
		s.pos++
		return true
	}
	return false
}

// str reads a string and returns it with its quotes, and whether it holds
// an escape.
func (s *scanner) str() ([]byte, bool, error) {
	if !s.eat('"') {
		return nil, false, s.errorf("expected a string")
	}
	start, escaped := s.pos-1, false
	for s.pos < len(s.in) {
		switch c := s.in[s.pos]; {
		case c == '"':
			s.pos++
			return s.in[start:s.pos], escaped, nil
		case c == '\\':
			escaped = true
			s.pos += 2
		case c < 0x20:
			return nil, false, s.errorf("control character in a string")
		default:
			s.pos++
		}
	}
	return nil, false, s.errorf("unterminated string")
}

// scanned is what the scanner tells of one value: its kind, whether
// double precision cannot hold it (a number, or a string a declared double
// reads), and for a JSON number its class for double precision
// (numberClass; notANumber for any other value).
type scanned struct {
	kind        ValueKind
	outOfDouble bool
	class       int32
}

// value classifies and skips one value.
func (s *scanner) value() (scanned, error) {
	if s.pos >= len(s.in) {
		return scanned{}, s.errorf("unexpected end")
	}
	str := func(k ValueKind) scanned { return scanned{kind: k, class: notANumber} }
	switch c := s.in[s.pos]; {
	case c == '"':
		raw, escaped, err := s.str()
		if err != nil {
			return scanned{}, err
		}
		if escaped {
			return str(KString), nil
		}
		body := raw[1 : len(raw)-1]
		if len(body) == 0 || !(body[0] == '-' || body[0] == 't' || body[0] == 'f' || (body[0] >= '0' && body[0] <= '9')) {
			return str(KString), nil // StringKind's first test, without a string
		}
		text := string(body)
		v := str(StringKind(text))
		if v.kind == KStrNum {
			// A declared double reads it: it may not fit.
			_, v.outOfDouble = NumberKind(text)
		}
		return v, nil
	case c == 'n':
		return str(KNull), s.word("null")
	case c == 't':
		return str(KBool), s.word("true")
	case c == 'f':
		return str(KBool), s.word("false")
	case c == '-' || (c >= '0' && c <= '9'):
		start := s.pos
		for s.pos < len(s.in) {
			c := s.in[s.pos]
			if !(c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' || (c >= '0' && c <= '9')) {
				break
			}
			s.pos++
		}
		lit := string(s.in[start:s.pos])
		k, ood := NumberKind(lit)
		class := numberClass(lit)
		if ood {
			class = wideForDouble
		}
		return scanned{kind: k, outOfDouble: ood, class: class}, nil
	case c == '{' || c == '[':
		return str(KNested), s.skipNested()
	}
	return scanned{}, s.errorf("unexpected %q", s.in[s.pos])
}

func (s *scanner) word(w string) error {
	if len(s.in)-s.pos < len(w) || string(s.in[s.pos:s.pos+len(w)]) != w {
		return s.errorf("expected %s", w)
	}
	s.pos += len(w)
	return nil
}

// skipNested skips an object or array, strings included, by depth.
func (s *scanner) skipNested() error {
	depth := 0
	for s.pos < len(s.in) {
		switch s.in[s.pos] {
		case '"':
			if _, _, err := s.str(); err != nil {
				return err
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				s.pos++
				return nil
			}
		}
		s.pos++
	}
	return s.errorf("unterminated object or array")
}
