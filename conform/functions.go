package conform

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// funcErr is a function's complaint before the column is known to it.
type funcErr struct{ fn, msg string }

func (e *funcErr) Error() string { return e.fn + ": " + e.msg }

// functionNames are the functions batch-machine's row_function dispatches.
var functionNames = []string{"chain", "constant", "first_non_empty", "format", "join", "map", "mph_to_kph", "postfixed_street", "postfixed_unit", "prefixed_number", "regexp", "remove_postfix", "remove_prefix"}

// The address patterns of batch-machine's conform.py, verbatim.
var (
	prefixedNumberRe           = mustPy(`^\s*(\d+(?:[ -]\d/\d)?|\d+-\d+|\d+-?[A-Z])\s+`)
	postfixedStreetRe          = mustPy(`^(?:\s*(?:\d+(?:[ -]\d/\d)?|\d+-\d+|\d+-?[A-Z])\s+)?(.*)`)
	postfixedStreetWithUnitsRe = mustPy(`^(?:\s*(?:\d+(?:[ -]\d/\d)?|\d+-\d+|\d+-?[A-Z])\s+)?(.+?)(?:\s+(?:(?:UNIT|APARTMENT|APT\.?|SUITE|STE\.?|BUILDING|BLDG\.?|LOT)\s+|#).+)?$`)
	postfixedUnitRe            = mustPy(`\s((?:(?:UNIT|APARTMENT|APT\.?|SUITE|STE\.?|BUILDING|BLDG\.?|LOT)\s+|#).+)$`)
)

func mustPy(p string) *pyRegexp {
	re, err := compilePy(p, true)
	if err != nil {
		panic(err)
	}
	return re
}

// compileFunc compiles a function object; path is the column and the chain
// variables it sits under.
func (c *Conform) compileFunc(f map[string]any, path []string) (step, *funcErr) {
	st, err := c.compileFunc0(f, path)
	if err != nil {
		return nil, err
	}
	name, _ := f["function"].(string)
	return &named{fn: name, step: st}, nil
}

// named gives a function's errors its name.
type named struct {
	fn string
	step
}

func (n *named) run(c *Conform, r *row, key keySlots) error {
	err := n.step.run(c, r, key)
	if err == nil {
		return nil
	}
	if fe, ok := err.(*funcErr); ok {
		if n.fn == "chain" && fe.fn != "chain" {
			return &funcErr{"chain: " + fe.fn, fe.msg}
		}
		return fe
	}
	return &funcErr{n.fn, err.Error()}
}

// compileFunc0 compiles a function object without naming its errors'
// runtime failures: it checks the "function" key and hands the object to
// that function's compiler in funcCompilers.
func (c *Conform) compileFunc0(f map[string]any, path []string) (step, *funcErr) {
	name, ok := f["function"].(string)
	if !ok {
		if _, has := f["function"]; !has {
			return nil, &funcErr{"", `a function object needs a "function" key (` + strings.Join(functionNames, ", ") + ")"}
		}
		return nil, &funcErr{"", fmt.Sprintf(`"function" is %s, not a function name`, describe(f["function"]))}
	}
	a := &funcArgs{c: c, name: name, f: f}
	compile, ok := funcCompilers[name]
	if !ok {
		return a.fail("no such function (there are %s)", strings.Join(functionNames, ", "))
	}
	return compile(a, path)
}

// compileStepFunc compiles one function object whose name it was
// registered under in funcCompilers; path is the column and the chain
// variables the object sits under.
type compileStepFunc func(a *funcArgs, path []string) (step, *funcErr)

// funcCompilers holds a compiler per function batch-machine's row_function
// dispatches, so that each function's checks read on their own and a new
// function is one entry and one compiler. It is filled in init because
// compileChain compiles its functions through it, which Go's package
// initialization would report as a cycle. functionNames must list the same
// names (TestFunctionNamesMatchCompilers).
var funcCompilers map[string]compileStepFunc

