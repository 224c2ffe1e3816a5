package yamlconf

import (
	"fmt"
	"sort"
	"strings"
)

// Error is one problem in a config file, positioned so an editor can jump to
// it. Field is the path of the offending value, e.g. "jurisdictions[1].feeds[0].url".
type Error struct {
	File   string
	Line   int // 1-based; 0 when the problem concerns the whole file
	Column int // 1-based; 0 when unknown
	Field  string
	Msg    string
}

// Error formats e as "file:line:column: field: message".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in a config file, in file order. A loader
// reports them all at once so that an operator fixes a file in one round.
type Errors []*Error

// Error lists the problems one per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find the individual *Error values.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// Sorted puts es in file order and drops repeats: a mapping pulled in twice
// through a merge key (<<: *anchor) would otherwise report its problems twice.
func Sorted(es Errors) Errors {
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Line != es[j].Line {
			return es[i].Line < es[j].Line
		}
		return es[i].Column < es[j].Column
	})
	out := es[:0]
	for _, e := range es {
		// Same place, same problem: the field paths differ only by which mapping
		// merged it in; the first (the anchor's own) is kept.
		if n := len(out); n > 0 && e.Line == out[n-1].Line && e.Column == out[n-1].Column && e.Msg == out[n-1].Msg {
			continue
		}
		out = append(out, e)
	}
	return out
}
