package schema

import (
	"encoding/json"
	"fmt"
)

// scanObject reads the top level of the JSON object in and calls fn for
// each member with its name and the kind of its value. Written by hand
// because it runs for every staged feature: it classifies values without
// building them (no allocation but for keys), and skips nested ones.
func scanObject(in []byte, fn func(name []byte, k ValueKind, outOfDouble bool)) error {
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
		k, ood, err := s.value()
		if err != nil {
			return err
		}
		fn(name, k, ood)
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

// value classifies and skips one value.
func (s *scanner) value() (ValueKind, bool, error) {
	if s.pos >= len(s.in) {
		return 0, false, s.errorf("unexpected end")
	}
	switch c := s.in[s.pos]; {
	case c == '"':
		raw, escaped, err := s.str()
		if err != nil {
			return 0, false, err
		}
		if escaped {
			return KString, false, nil
		}
		body := raw[1 : len(raw)-1]
		if len(body) == 0 || !(body[0] == '-' || body[0] == 't' || body[0] == 'f' || (body[0] >= '0' && body[0] <= '9')) {
			return KString, false, nil // StringKind's first test, without a string
		}
		str := string(body)
		k := StringKind(str)
		if k == KStrNum {
			// A declared double reads it: it may not fit.
			_, ood := NumberKind(str)
			return k, ood, nil
		}
		return k, false, nil
	case c == 'n':
		return KNull, false, s.word("null")
	case c == 't':
		return KBool, false, s.word("true")
	case c == 'f':
		return KBool, false, s.word("false")
	case c == '-' || (c >= '0' && c <= '9'):
		start := s.pos
		for s.pos < len(s.in) {
			c := s.in[s.pos]
			if !(c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' || (c >= '0' && c <= '9')) {
				break
			}
			s.pos++
		}
		k, ood := NumberKind(string(s.in[start:s.pos]))
		return k, ood, nil
	case c == '{' || c == '[':
		return KNested, false, s.skipNested()
	}
	return 0, false, s.errorf("unexpected %q", s.in[s.pos])
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