func init() {
	funcCompilers = map[string]compileStepFunc{
		"chain":            compileChain,
		"constant":         compileConstant,
		"first_non_empty":  compileFirstNonEmpty,
		"format":           compileFormat,
		"join":             compileJoin,
		"map":              compileMap,
		"mph_to_kph":       compileMphToKph,
		"postfixed_street": compilePostfixedStreet,
		"postfixed_unit":   compilePostfixedUnit,
		"prefixed_number":  compilePrefixedNumber,
		"regexp":           compileRegexp,
		"remove_postfix":   compileRemove,
		"remove_prefix":    compileRemove,
	}
}

// funcArgs reads the keys of one function object, so that every compiler
// words a missing or mistyped key the same way, under the function's name.
type funcArgs struct {
	c    *Conform
	name string
	f    map[string]any
}

// fail is the compiler's error, under the function's name.
func (a *funcArgs) fail(format string, args ...any) (step, *funcErr) {
	return nil, &funcErr{a.name, fmt.Sprintf(format, args...)}
}

// str is the string under key, and whether the object has the key; a key
// that is required and absent, or not a string, is an error.
func (a *funcArgs) str(key string, required bool) (string, bool, *funcErr) {
	v, has := a.f[key]
	if !has {
		if required {
			return "", false, &funcErr{a.name, fmt.Sprintf("%q is missing", key)}
		}
		return "", false, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", false, &funcErr{a.name, fmt.Sprintf("%q is %s, not a string", key, describe(v))}
	}
	return s, true, nil
}

// fieldSlot is the slot of the field named under key, which is required.
func (a *funcArgs) fieldSlot(key string) (int, *funcErr) {
	s, _, err := a.str(key, true)
	if err != nil {
		return 0, err
	}
	return a.c.ref(s), nil
}

// optionalFieldSlot is the slot of the field named under key, -1 when the
// key is absent or empty: map and mph_to_kph then write nothing.
func (a *funcArgs) optionalFieldSlot(key string) (int, *funcErr) {
	field, _, err := a.str(key, false)
	if err != nil {
		return 0, err
	}
	if field == "" {
		return -1, nil
	}
	return a.c.ref(field), nil
}

// fields is the slots of the list of field names under "fields".
func (a *funcArgs) fields(required bool) ([]int, *funcErr) {
	v, has := a.f["fields"]
	if !has {
		if required {
			return nil, &funcErr{a.name, `"fields" is missing`}
		}
		return nil, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, &funcErr{a.name, fmt.Sprintf(`"fields" is %s, not a list of field names`, describe(v))}
	}
	out, err := a.c.fieldList(l)
	if err != nil {
		return nil, &funcErr{a.name, err.Error()}
	}
	return out, nil
}

// compileJoin compiles join: the fields, and a separator that defaults to
// a space as batch-machine's does.
func compileJoin(a *funcArgs, _ []string) (step, *funcErr) {
	fs, err := a.fields(true)
	if err != nil {
		return nil, err
	}
	sep, has, err := a.str("separator", false)
	if err != nil {
		return nil, err
	}
	if !has {
		sep = " "
	}
	return &joinStep{fields: fs, sep: sep}, nil
}

// compileRegexp compiles regexp: the pattern in Python's dialect, and a
// replacement whose $1 and ${1} batch-machine rewrites to Python's before
// re.sub reads it. A false or empty "replace" means none, as in Python.
func compileRegexp(a *funcArgs, _ []string) (step, *funcErr) {
	field, err := a.fieldSlot("field")
	if err != nil {
		return nil, err
	}
	pat, _, err := a.str("pattern", true)
	if err != nil {
		return nil, err
	}
	re, perr := compilePy(pat, false)
	if perr != nil {
		return a.fail("pattern %q: %s", pat, perr)
	}
	st := &regexpStep{field: field, re: re}
	if v, has := a.f["replace"]; has && v != nil && v != false && v != "" {
		repl, ok := v.(string)
		if !ok {
			return a.fail(`"replace" is %s, not a string`, describe(v))
		}
		t, terr := re.parseTemplate(convertRegexpReplace(repl))
		if terr != nil {
			return a.fail("replace %q: %s", repl, terr)
		}
		st.tmpl, st.replace = t, true
	}
	return st, nil
}

