package crs

import (
	"fmt"
	"strconv"
	"strings"
)

// node is one WKT element: KEYWORD[arg, …], each arg a quoted text, a
// number (kept as its text), a bare word (AXIS["X",EAST]) or a node.
type node struct {
	kw   string // upper case
	args []any  // string (quoted), word, float64, *node
}

// word is an unquoted WKT token that is not a number.
type word string

// maxDepth bounds the nesting a WKT may have: a CRS needs about 6, and a
// hostile file cannot make the parser recurse without end.
const maxDepth = 32

// parseWKT reads a WKT 1 or WKT 2 text (brackets or parentheses) into its
// root node.
func parseWKT(s string) (*node, error) {
	p := &parser{s: strings.TrimSpace(strings.TrimPrefix(s, "\ufeff"))}
	n, err := p.node(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i < len(p.s) && strings.TrimRight(p.s[p.i:], "\x00 \t\r\n") != "" {
		return nil, fmt.Errorf("text after the WKT's end at byte %d", p.i)
	}
	return n, nil
}

type parser struct {
	s string
	i int
}

func (p *parser) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *parser) ident() string {
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			p.i++
			continue
		}
		break
	}
	return p.s[start:p.i]
}

func (p *parser) node(depth int) (*node, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxDepth)
	}
	p.space()
	kw := p.ident()
	if kw == "" {
		return nil, fmt.Errorf("no keyword at byte %d", p.i)
	}
	p.space()
	if p.i >= len(p.s) || (p.s[p.i] != '[' && p.s[p.i] != '(') {
		return nil, fmt.Errorf("%s at byte %d has no [", kw, p.i)
	}
	closer := byte(']')
	if p.s[p.i] == '(' {
		closer = ')'
	}
	p.i++
	n := &node{kw: strings.ToUpper(kw)}
	for {
		p.space()
		if p.i >= len(p.s) {
			return nil, fmt.Errorf("%s is not closed", n.kw)
		}
		switch c := p.s[p.i]; {
		case c == closer && len(n.args) == 0:
			p.i++
			return n, nil
		case c == '"':
			end := p.i + 1
			var b strings.Builder
			for ; end < len(p.s); end++ {
				if p.s[end] == '"' {
					if end+1 < len(p.s) && p.s[end+1] == '"' { // "" inside a text
						b.WriteByte('"')
						end++
						continue
					}
					break
				}
				b.WriteByte(p.s[end])
			}
			if end >= len(p.s) {
				return nil, fmt.Errorf("a text in %s is not closed", n.kw)
			}
			p.i = end + 1
			n.args = append(n.args, b.String())
		case c == '-' || c == '+' || c == '.' || c >= '0' && c <= '9':
			start := p.i
			for p.i < len(p.s) && strings.IndexByte("+-.0123456789eE", p.s[p.i]) >= 0 {
				p.i++
			}
			f, err := strconv.ParseFloat(p.s[start:p.i], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %q is not a number", n.kw, p.s[start:p.i])
			}
			n.args = append(n.args, f)
		default:
			save := p.i
			id := p.ident()
			if id == "" {
				return nil, fmt.Errorf("%s: unexpected %q at byte %d", n.kw, c, p.i)
			}
			p.space()
			if p.i < len(p.s) && (p.s[p.i] == '[' || p.s[p.i] == '(') {
				p.i = save
				child, err := p.node(depth + 1)
				if err != nil {
					return nil, err
				}
				n.args = append(n.args, child)
			} else {
				n.args = append(n.args, word(id))
			}
		}
		p.space()
		if p.i >= len(p.s) {
			return nil, fmt.Errorf("%s is not closed", n.kw)
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case closer:
			p.i++
			return n, nil
		default:
			return nil, fmt.Errorf("%s: unexpected %q at byte %d", n.kw, p.s[p.i], p.i)
		}
	}
}

// name is the node's first argument when it is a text.
func (n *node) name() string {
	if n != nil && len(n.args) > 0 {
		if s, ok := n.args[0].(string); ok {
			return s
		}
	}
	return ""
}

// num is the node's i-th argument as a number (ok false when it is not).
func (n *node) num(i int) (float64, bool) {
	if n == nil || i >= len(n.args) {
		return 0, false
	}
	f, ok := n.args[i].(float64)
	return f, ok
}

// child is the node's first child with one of the keywords.
func (n *node) child(kws ...string) *node {
	if n == nil {
		return nil
	}
	for _, a := range n.args {
		if c, ok := a.(*node); ok {
			for _, kw := range kws {
				if c.kw == kw {
					return c
				}
			}
		}
	}
	return nil
}

// children are the node's children with the keyword.
func (n *node) children(kw string) []*node {
	var out []*node
	for _, a := range n.args {
		if c, ok := a.(*node); ok && c.kw == kw {
			out = append(out, c)
		}
	}
	return out
}

// authority is the node's own AUTHORITY["EPSG","n"] (WKT 1) or
// ID["EPSG",n] (WKT 2): its authority, upper case, and code.
func (n *node) authority() (string, string) {
	a := n.child("AUTHORITY", "ID")
	if a == nil || len(a.args) < 2 {
		return "", ""
	}
	auth, _ := a.args[0].(string)
	switch c := a.args[1].(type) {
	case string:
		return strings.ToUpper(auth), strings.TrimSpace(c)
	case float64:
		return strings.ToUpper(auth), strconv.FormatFloat(c, 'f', -1, 64)
	}
	return "", ""
}
