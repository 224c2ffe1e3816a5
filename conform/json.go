package conform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// ApplyJSON is Apply on a feature's properties as a JSON object (as a
// store keeps them), writing the layer's columns to out in the order of
// Columns; out must have room for them. It gives what decoding props with
// json.Number for numbers and calling Apply gives, without building a map
// of every property: only the properties the conform reads are decoded.
// Empty props or null are no properties.
func (c *Conform) ApplyJSON(props []byte, out []string) error {
	r := row{vals: make([]string, len(c.slots)), set: make([]bool, len(c.slots))}
	ok := json.Valid(props)
	if ok {
		var err error
		if ok, err = c.scanJSON(props, &r); err != nil {
			return err
		}
	}
	if !ok {
		// Not valid JSON, or escapes in a name: the decoder decides, with
		// its own errors and its own repairs.
		m := map[string]any{}
		if t := bytes.TrimSpace(props); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
			d := json.NewDecoder(bytes.NewReader(t))
			d.UseNumber()
			if err := d.Decode(&m); err != nil {
				return err
			}
		}
		r = row{vals: make([]string, len(c.slots)), set: make([]bool, len(c.slots))}
		for i, name := range c.slots {
			v, ok := m[name]
			if !ok {
				continue
			}
			s, err := pyStr(v)
			if err != nil {
				return &Error{Msg: fmt.Sprintf("property %q holds %s", name, err)}
			}
			r.put(i, s)
		}
	}
	return c.run(&r, func(i int, v string) { out[i] = v })
}

// scanJSON fills r from the members the conform reads of props, valid
// JSON, in one pass, and reports whether it could: false for anything but
// an object (or null) whose member names are plain (no escapes, valid
// UTF-8), which ApplyJSON leaves to the decoder. A member the conform reads
// that holds an object or an array is Apply's error.
func (c *Conform) scanJSON(props []byte, r *row) (bool, error) {
	s := jsonScanner{b: props}
	s.space()
	if s.i == len(s.b) {
		return true, nil
	}
	if bytes.Equal(bytes.TrimSpace(s.b[s.i:]), []byte("null")) {
		return true, nil
	}
	if !s.eat('{') {
		return false, nil
	}
	s.space()
	if s.eat('}') {
		return s.end(), nil
	}
	for {
		s.space()
		name, ok := s.plainString()
		if !ok {
			return false, nil
		}
		s.space()
		if !s.eat(':') {
			return false, nil
		}
		s.space()
		start := s.i
		if !s.value() {
			return false, nil
		}
		if slot, read := c.slotOf[string(name)]; read {
			v, err := jsonScalar(s.b[start:s.i])
			if err != nil {
				return true, &Error{Msg: fmt.Sprintf("property %q holds %s", name, err)}
			}
			r.put(slot, v)
		}
		s.space()
		if s.eat('}') {
			return s.end(), nil
		}
		if !s.eat(',') {
			return false, nil
		}
	}
}

// jsonScalar is pyStr of one valid JSON value as the decoder would give
// it (a string's escapes decoded and its invalid UTF-8 replaced).
func jsonScalar(v []byte) (string, error) {
	switch v[0] {
	case '"':
		if bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v) {
			return string(v[1 : len(v)-1]), nil
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", err
		}
		return s, nil
	case 'n':
		return "", nil
	case 't':
		return "True", nil
	case 'f':
		return "False", nil
	case '{':
		return pyStr(map[string]any{})
	case '[':
		return pyStr([]any{})
	}
	return pyStr(json.Number(v))
}

// jsonScanner walks a valid JSON text a member at a time: it only finds
// where each value ends.
type jsonScanner struct {
	b []byte
	i int
}

func (s *jsonScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *jsonScanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// end reports whether only white space follows.
func (s *jsonScanner) end() bool {
	s.space()
	return s.i == len(s.b)
}

// plainString reads a string without escapes and returns its contents.
func (s *jsonScanner) plainString() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			name := s.b[start : s.i-1]
			return name, utf8.Valid(name)
		case c == '\\':
			return nil, false
		}
		s.i++
	}
	return nil, false
}

// value skips one value: a string, a number, a literal, or an object or
// array (its strings skipped whole, so that brackets in them do not
// count).
func (s *jsonScanner) value() bool {
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		return s.skipString()
	case c == '{' || c == '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if !s.skipString() {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		for s.i < len(s.b) && isNumberByte(s.b[s.i]) {
			s.i++
		}
		return true
	}
	return false
}

func (s *jsonScanner) skipString() bool {
	s.i++ // the opening quote
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return true
		case c == '\\':
			s.i += 2
			continue
		}
		s.i++
	}
	return false
}

func isNumberByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

func (s *jsonScanner) literal(word string) bool {
	if bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		s.i += len(word)
		return true
	}
	return false
}