// compileFormat compiles format, finding its $n variables once rather than
// on every feature.
func compileFormat(a *funcArgs, _ []string) (step, *funcErr) {
	fs, err := a.fields(true)
	if err != nil {
		return nil, err
	}
	format, _, err := a.str("format", true)
	if err != nil {
		return nil, err
	}
	return &formatStep{fields: fs, format: format, vars: formatVarRe.FindAllStringSubmatchIndex(format, -1)}, nil
}

// compilePrefixedNumber compiles prefixed_number, with the engine-free
// matcher for valid UTF-8.
func compilePrefixedNumber(a *funcArgs, _ []string) (step, *funcErr) {
	field, err := a.fieldSlot("field")
	if err != nil {
		return nil, err
	}
	return &patternStep{field: field, re: prefixedNumberRe, fast: prefixedNumber}, nil
}

// compilePostfixedUnit compiles postfixed_unit, which has no engine-free
// matcher.
func compilePostfixedUnit(a *funcArgs, _ []string) (step, *funcErr) {
	field, err := a.fieldSlot("field")
	if err != nil {
		return nil, err
	}
	return &patternStep{field: field, re: postfixedUnitRe}, nil
}

// compilePostfixedStreet compiles postfixed_street: may_contain_units
// takes batch-machine's other pattern, which has no engine-free matcher.
func compilePostfixedStreet(a *funcArgs, _ []string) (step, *funcErr) {
	field, err := a.fieldSlot("field")
	if err != nil {
		return nil, err
	}
	if truthy(a.f["may_contain_units"]) {
		return &patternStep{field: field, re: postfixedStreetWithUnitsRe}, nil
	}
	return &patternStep{field: field, re: postfixedStreetRe, fast: postfixedStreet}, nil
}

// compileRemove compiles remove_prefix and remove_postfix, which differ
// only in the end they cut.
func compileRemove(a *funcArgs, _ []string) (step, *funcErr) {
	field, err := a.fieldSlot("field")
	if err != nil {
		return nil, err
	}
	rm, err := a.fieldSlot("field_to_remove")
	if err != nil {
		return nil, err
	}
	return &removeStep{field: field, remove: rm, postfix: a.name == "remove_postfix"}, nil
}

// compileFirstNonEmpty compiles first_non_empty, whose fields may be
// absent: it then writes nothing.
func compileFirstNonEmpty(a *funcArgs, _ []string) (step, *funcErr) {
	fs, err := a.fields(false)
	if err != nil {
		return nil, err
	}
	return &firstNonEmptyStep{fields: fs}, nil
}

// compileConstant compiles constant, converting the value to the string
// Python's str() gives once.
func compileConstant(a *funcArgs, _ []string) (step, *funcErr) {
	v, has := a.f["value"]
	if !has {
		return a.fail(`"value" is missing`)
	}
	s, err := pyStr(v)
	if err != nil {
		return a.fail(`"value" is %s`, err)
	}
	return &constantStep{value: s}, nil
}

// compileMap compiles map, converting the mapping's values and the "else"
// value to the strings Python's str() gives once.
func compileMap(a *funcArgs, _ []string) (step, *funcErr) {
	field, ferr := a.optionalFieldSlot("field")
	if ferr != nil {
		return nil, ferr
	}
	st := &mapStep{field: field, mapping: map[string]string{}}
	if m, has := a.f["mapping"]; has {
		mm, ok := m.(map[string]any)
		if !ok {
			return a.fail(`"mapping" is %s, not an object`, describe(m))
		}
		for k, v := range mm {
			s, err := pyStr(v)
			if err != nil {
				return a.fail("mapping of %q is %s", k, err)
			}
			st.mapping[k] = s
		}
	}
	if v, has := a.f["else"]; has {
		s, err := pyStr(v)
		if err != nil {
			return a.fail(`"else" is %s`, err)
		}
		st.elseVal, st.hasElse = s, true
	}
	return st, nil
}

