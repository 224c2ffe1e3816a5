package conform

import (
	"fmt"
	"slices"
	"strings"
)

// Conform is a compiled Spec: it maps one feature's properties to the
// columns of its common layer as batch-machine's row_transform_and_convert
// does. It is safe for concurrent use.
type Conform struct {
	layer   string
	columns []string
	attrs   []compiledAttr
	// slots names every row value the conform reads or writes; a row is a
	// slice of values in this order.
	slots   []string
	slotOf  map[string]int
	outSlot []int // per column: the slot of "oa:"+column
	direct  []int // per column: the slot of its field name, or -1
	// refs are the names read as properties, each with the first column
	// reading it; writes are the names functions write.
	refs   map[string]string
	writes map[string]bool
	cur    string
}

type compiledAttr struct {
	column string
	key    keySlots
	step   step // nil for a field name: it is read at output time
}

// keySlots are the row slots of a key and of "oa:"+key, where functions
// applied for that key write.
type keySlots struct {
	name     string
	self, oa int
}

// row is the working row of one feature: batch-machine's dict, with the
// names fixed in advance.
type row struct {
	vals []string
	set  []bool
}

func (r *row) put(slot int, v string) { r.vals[slot], r.set[slot] = v, true }

// step is one compiled function object.
type step interface {
	run(c *Conform, r *row, key keySlots) error
}

// Error is a conform's complaint about a spec (from Compile) or about a
// feature (from Apply): the column it was mapping, the function, and what
// was wrong, in ingestd's words.
type Error struct {
	Column   string
	Function string // empty for a field name or a list
	Line     int    // of the column in its YAML document, 0 when unknown
	Msg      string
}

