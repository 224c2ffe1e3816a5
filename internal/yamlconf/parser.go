package yamlconf

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Parser collects the errors and warnings of one file's walk. Its zero
// value reports in the name of no file and expands no variable.
type Parser struct {
	// File is the config file's path, in every message.
	File string
	// Env looks up variables for ${VAR} in string values; nil means none
	// are set.
	Env func(string) (string, bool)

	errs, warns Errors
}

func (p *Parser) at(n *yaml.Node, field, format string, args ...any) *Error {
	e := &Error{File: p.File, Field: field, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	return e
}

// Errorf records a problem at n (nil: the whole file) in field.
func (p *Parser) Errorf(n *yaml.Node, field, format string, args ...any) {
	p.errs = append(p.errs, p.at(n, field, format, args...))
}

// Warnf records a warning at n (nil: the whole file) in field.
func (p *Parser) Warnf(n *yaml.Node, field, format string, args ...any) {
	p.warns = append(p.warns, p.at(n, field, format, args...))
}

// ErrorCount is the number of errors recorded so far, so that a caller can
// tell whether a part of the walk added any.
func (p *Parser) ErrorCount() int { return len(p.errs) }

// Errors returns the errors recorded, in file order, repeats dropped.
func (p *Parser) Errors() Errors { return Sorted(p.errs) }

// Warnings returns the warnings recorded, in file order, repeats dropped.
func (p *Parser) Warnings() Errors { return Sorted(p.warns) }

// yamlLineRE pulls the line out of go-yaml's syntax errors ("yaml: line 7: ...").
var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Document parses data and returns its root node, or nil after recording
// a syntax error (with its line) or an empty document (with what).
func (p *Parser) Document(data []byte, what string) *yaml.Node {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		e := &Error{File: p.File, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
		if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Msg = m[2]
		}
		p.errs = append(p.errs, e)
		return nil
	}
	if len(doc.Content) == 0 {
		p.Errorf(nil, "", "empty config: expected %s", what)
		return nil
	}
	return doc.Content[0]
}

// Sequence checks that n is a list and returns its items.
func (p *Parser) Sequence(n *yaml.Node, path string) ([]*yaml.Node, bool) {
	n = Resolve(n)
	if n.Kind != yaml.SequenceNode {
		p.Errorf(n, path, "expected a list, found %s", Describe(n))
		return nil, false
	}
	return n.Content, true
}

// Scalar is a string value after ${VAR} expansion. Raw is the text in the
// file: messages quote Raw, never Val, so an expanded secret cannot leak
// into logs.
type Scalar struct {
	Node     *yaml.Node
	Raw, Val string
	Expanded bool
	OK       bool // false when the value was bad (and reported)
}

// Str reads key as a string. present is false when the key is absent or null
// (so "timeout:" with no value inherits, like leaving the key out).
func (p *Parser) Str(m *Mapping, key, path string) (s Scalar, present bool) {
	n, ok := m.Get(key)
	if !ok {
		return s, false
	}
	n = Resolve(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return s, false
	}
	field := Join(path, key)
	s.Node = n
	if n.Kind != yaml.ScalarNode {
		p.Errorf(n, field, "expected a value, found %s", Describe(n))
		return s, true
	}
	s.Raw = n.Value
	val, err := ExpandEnv(n.Value, p.Env)
	if err != nil {
		p.Errorf(n, field, "%v", err)
		return s, true
	}
	s.Val, s.Expanded, s.OK = val, val != n.Value, true
	return s, true
}

// Integer reads key as a whole number; ok is false when it is absent or bad
// (and reported).
func (p *Parser) Integer(m *Mapping, key, path string) (int, *yaml.Node, bool) {
	s, present := p.Str(m, key, path)
	if !present || !s.OK {
		return 0, s.Node, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(s.Val))
	if err != nil {
		p.Errorf(s.Node, Join(path, key), "expected a whole number, found %q", s.Raw)
		return 0, s.Node, false
	}
	return v, s.Node, true
}

// Duration reads key as a positive duration ("90s", "5m"); present reports
// whether the key was set, ok whether its value was good.
func (p *Parser) Duration(m *Mapping, key, path string) (v time.Duration, n *yaml.Node, present, ok bool) {
	s, present := p.Str(m, key, path)
	if !present || !s.OK {
		return 0, s.Node, present, false
	}
	field := Join(path, key)
	v, err := ParseDuration(s.Val)
	if err != nil {
		if s.Expanded {
			p.Errorf(s.Node, field, "bad duration %q (after expanding environment variables): write e.g. \"90s\" or \"5m\"", s.Raw)
		} else {
			p.Errorf(s.Node, field, "%v", err)
		}
		return 0, s.Node, true, false
	}
	if v <= 0 {
		p.Errorf(s.Node, field, "must be more than 0, got %q", s.Raw)
		return 0, s.Node, true, false
	}
	return v, s.Node, true, true
}

// ParseDuration reads "90s", "5m" or "1h30m". A bare number is refused
// rather than read as seconds or nanoseconds: "timeout: 30" is ambiguous to
// the person who wrote it.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty duration: write e.g. \"90s\", \"5m\" or \"1h30m\"")
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return 0, fmt.Errorf("duration %q has no unit: add one, e.g. \"%ss\" or \"%sm\"", s, s, s)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q: write e.g. \"90s\", \"5m\" or \"1h30m\"", s)
	}
	return v, nil
}