// compileMphToKph compiles mph_to_kph, whose field may be absent: it then
// writes nothing.
func compileMphToKph(a *funcArgs, _ []string) (step, *funcErr) {
	field, err := a.optionalFieldSlot("field")
	if err != nil {
		return nil, err
	}
	return &mphStep{field: field}, nil
}

// compileChain compiles chain: its functions in turn, under the variable
// when it has one, and makes the keys they write readable by name.
func compileChain(a *funcArgs, path []string) (step, *funcErr) {
	v, has := a.f["functions"]
	if !has {
		return a.fail(`"functions" is missing`)
	}
	l, ok := v.([]any)
	if !ok {
		return a.fail(`"functions" is %s, not a list of function objects`, describe(v))
	}
	st := &chainStep{}
	variable, _, err := a.str("variable", false)
	if err != nil {
		return nil, err
	}
	c := a.c
	if variable != "" {
		st.variable = c.keySlots(variable)
		st.hasVar = true
		// batch-machine tests var.lstrip('oa:'), which strips any
		// leading 'o', 'a' and ':' characters, against the schema.
		st.varInSchema = slices.Contains(append([]string{"hash"}, c.columns...), strings.TrimLeft(variable, "oa:"))
		path = append(slices.Clone(path), variable)
	}
	for i, e := range l {
		fm, ok := e.(map[string]any)
		if !ok {
			return a.fail("item %d of \"functions\" is %s, not a function object", i+1, describe(e))
		}
		sub, ferr := c.compileFunc(fm, path)
		if ferr != nil {
			fn := "chain"
			if ferr.fn != "" {
				fn += ": " + ferr.fn
			}
			return nil, &funcErr{fn, fmt.Sprintf("function %d: %s", i+1, ferr.msg)}
		}
		st.steps = append(st.steps, sub)
	}
	// A chain writes each result under its key's own name as well, so
	// that the next function can read it: the column's, or a variable's.
	for _, k := range path {
		c.keySlots(k)
		c.writes[k] = true
	}
	return st, nil
}

func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case int:
		return x != 0
	case float64:
		return x != 0
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

// missing is the error of a field batch-machine reads as row[field].
func missing(c *Conform, slot int) error {
	return fmt.Errorf("the feature has no property %q", c.slots[slot])
}

type mergeStep struct{ fields []int }

// row_merge: the fields' values, stripped, the empty ones left out, joined
// with a space; a missing field counts as empty.
func (s *mergeStep) run(c *Conform, r *row, key keySlots) error {
	var parts []string
	for _, f := range s.fields {
		if v := pyStrip(r.vals[f]); v != "" {
			parts = append(parts, v)
		}
	}
	r.put(key.oa, strings.Join(parts, " "))
	return nil
}

type joinStep struct {
	fields []int
	sep    string
}

// row_fxn_join: like a list but with a separator; a missing field makes it
// do nothing at all (batch-machine swallows the KeyError).
func (s *joinStep) run(c *Conform, r *row, key keySlots) error {
	parts := make([]string, 0, len(s.fields))
	for _, f := range s.fields {
		if !r.set[f] {
			return nil
		}
		if v := pyStrip(r.vals[f]); v != "" {
			parts = append(parts, v)
		}
	}
	r.put(key.oa, strings.Join(parts, s.sep))
	return nil
}

type regexpStep struct {
	field   int
	re      *pyRegexp
	replace bool
	tmpl    []templatePart
}