// Error reads "conform: line L: column: function: what was wrong", the
// parts that are known.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("conform: ")
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Column != "" {
		b.WriteString(e.Column + ": ")
	}
	if e.Function != "" {
		b.WriteString(e.Function + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Compile checks a Spec and prepares it for Apply: the layer must be a
// common layer, every function known and complete, every pattern valid in
// Python's re dialect and every replacement's group references present.
func Compile(s *Spec) (*Conform, error) {
	cols, ok := layers[s.Layer]
	if s.columns != nil {
		cols, ok = s.columns, true
	}
	if s.Layer == "" {
		return nil, &Error{Line: s.Line, Msg: fmt.Sprintf("layer is missing: name the common layer (%s)", strings.Join(LayerNames(), ", "))}
	}
	if !ok {
		return nil, &Error{Line: s.Line, Msg: fmt.Sprintf("layer %q is not a common layer (%s)", s.Layer, strings.Join(LayerNames(), ", "))}
	}
	c := &Conform{layer: s.Layer, columns: cols, slotOf: map[string]int{}, refs: map[string]string{}, writes: map[string]bool{}}
	for _, col := range cols {
		c.outSlot = append(c.outSlot, c.slot("oa:"+col))
	}
	c.direct = make([]int, len(cols))
	for i := range c.direct {
		c.direct[i] = -1
	}
	done := map[string]bool{}
	for _, a := range s.Attributes {
		ci := slices.Index(cols, a.Column)
		if ci < 0 {
			return nil, &Error{Column: a.Column, Line: a.Line, Msg: fmt.Sprintf("not a column of %s (%s)", s.Layer, strings.Join(cols, ", "))}
		}
		if done[a.Column] {
			return nil, &Error{Column: a.Column, Line: a.Line, Msg: "mapped twice"}
		}
		done[a.Column] = true
		c.cur = a.Column
		ca := compiledAttr{column: a.Column, key: c.keySlots(a.Column)}
		fail := func(fn, format string, args ...any) error {
			return &Error{Column: a.Column, Function: fn, Line: a.Line, Msg: fmt.Sprintf(format, args...)}
		}
		switch v := a.Value.(type) {
		case string:
			if v != "" {
				c.direct[ci] = c.ref(v)
			}
		case []any:
			fields, err := c.fieldList(v)
			if err != nil {
				return nil, fail("", "%s", err)
			}
			ca.step = &mergeStep{fields: fields}
		case map[string]any:
			st, err := c.compileFunc(v, []string{a.Column})
			if err != nil {
				return nil, &Error{Column: a.Column, Function: err.fn, Line: a.Line, Msg: err.msg}
			}
			ca.step = st
		default:
			// A number, a boolean or null maps nothing, as in batch-machine:
			// the catalog's addresses carry "accuracy": 1 and the like.
		}
		c.attrs = append(c.attrs, ca)
	}
	return c, nil
}

// Layer returns the common layer the conform fills.
func (c *Conform) Layer() string { return c.layer }

// Columns returns the columns Apply fills, in the layer's order.
func (c *Conform) Columns() []string { return slices.Clone(c.columns) }

// Fields returns the property names the conform reads, sorted: every name
// a field, a list or a function refers to, less those the conform itself
// writes ("oa:number", a chain's variable).
func (c *Conform) Fields() []string {
	var out []string
	for n := range c.refs {
		if !c.writes[n] {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func (c *Conform) slot(name string) int {
	if i, ok := c.slotOf[name]; ok {
		return i
	}
	c.slots = append(c.slots, name)
	c.slotOf[name] = len(c.slots) - 1
	return len(c.slots) - 1
}

// ref is the slot of a name read as a property.
func (c *Conform) ref(name string) int {
	if _, ok := c.refs[name]; !ok {
		c.refs[name] = c.cur
	}
	return c.slot(name)
}

func (c *Conform) keySlots(name string) keySlots {
	c.writes["oa:"+name] = true
	return keySlots{name: name, self: c.slot(name), oa: c.slot("oa:" + name)}
}

func (c *Conform) fieldList(v []any) ([]int, error) {
	out := make([]int, 0, len(v))
	for i, e := range v {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("item %d of the field list is %s, not a field name", i+1, describe(e))
		}
		out = append(out, c.ref(s))
	}
	return out, nil
}

func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("%q", x)
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case bool:
		return fmt.Sprintf("%v", x)
	default:
		return fmt.Sprintf("%v", x)
	}
}

// Apply maps one feature's properties to the layer's columns. Every column
// is in the result, "" where nothing maps it. A missing field that
// batch-machine reads unguarded (a regexp's field, a format's fields, …) is
// an error naming the column, the function and the field, as is a value
// that is an object or an array.
func (c *Conform) Apply(props map[string]any) (map[string]string, error) {
	r := row{vals: make([]string, len(c.slots)), set: make([]bool, len(c.slots))}
	for i, name := range c.slots {
		v, ok := props[name]
		if !ok {
			continue
		}
		s, err := pyStr(v)
		if err != nil {
			return nil, &Error{Msg: fmt.Sprintf("property %q holds %s", name, err)}
		}
		r.put(i, s)
	}
	out := make(map[string]string, len(c.columns))
	err := c.run(&r, func(i int, v string) { out[c.columns[i]] = v })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// run applies the attributes to a filled row and emits each column.
func (c *Conform) run(r *row, emit func(col int, v string)) error {
	for _, a := range c.attrs {
		if a.step == nil {
			continue
		}
		if err := a.step.run(c, r, a.key); err != nil {
			if fe, ok := err.(*funcErr); ok {
				return &Error{Column: a.column, Function: fe.fn, Msg: fe.msg}
			}
			return &Error{Column: a.column, Msg: err.Error()}
		}
	}
	for i := range c.columns {
		var v string
		if s := c.outSlot[i]; r.set[s] {
			v = r.vals[s]
		} else if d := c.direct[i]; d >= 0 {
			v = r.vals[d]
		}
		if c.layer == "addresses" {
			// row_canonicalize_unit_and_number.
			switch c.columns[i] {
			case "number":
				v = strings.TrimSuffix(pyStrip(v), ".0")
			case "street", "unit":
				v = pyStrip(v)
			}
		}
		emit(i, v)
	}
	return nil
}
