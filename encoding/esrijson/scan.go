package esrijson

import (
	"encoding/json"
	"errors"

	"github.com/ingestd/ingestd/internal/jsonscan"
)

// The reader's json.Decoder has validated every feature before these run,
// so they only split valid JSON text; they still check their bounds, so
// that no input can make them panic. They spare encoding/json's second and
// third passes (reflection, float parsing through interfaces), which were
// most of the decoder's time.

var errScan = errors.New("malformed JSON")

// stringEnd returns the index just past the string starting at b[i] == '"'.
func stringEnd(b []byte, i int) (int, bool) {
	escaped := false
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped
		}
	}
	return -1, escaped
}

// valueEnd returns the index just past the value starting at b[i].
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		end, _ := stringEnd(b, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, _ := stringEnd(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return j
		}
		j++
	}
	return j
}

// eachMember calls fn with the raw key (quotes included) and raw value of
// every member of the JSON object obj, in order.
func eachMember(obj []byte, fn func(key, val []byte) error) error {
	i := jsonscan.SkipWS(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return errScan
	}
	i = jsonscan.SkipWS(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return nil
	}
	for {
		if i >= len(obj) || obj[i] != '"' {
			return errScan
		}
		kend, _ := stringEnd(obj, i)
		if kend < 0 {
			return errScan
		}
		key := obj[i:kend]
		i = jsonscan.SkipWS(obj, kend)
		if i >= len(obj) || obj[i] != ':' {
			return errScan
		}
		i = jsonscan.SkipWS(obj, i+1)
		vend := valueEnd(obj, i)
		if vend < 0 || vend == i {
			return errScan
		}
		if err := fn(key, obj[i:vend]); err != nil {
			return err
		}
		i = jsonscan.SkipWS(obj, vend)
		if i >= len(obj) {
			return errScan
		}
		switch obj[i] {
		case ',':
			i = jsonscan.SkipWS(obj, i+1)
		case '}':
			return nil
		default:
			return errScan
		}
	}
}

// keyString is the text of a raw JSON string (quotes included).
func keyString(raw []byte) string {
	if len(raw) >= 2 {
		inner := raw[1 : len(raw)-1]
		plain := true
		for _, c := range inner {
			if c == '\\' {
				plain = false
				break
			}
		}
		if plain {
			return string(inner)
		}
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// numbers parses nested arrays of numbers, depth deep (1: [x,y,…], 2: a
// list of positions, 3: a list of those), appending every number to flat
// and, per position, its count to counts and, per level-2 list, its number
// of positions to sizes. ok is false at anything else (null, a curve
// object, a string): the caller then takes encoding/json's slow path, for
// a precise message.
type numberParser struct {
	b      []byte
	i      int
	flat   []float64
	counts []int // values per position
	sizes  []int // positions per list (depth 3)
}

func (p *numberParser) expect(c byte) bool {
	p.i = jsonscan.SkipWS(p.b, p.i)
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// list parses '[' elem (',' elem)* ']' or '[]'.
func (p *numberParser) list(elem func() bool) bool {
	if !p.expect('[') {
		return false
	}
	p.i = jsonscan.SkipWS(p.b, p.i)
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return true
	}
	for {
		if !elem() {
			return false
		}
		p.i = jsonscan.SkipWS(p.b, p.i)
		if p.i >= len(p.b) {
			return false
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return true
		default:
			return false
		}
	}
}

// number reads one coordinate; a number beyond float64 sends the geometry
// to the slow path, whose encoding/json refuses it with a precise message.
func (p *numberParser) number() bool {
	p.i = jsonscan.SkipWS(p.b, p.i)
	v, end, err := jsonscan.Number(p.b, p.i)
	if err != nil {
		return false
	}
	p.flat = append(p.flat, v)
	p.i = end
	return true
}

func (p *numberParser) position() bool {
	before := len(p.flat)
	if !p.list(p.number) {
		return false
	}
	p.counts = append(p.counts, len(p.flat)-before)
	return true
}

func (p *numberParser) positions() bool {
	before := len(p.counts)
	if !p.list(p.position) {
		return false
	}
	p.sizes = append(p.sizes, len(p.counts)-before)
	return true
}

// fastPositions parses a list of positions, nil when the slow path must.
func fastPositions(raw []byte) [][]float64 {
	p := numberParser{b: raw}
	if !p.positions() || jsonscan.SkipWS(raw, p.i) != len(raw) {
		return nil
	}
	return p.split(p.counts)
}

// fastParts parses a list of position lists, nil when the slow path must.
func fastParts(raw []byte) [][][]float64 {
	p := numberParser{b: raw}
	if !p.list(p.positions) || jsonscan.SkipWS(raw, p.i) != len(raw) {
		return nil
	}
	all := p.split(p.counts)
	out := make([][][]float64, len(p.sizes))
	k := 0
	for i, n := range p.sizes {
		out[i] = all[k : k+n : k+n]
		k += n
	}
	return out
}

// split cuts p.flat into positions of counts values.
func (p *numberParser) split(counts []int) [][]float64 {
	out := make([][]float64, len(counts))
	k := 0
	for i, n := range counts {
		out[i] = p.flat[k : k+n : k+n]
		k += n
	}
	if out == nil {
		out = [][]float64{}
	}
	return out
}