// row_fxn_regexp: with a replacement, re.sub over the whole value; without,
// the groups of the first match concatenated, "" when nothing matches.
func (s *regexpStep) run(c *Conform, r *row, key keySlots) error {
	if !r.set[s.field] {
		return missing(c, s.field)
	}
	v := r.vals[s.field]
	if s.replace {
		out, err := s.re.sub(s.tmpl, v)
		if err != nil {
			return fmt.Errorf("matching: %w", err)
		}
		r.put(key.oa, out)
		return nil
	}
	text, m, err := s.re.search(v)
	if err != nil {
		return &funcErr{"regexp", "matching: " + err.Error()}
	}
	if m == nil {
		r.put(key.oa, "")
		return nil
	}
	r.put(key.oa, groupsJoined(text, m))
	return nil
}

type patternStep struct {
	field int
	re    *pyRegexp
	// fast, when set, computes the same as re without the engine, on
	// valid UTF-8 (re reads invalid bytes as U+FFFD, as it must).
	fast func(string) string
}

// row_fxn_prefixed_number, row_fxn_postfixed_street and
// row_fxn_postfixed_unit: the one group of a fixed pattern.
func (s *patternStep) run(c *Conform, r *row, key keySlots) error {
	if !r.set[s.field] {
		return missing(c, s.field)
	}
	if s.fast != nil && utf8.ValidString(r.vals[s.field]) {
		r.put(key.oa, s.fast(r.vals[s.field]))
		return nil
	}
	text, m, err := s.re.search(r.vals[s.field])
	if err != nil {
		return err
	}
	if m == nil {
		r.put(key.oa, "")
		return nil
	}
	sp := m.spans[1]
	if sp[0] < 0 {
		r.put(key.oa, "")
		return nil
	}
	r.put(key.oa, string(text[sp[0]:sp[1]]))
	return nil
}

type removeStep struct {
	field, remove int
	postfix       bool
}

// row_fxn_remove_prefix and row_fxn_remove_postfix. An empty prefix is
// "removed" (the value loses its leading spaces); an empty postfix is not.
func (s *removeStep) run(c *Conform, r *row, key keySlots) error {
	if !r.set[s.field] {
		return missing(c, s.field)
	}
	if !r.set[s.remove] {
		return missing(c, s.remove)
	}
	v, rm := r.vals[s.field], r.vals[s.remove]
	switch {
	case !s.postfix && strings.HasPrefix(v, rm):
		v = strings.TrimLeft(v[len(rm):], " ")
	case s.postfix && rm != "" && strings.HasSuffix(v, rm):
		v = strings.TrimRight(v[:len(v)-len(rm)], " ")
	}
	r.put(key.oa, v)
	return nil
}

var formatVarRe = regexp.MustCompile(`\$([0-9]+)`)

type formatStep struct {
	fields []int
	format string
	vars   [][]int
}

// row_fxn_format: $n is the n-th field, stripped and without a trailing
// ".0"; the text before a variable is kept only when the variable has a
// value and an earlier one had, and nothing at all when no field has one.
func (s *formatStep) run(c *Conform, r *row, key keySlots) error {
	vals := make([]string, len(s.fields))
	for i, f := range s.fields {
		if !r.set[f] {
			return missing(c, f)
		}
		vals[i] = pyStrip(r.vals[f])
	}
	var b strings.Builder
	idx, added := 0, 0
	for _, m := range s.vars {
		n, err := strconv.Atoi(s.format[m[2]:m[3]])
		if err != nil {
			n = -1
		}
		if n > 0 && n-1 < len(vals) {
			v := vals[n-1]
			if idx == 0 || (added > 0 && v != "") {
				b.WriteString(s.format[idx:m[0]])
			}
			if v != "" {
				b.WriteString(strings.TrimSuffix(v, ".0"))
				added++
			}
		}
		idx = m[1]
	}
	if added == 0 {
		r.put(key.oa, "")
		return nil
	}
	b.WriteString(s.format[idx:])
	r.put(key.oa, b.String())
	return nil
}

type firstNonEmptyStep struct{ fields []int }

// row_fxn_first_non_empty: the first field whose value is not blank, as
// is; nothing written when all are blank.
func (s *firstNonEmptyStep) run(c *Conform, r *row, key keySlots) error {
	for _, f := range s.fields {
		if !r.set[f] {
			return missing(c, f)
		}
		if pyStrip(r.vals[f]) != "" {
			r.put(key.oa, r.vals[f])
			return nil
		}
	}
	return nil
}

