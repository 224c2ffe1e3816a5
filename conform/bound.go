package conform

import (
	"fmt"
	"slices"
	"strings"
)

// Bound is a Conform bound to a feed's property names, known in advance
// from its schema: a property is found by index, not by name, and a name
// the conform reads that the feed does not have is found once, at Bind,
// rather than on every feature.
type Bound struct {
	c   *Conform
	idx []int // per slot: the index of its property, or -1
}

// Bind binds c to the feed's property names. Names match exactly, case
// included, as batch-machine matches them. Binding is stricter than
// batch-machine: a field the feed does not have is an error even where
// batch-machine would quietly map nothing (a list, a join, a plain field
// name, map), since against a known schema that is always a mistake in
// the conform; the error names the column and offers a property that
// differs only in case.
func (c *Conform) Bind(fields []string) (*Bound, error) {
	pos := make(map[string]int, len(fields))
	for i, f := range fields {
		if _, dup := pos[f]; !dup {
			pos[f] = i
		}
	}
	b := &Bound{c: c, idx: make([]int, len(c.slots))}
	for i, name := range c.slots {
		b.idx[i] = -1
		if p, ok := pos[name]; ok {
			b.idx[i] = p
		}
	}
	var missing []string
	for name := range c.refs {
		if _, ok := pos[name]; !ok && !c.writes[name] {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		name := missing[0]
		msg := fmt.Sprintf("the feed has no property %q", name)
		for _, f := range fields {
			if strings.EqualFold(f, name) {
				msg += fmt.Sprintf(" (it has %q: names match case and all)", f)
				break
			}
		}
		if len(missing) > 1 {
			msg += fmt.Sprintf("; nor %s", strings.Join(quoteAll(missing[1:]), ", "))
		}
		return nil, &Error{Column: c.refs[name], Msg: msg}
	}
	return b, nil
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}

// Conform returns the conform b was bound from.
func (b *Bound) Conform() *Conform { return b.c }

// Apply maps one feature, its property values in the order of the names
// given to Bind, to out, the layer's columns in the order of Columns; out
// must have room for them. A nil value, or one missing from the end of
// values, is an empty one, as a column a GeoJSON feature leaves out is to
// batch-machine.
func (b *Bound) Apply(values []any, out []string) error {
	c := b.c
	r := row{vals: make([]string, len(c.slots)), set: make([]bool, len(c.slots))}
	for i, p := range b.idx {
		if p < 0 {
			continue
		}
		var v any
		if p < len(values) {
			v = values[p]
		}
		s, err := pyStr(v)
		if err != nil {
			return &Error{Msg: fmt.Sprintf("property %q holds %s", c.slots[i], err)}
		}
		r.put(i, s)
	}
	return c.run(&r, func(i int, v string) { out[i] = v })
}