type constantStep struct{ value string }

func (s *constantStep) run(c *Conform, r *row, key keySlots) error {
	r.put(key.oa, s.value)
	return nil
}

type mapStep struct {
	field   int
	mapping map[string]string
	elseVal string
	hasElse bool
}

// row_fxn_map: the mapped value, else the "else" value, else ""; nothing
// when the feature lacks the field.
func (s *mapStep) run(c *Conform, r *row, key keySlots) error {
	if s.field < 0 || !r.set[s.field] {
		return nil
	}
	if v, ok := s.mapping[r.vals[s.field]]; ok {
		r.put(key.oa, v)
	} else {
		r.put(key.oa, s.elseVal)
	}
	return nil
}

type mphStep struct{ field int }

// row_fxn_mph_to_kph: str(round(mph * 1.60934)), rounding half to even; ""
// when the value is not a number.
func (s *mphStep) run(c *Conform, r *row, key keySlots) error {
	if s.field < 0 || !r.set[s.field] {
		return nil
	}
	mph, ok := pyFloat(r.vals[s.field])
	if !ok || mph != mph {
		r.put(key.oa, "")
		return nil
	}
	kph := mph * 1.60934
	if kph-kph != 0 {
		return fmt.Errorf("%q miles per hour is not a finite speed", r.vals[s.field])
	}
	r.put(key.oa, pyRoundStr(kph))
	return nil
}

type chainStep struct {
	steps       []step
	variable    keySlots
	hasVar      bool
	varInSchema bool
}

// row_fxn_chain: each function in turn writes "oa:"+key, and a non-empty
// result is copied to key itself so the next function can read it by name.
// With a variable that is not a schema column nor already a property, the
// functions work under the variable's name instead.
func (s *chainStep) run(c *Conform, r *row, key keySlots) error {
	orig := key
	if s.hasVar && !s.varInSchema && !r.set[s.variable.self] {
		r.put(s.variable.oa, "")
		key = s.variable
	}
	for _, st := range s.steps {
		if err := st.run(c, r, key); err != nil {
			return err
		}
		if r.set[key.oa] && r.vals[key.oa] != "" {
			r.put(key.self, r.vals[key.oa])
		}
	}
	if !r.set[key.oa] {
		return &funcErr{"chain", "no function of the chain produced a value"}
	}
	r.put(orig.oa, r.vals[key.oa])
	return nil
}

// convertRegexpReplace is batch-machine's convert_regexp_replace: $1 and
// ${1} become Python's \1 and \g<1>, repeatedly until none is left.
func convertRegexpReplace(s string) string {
	for {
		switch {
		case replDollarWordRe.matchString(s):
			s = replDollarWordRe.subString(`\\\g<1>`, s)
		case replDollarNonDigitRe.matchString(s):
			s = replDollarNonDigitRe.subString(`\\\g<1>\g<2>`, s)
		case replDollarBraceRe.matchString(s):
			s = replDollarBraceRe.subString(`\\g<\g<1>>`, s)
		default:
			return s
		}
	}
}

var (
	replDollarWordRe     = mustPyExact(`\$(\d+)\b`)
	replDollarNonDigitRe = mustPyExact(`\$(\d+)(\D)`)
	replDollarBraceRe    = mustPyExact(`\$\{(\d+)\}`)
)

func mustPyExact(p string) *pyRegexp {
	re, err := compilePy(p, false)
	if err != nil {
		panic(err)
	}
	return re
}

func (p *pyRegexp) matchString(s string) bool {
	_, m, err := p.search(s)
	return err == nil && m != nil
}

func (p *pyRegexp) subString(tmpl, s string) string {
	t, err := p.parseTemplate(tmpl)
	if err != nil {
		panic(err)
	}
	out, err := p.sub(t, s)
	if err != nil {
		return s
	}
	return out
}
