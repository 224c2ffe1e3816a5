package conform

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/dlclark/regexp2"
)

// matchTimeout bounds one search of one value: a backtracking engine can be
// driven into exponential time by a pattern from a config, and a feed's
// conform must not be able to stall the daemon. Python's re has no bound; no
// pattern of the OpenAddresses catalog comes near it (TestCatalogPatterns).
const matchTimeout = 2 * time.Second

// pyRegexp is a pattern of Python's re dialect compiled for regexp2, with
// groups numbered as Python numbers them.
type pyRegexp struct {
	re     *regexp2.Regexp
	groups int            // capturing groups, Python's count
	names  map[string]int // Python's group names to their numbers
}

// compilePy translates a Python re pattern to regexp2's syntax and compiles
// it. The translation keeps Python's meaning where the two engines differ
// in ways the catalog's patterns reach: named groups become plain groups so
// that numbering follows Python (regexp2 numbers named groups after the
// unnamed ones), (?P=name) becomes a numbered backreference, \Z is an
// absolute end, {,n} is a quantifier, \s also matches \x1c-\x1f, \w and \b
// are about letters, numbers and the underscore, and ignoring case matches
// what Python's does. Escapes Python rejects are rejected.
func compilePy(pattern string, ignoreCase bool) (*pyRegexp, error) {
	tr, groups, names, err := translatePy(pattern, ignoreCase || globalIgnoreCase(pattern))
	if err != nil {
		return nil, err
	}
	opts := regexp2.None
	if ignoreCase {
		opts |= regexp2.IgnoreCase
	}
	re, err := regexp2.Compile(tr, opts)
	if err != nil {
		return nil, errors.New(cleanEngineError(err))
	}
	re.MatchTimeout = matchTimeout
	return &pyRegexp{re: re, groups: groups, names: names}, nil
}

// cleanEngineError turns regexp2's parse error into a phrase of ours: its
// messages quote the translated pattern, which the user never wrote.
func cleanEngineError(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, ": "); i >= 0 && strings.HasPrefix(msg, "error parsing regexp") {
		msg = msg[i+2:]
	}
	if i := strings.Index(msg, " in `"); i >= 0 {
		msg = msg[:i]
	}
	return msg
}

const pySpaceClass = `\s\x1c-\x1f`
const pyWordClass = `\p{L}\p{N}_`

// Python's \b and \B, on Python's word characters: regexp2's own count
// combining marks as word characters and other numbers (², ½) not.
const (
	pyWordBoundary    = `(?:(?<=[` + pyWordClass + `])(?![` + pyWordClass + `])|(?<![` + pyWordClass + `])(?=[` + pyWordClass + `]))`
	pyNotWordBoundary = `(?:(?<=[` + pyWordClass + `])(?=[` + pyWordClass + `])|(?<![` + pyWordClass + `])(?![` + pyWordClass + `]))`
)

// globalIgnoreCase reports whether p starts with global flags including i,
// such as (?i) or (?iu).
func globalIgnoreCase(p string) bool {
	if !strings.HasPrefix(p, "(?") {
		return false
	}
	end := strings.IndexByte(p, ')')
	if end < 0 {
		return false
	}
	flags := p[2:end]
	return strings.Trim(flags, "aiLmsux") == "" && strings.Contains(flags, "i")
}

// caseExtras are the characters Python's IGNORECASE matches to an ASCII
// letter beyond its other case, because their one-character upper or lower
// case is that letter: U+0130 and U+0131 to i, U+017F (long s) to s, U+212A
// (Kelvin) to k. regexp2 folds case by lower-casing both sides, which
// misses the dotless i and the long s.
var caseExtras = map[rune]string{'i': "\u0130\u0131", 's': "\u017f", 'k': "\u212a"}

// classExtras returns the caseExtras a character class body needs: those of each special letter the body holds, alone or in an ASCII
// range.
func classExtras(body []rune) string {
	var out strings.Builder
	for _, letter := range []rune{'i', 's', 'k'} {
		upper := unicode.ToUpper(letter)
		has := false
		for j := 0; j < len(body) && !has; j++ {
			c := body[j]
			if c == '\\' {
				j++
				continue
			}
			if j+2 < len(body) && body[j+1] == '-' && body[j+2] != '\\' {
				lo, hi := c, body[j+2]
				has = (lo <= letter && letter <= hi) || (lo <= upper && upper <= hi)
				j += 2
				continue
			}
			has = c == letter || c == upper
		}
		if has {
			out.WriteString(caseExtras[letter])
		}
	}
	return out.String()
}

// translatePy rewrites a Python pattern for regexp2 and counts its groups;
// fold says Python would match it ignoring case.
func translatePy(p string, fold bool) (string, int, map[string]int, error) {
	t := &pyTranslator{rs: []rune(p), names: map[string]int{}, fold: fold}
	for ; t.i < len(t.rs); t.i++ {
		if err := t.construct(); err != nil {
			return "", 0, nil, err
		}
	}
	if t.inClass {
		return "", 0, nil, errors.New("unterminated character set")
	}
	return t.b.String(), t.groups, t.names, nil
}

// pyTranslator is translatePy's state as it walks the pattern one
// construct at a time; each of its methods translates one class of
// construct and leaves i on the construct's last rune.
type pyTranslator struct {
	rs      []rune
	i       int // the rune being translated
	b       strings.Builder
	groups  int            // capturing groups opened so far
	names   map[string]int // group names to their numbers
	fold    bool           // Python would match here ignoring case
	inClass bool
	// classStart is the index of the open class's first member, after
	// its '^' and a leading ']'.
	classStart int
	// fold as it was outside each open group: (?i:...) and (?-i:...)
	// change it for their group only.
	foldStack []bool
	// the group each open parenthesis opened, 0 for one that captures not.
	groupStack []int
}

// construct translates the construct starting at i.
func (t *pyTranslator) construct() error {
	c := t.rs[t.i]
	switch {
	case c == '\\':
		return t.escape()
	case t.inClass:
		t.classMember(c)
	case c == '[':
		t.openClass()
	case c == '(':
		return t.openGroup()
	case c == ')':
		t.closeGroup()
	case c == '{':
		t.brace()
	case c == '*' || c == '+' || c == '?' || c == '}':
		return t.quantifier(c)
	default:
		t.literal(c)
	}
	return nil
}

// escape translates a backslash and what follows it, the one place the
// two dialects' meanings differ most.
func (t *pyTranslator) escape() error {
	if t.i+1 >= len(t.rs) {
		return errors.New("pattern ends with a lone backslash")
	}
	t.i++
	e := t.rs[t.i]
	switch e {
	case 'Z':
		if t.inClass {
			return fmt.Errorf(`bad escape \Z in a character class`)
		}
		t.b.WriteString(`\z`)
	case 's', 'S', 'w', 'W':
		t.shorthandClass(e)
	case 'b', 'B':
		return t.wordBoundary(e)
	case '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return t.numericEscape(e)
	case 'd', 'D', 'A', 'a', 'f', 'n', 'r', 't', 'v', 'x', 'u', '0':
		if t.inClass && e == 'A' {
			return fmt.Errorf(`bad escape \%c in a character class`, e)
		}
		t.b.WriteRune('\\')
		t.b.WriteRune(e)
	case 'U':
		return t.longUnicodeEscape()
	default:
		if e < 128 && unicode.IsLetter(e) {
			return fmt.Errorf(`bad escape \%c`, e)
		}
		t.b.WriteRune('\\')
		t.b.WriteRune(e)
	}
	return nil
}

// pyShorthands are \s, \S, \w and \W as Python reads them, inside a class
// and outside one: regexp2's \s leaves out \x1c-\x1f and its \w counts
// combining marks but not other numbers.
var pyShorthands = map[rune]struct{ inClass, outside string }{
	's': {pySpaceClass, "[" + pySpaceClass + "]"},
	'S': {`\S`, "[^" + pySpaceClass + "]"},
	'w': {pyWordClass, "[" + pyWordClass + "]"},
	'W': {`\W`, "[^" + pyWordClass + "]"},
}

// shorthandClass translates \s, \S, \w or \W.
func (t *pyTranslator) shorthandClass(e rune) {
	sh := pyShorthands[e]
	if t.inClass {
		t.b.WriteString(sh.inClass)
	} else {
		t.b.WriteString(sh.outside)
	}
}

// wordBoundary translates \b and \B to Python's boundaries; in a class
// Python reads \b as a backspace and rejects \B.
func (t *pyTranslator) wordBoundary(e rune) error {
	switch {
	case t.inClass && e == 'B':
		return errors.New(`bad escape \B in a character class`)
	case t.inClass:
		t.b.WriteString(`\b`)
	case e == 'b':
		t.b.WriteString(pyWordBoundary)
	default:
		t.b.WriteString(pyNotWordBoundary)
	}
	return nil
}

// numericEscape translates \1 to \9 and what follows: Python reads three
// octal digits as a character, else one or two digits as a reference to a
// group already closed.
func (t *pyTranslator) numericEscape(e rune) error {
	rs, i := t.rs, t.i
	if t.inClass {
		t.b.WriteRune('\\')
		t.b.WriteRune(e)
		return nil
	}
	if i+2 < len(rs) && isOctal(e) && isOctal(rs[i+1]) && isOctal(rs[i+2]) {
		v, _ := strconv.ParseUint(string(rs[i:i+3]), 8, 32)
		if v > 0o377 {
			return fmt.Errorf(`octal escape \%s out of range`, string(rs[i:i+3]))
		}
		fmt.Fprintf(&t.b, `\x{%x}`, v)
		t.i += 2
		return nil
	}
	n := int(e - '0')
	if i+1 < len(rs) && rs[i+1] >= '0' && rs[i+1] <= '9' {
		n = n*10 + int(rs[i+1]-'0')
		t.i++
	}
	if n > t.groups || slices.Contains(t.groupStack, n) {
		return fmt.Errorf(`\%d refers to a group not closed before it`, n)
	}
	// The group keeps the reference apart from a digit that follows.
	fmt.Fprintf(&t.b, `(?:\%d)`, n)
	return nil
}

// longUnicodeEscape translates \UXXXXXXXX: regexp2 only knows \uXXXX and
// \x{...}.
func (t *pyTranslator) longUnicodeEscape() error {
	if t.i+8 >= len(t.rs) {
		return errors.New(`incomplete escape \U`)
	}
	hex := string(t.rs[t.i+1 : t.i+9])
	v, err := strconv.ParseUint(hex, 16, 32)
	if err != nil || v > unicode.MaxRune {
		return fmt.Errorf(`bad escape \U%s`, hex)
	}
	fmt.Fprintf(&t.b, `\x{%x}`, v)
	t.i += 8
	return nil
}

// openClass translates the '[' that opens a class, with its '^' and a ']'
// first in it, which Python reads as a literal.
func (t *pyTranslator) openClass() {
	rs := t.rs
	t.inClass = true
	t.b.WriteRune('[')
	t.classStart = t.i + 1
	if t.classStart < len(rs) && rs[t.classStart] == '^' {
		t.b.WriteRune('^')
		t.i++
		t.classStart++
	}
	if t.classStart < len(rs) && rs[t.classStart] == ']' {
		t.b.WriteString(`\]`)
		t.i++
		t.classStart++
	}
}

// classMember translates a rune inside a class other than an escape. At
// the closing ']' of a class that ignores case it adds the characters
// Python's IGNORECASE matches and regexp2's misses, in a negated class too,
// where they are excluded.
func (t *pyTranslator) classMember(c rune) {
	if c == ']' && t.i > t.classStart {
		t.inClass = false
		if t.fold {
			t.b.WriteString(classExtras(t.rs[t.classStart:t.i]))
		}
	}
	if c == '[' {
		// regexp2 reads "-[" as class subtraction; Python as a literal.
		t.b.WriteString(`\[`)
		return
	}
	t.b.WriteRune(c)
}

// openGroup translates '(': a capturing group, or one of the (? forms.
func (t *pyTranslator) openGroup() error {
	if t.i+1 < len(t.rs) && t.rs[t.i+1] == '?' {
		return t.extension()
	}
	t.groups++
	t.push(t.groups)
	t.b.WriteRune('(')
	return nil
}

// push records a group opened, group its number or 0 when it captures not,
// and the fold it restores on closing.
func (t *pyTranslator) push(group int) {
	t.foldStack = append(t.foldStack, t.fold)
	t.groupStack = append(t.groupStack, group)
}

// closeGroup translates ')', restoring the fold outside the group.
func (t *pyTranslator) closeGroup() {
	if len(t.foldStack) > 0 {
		t.fold = t.foldStack[len(t.foldStack)-1]
		t.foldStack = t.foldStack[:len(t.foldStack)-1]
		t.groupStack = t.groupStack[:len(t.groupStack)-1]
	}
	t.b.WriteRune(')')
}

// extension translates a parenthesis followed by '?'.
func (t *pyTranslator) extension() error {
	rest := string(t.rs[t.i+2:])
	switch {
	case strings.HasPrefix(rest, "P<"):
		return t.namedGroup(rest)
	case strings.HasPrefix(rest, "P="):
		return t.namedBackreference(rest)
	case strings.HasPrefix(rest, "<") && !strings.HasPrefix(rest, "<=") && !strings.HasPrefix(rest, "<!"),
		strings.HasPrefix(rest, "'"):
		return errors.New("named groups are written (?P<name>...) in Python's dialect")
	case strings.HasPrefix(rest, "#"):
		end := strings.IndexByte(rest, ')')
		if end < 0 {
			return errors.New("missing ) after a comment")
		}
		t.skipExtension(rest[:end+1])
		return nil
	default:
		return t.flagsOrGroup()
	}
}

// skipExtension moves i to the last rune of the (? form whose text after
// "(?" is text.
func (t *pyTranslator) skipExtension(text string) {
	t.i += 1 + len([]rune(text))
}

// namedGroup translates (?P<name>, rest being the text after "(?", to a
// plain group, so that groups are numbered in Python's order (regexp2
// numbers named groups after the unnamed ones).
func (t *pyTranslator) namedGroup(rest string) error {
	end := strings.IndexByte(rest, '>')
	if end < 0 {
		return errors.New("missing > after a group name")
	}
	name := rest[2:end]
	if !isPyIdent(name) {
		return fmt.Errorf("bad group name %q", name)
	}
	if _, dup := t.names[name]; dup {
		return fmt.Errorf("group name %q used twice", name)
	}
	t.groups++
	t.names[name] = t.groups
	t.push(t.groups)
	t.b.WriteRune('(')
	t.skipExtension(rest[:end+1])
	return nil
}

// namedBackreference translates (?P=name), rest being the text after
// "(?", to a numbered backreference, since named groups became plain ones.
func (t *pyTranslator) namedBackreference(rest string) error {
	end := strings.IndexByte(rest, ')')
	if end < 0 {
		return errors.New("missing ) after a group reference")
	}
	n, ok := t.names[rest[2:end]]
	if !ok {
		return fmt.Errorf("unknown group name %q", rest[2:end])
	}
	fmt.Fprintf(&t.b, `(?:\%d)`, n)
	t.skipExtension(rest[:end+1])
	return nil
}

// flagsOrGroup translates the other (? forms: (?:, lookarounds, (?>,
// conditionals and inline flags, global or scoped to a group. regexp2 has
// no u flag (it is always Unicode), so u is dropped.
func (t *pyTranslator) flagsOrGroup() error {
	flags, j, err := t.inlineFlags()
	if err != nil {
		return err
	}
	switch {
	case flags != "" && t.rs[j] == ')':
		// Global flags: Python 3.11 takes them only first.
		if t.i != 0 {
			return errors.New("global flags such as (?i) must start the pattern")
		}
		t.b.WriteString("(?" + strings.ReplaceAll(flags, "u", "") + ")")
		t.i = j
	case flags != "":
		t.push(0)
		on, off, _ := strings.Cut(flags, "-")
		if strings.Contains(on, "i") {
			t.fold = true
		}
		if strings.Contains(off, "i") {
			t.fold = false
		}
		t.b.WriteString("(?" + strings.ReplaceAll(flags, "u", ""))
		t.i = j - 1
	default:
		t.push(0)
		t.b.WriteString("(?")
		t.i++
	}
	return nil
}

// inlineFlags reads the flags after "(?" and returns them with the index
// of the rune after them, rejecting the flags regexp2 cannot honour and
// what Python would not parse.
func (t *pyTranslator) inlineFlags() (string, int, error) {
	rs := t.rs
	j := t.i + 2
	for j < len(rs) && strings.ContainsRune("aiLmsux-", rs[j]) {
		j++
	}
	flags := string(rs[t.i+2 : j])
	if strings.ContainsAny(flags, "aL") {
		return "", 0, fmt.Errorf("flag %q of (?%s) is not supported", strings.Trim(flags, "imsux-"), flags)
	}
	if j >= len(rs) {
		return "", 0, errors.New("missing ) after (?")
	}
	if flags != "" && rs[j] != ':' && rs[j] != ')' {
		return "", 0, fmt.Errorf("unknown flag %q after (?%s", rs[j], flags)
	}
	if flags == "" && !strings.ContainsRune(":=!<>(", rs[j]) {
		return "", 0, fmt.Errorf("unknown extension (?%c", rs[j])
	}
	return flags, j, nil
}

// brace translates '{': Python reads {,n} as {0,n}; regexp2 as a literal.
func (t *pyTranslator) brace() {
	rs, i := t.rs, t.i
	if i+1 < len(rs) && rs[i+1] == ',' {
		j := i + 2
		for j < len(rs) && rs[j] >= '0' && rs[j] <= '9' {
			j++
		}
		if j > i+2 && j < len(rs) && rs[j] == '}' {
			t.b.WriteString("{0,")
			t.i++
			return
		}
	}
	t.b.WriteRune('{')
}

// quantifier translates a quantifier's last rune, rejecting the possessive
// form that Python 3.11 has and regexp2 has not.
func (t *pyTranslator) quantifier(c rune) error {
	if t.i+1 < len(t.rs) && t.rs[t.i+1] == '+' {
		return errors.New("possessive quantifiers are not supported")
	}
	t.b.WriteRune(c)
	return nil
}

// literal translates a rune that stands for itself, as a class of it and
// the caseExtras Python's IGNORECASE matches to it and regexp2's misses.
func (t *pyTranslator) literal(c rune) {
	if extra, ok := caseExtras[unicode.ToLower(c)]; t.fold && ok && c < 128 {
		t.b.WriteString("[" + string(c) + extra + "]")
		return
	}
	t.b.WriteRune(c)
}

func isOctal(r rune) bool { return r >= '0' && r <= '7' }

func isPyIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || unicode.IsLetter(r) || (i > 0 && unicode.IsDigit(r))) {
			return false
		}
	}
	return true
}

// match is one match: the rune spans of the whole match and of each group
// (start -1 when the group did not take part), as Python's match.span(n).
type match struct {
	spans [][2]int
}

// find returns the first match at or after start, or nil.
func (p *pyRegexp) find(text []rune, start int) (*match, error) {
	m, err := p.re.FindRunesMatchStartingAt(text, start)
	if err != nil || m == nil {
		return nil, err
	}
	return p.toMatch(m), nil
}

func (p *pyRegexp) toMatch(m *regexp2.Match) *match {
	gs := m.Groups()
	out := &match{spans: make([][2]int, p.groups+1)}
	for i := range out.spans {
		out.spans[i] = [2]int{-1, -1}
		if i < len(gs) && len(gs[i].Captures) > 0 {
			out.spans[i] = [2]int{gs[i].Index, gs[i].Index + gs[i].Length}
		}
	}
	return out
}

// search is Python's pattern.search(s).
func (p *pyRegexp) search(s string) ([]rune, *match, error) {
	text := []rune(s)
	m, err := p.find(text, 0)
	return text, m, err
}

// groupsJoined is Python's "".join(filter(None, match.groups())): the
// groups that took part and matched something, concatenated.
func groupsJoined(text []rune, m *match) string {
	var b strings.Builder
	for _, sp := range m.spans[1:] {
		if sp[0] >= 0 && sp[1] > sp[0] {
			b.WriteString(string(text[sp[0]:sp[1]]))
		}
	}
	return b.String()
}

// templatePart is a literal or a group reference of a parsed replacement.
type templatePart struct {
	lit   string
	group int // -1 for a literal
}

// parseTemplate parses a replacement in Python's re.sub syntax: \1 to \99,
// \g<n>, \g<name>, \n and the other character escapes; an unknown escape of
// an ASCII letter is an error and any other unknown escape keeps its
// backslash, as in Python.
func (p *pyRegexp) parseTemplate(t string) ([]templatePart, error) {
	tp := &templateParser{re: p, rs: []rune(t)}
	for ; tp.i < len(tp.rs); tp.i++ {
		if c := tp.rs[tp.i]; c != '\\' {
			tp.lit.WriteRune(c)
			continue
		}
		if err := tp.escape(); err != nil {
			return nil, err
		}
	}
	tp.flush()
	return tp.parts, nil
}

// templateParser is parseTemplate's state as it walks the replacement;
// each of its escape methods parses one class of escape and leaves i on
// the escape's last rune.
type templateParser struct {
	re    *pyRegexp
	rs    []rune
	i     int
	parts []templatePart
	lit   strings.Builder // the literal text since the last group reference
}

// flush ends the literal part being built, if any.
func (tp *templateParser) flush() {
	if tp.lit.Len() > 0 {
		tp.parts = append(tp.parts, templatePart{lit: tp.lit.String(), group: -1})
		tp.lit.Reset()
	}
}

// addGroup adds a reference to group n, which the pattern must have:
// Python rejects the replacement otherwise, before any matching.
func (tp *templateParser) addGroup(n int) error {
	if n > tp.re.groups {
		return fmt.Errorf("replacement refers to group %d, the pattern has %d", n, tp.re.groups)
	}
	tp.flush()
	tp.parts = append(tp.parts, templatePart{group: n})
	return nil
}

// escape parses a backslash and what follows it.
func (tp *templateParser) escape() error {
	if tp.i+1 >= len(tp.rs) {
		return errors.New("replacement ends with a lone backslash")
	}
	tp.i++
	e := tp.rs[tp.i]
	switch {
	case e == 'g':
		return tp.groupReference()
	case e == '0':
		tp.zeroOctal()
		return nil
	case isDecimal(e):
		return tp.numericEscape(e)
	default:
		return tp.charEscape(e)
	}
}

// groupReference parses \g<n> and \g<name>.
func (tp *templateParser) groupReference() error {
	rs, i := tp.rs, tp.i
	if i+1 >= len(rs) || rs[i+1] != '<' {
		return errors.New(`missing < after \g in the replacement`)
	}
	end := slices.Index(rs[i+2:], '>')
	if end < 0 {
		return errors.New(`missing > after \g< in the replacement`)
	}
	end += i + 2
	name := string(rs[i+2 : end])
	tp.i = end
	if n, err := strconv.Atoi(name); err == nil && n >= 0 && strings.Trim(name, "0123456789") == "" {
		return tp.addGroup(n)
	}
	n, ok := tp.re.names[name]
	if !ok {
		return fmt.Errorf("replacement refers to unknown group %q", name)
	}
	return tp.addGroup(n)
}

// zeroOctal parses \0 and up to two more octal digits as a character.
func (tp *templateParser) zeroOctal() {
	v := 0
	j := tp.i
	for k := 0; k < 2 && j+1 < len(tp.rs) && isOctal(tp.rs[j+1]); k++ {
		j++
		v = v*8 + int(tp.rs[j]-'0')
	}
	tp.i = j
	tp.lit.WriteRune(rune(v))
}

// numericEscape parses \1 to \9 and what follows: three octal digits are
// a character, else one or two digits are a group reference.
func (tp *templateParser) numericEscape(e rune) error {
	rs := tp.rs
	num := string(e)
	if tp.i+1 < len(rs) && isDecimal(rs[tp.i+1]) {
		num += string(rs[tp.i+1])
		tp.i++
		if isOctal(rune(num[0])) && isOctal(rune(num[1])) && tp.i+1 < len(rs) && isOctal(rs[tp.i+1]) {
			num += string(rs[tp.i+1])
			tp.i++
			v, _ := strconv.ParseInt(num, 8, 32)
			if v > 0o377 {
				return fmt.Errorf(`octal escape \%s out of range in the replacement`, num)
			}
			tp.lit.WriteRune(rune(v))
			return nil
		}
	}
	n, _ := strconv.Atoi(num)
	return tp.addGroup(n)
}

// templateEscapes are the character escapes of a replacement.
var templateEscapes = map[rune]rune{
	'a': '\a', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v', '\\': '\\',
}

// charEscape parses any other escape: a character escape, an error for an
// ASCII letter, else the backslash kept, as in Python.
func (tp *templateParser) charEscape(e rune) error {
	if r, ok := templateEscapes[e]; ok {
		tp.lit.WriteRune(r)
		return nil
	}
	if e < 128 && unicode.IsLetter(e) {
		return fmt.Errorf(`bad escape \%c in the replacement`, e)
	}
	tp.lit.WriteRune('\\')
	tp.lit.WriteRune(e)
	return nil
}

func isDecimal(r rune) bool { return r >= '0' && r <= '9' }

// sub is Python's re.sub(pattern, template, s) with a parsed template:
// every non-overlapping match replaced, an empty match allowed right after
// a non-empty one but not at the position of a previous empty match, a
// group that did not take part replaced by nothing.
func (p *pyRegexp) sub(tmpl []templatePart, s string) (string, error) {
	text := []rune(s)
	var b strings.Builder
	pos, last := 0, 0
	prevEmptyAt := -1
	for pos <= len(text) {
		m, err := p.find(text, pos)
		if err != nil {
			return "", err
		}
		if m == nil {
			break
		}
		st, en := m.spans[0][0], m.spans[0][1]
		if st < pos {
			return "", errors.New("the pattern matched behind where it was asked to start")
		}
		if st == en && st == prevEmptyAt {
			if st >= len(text) {
				break
			}
			pos = st + 1
			continue
		}
		b.WriteString(string(text[last:st]))
		for _, tp := range tmpl {
			if tp.group < 0 {
				b.WriteString(tp.lit)
			} else if sp := m.spans[tp.group]; sp[0] >= 0 {
				b.WriteString(string(text[sp[0]:sp[1]]))
			}
		}
		last = en
		pos = en
		prevEmptyAt = -1
		if st == en {
			// Python then looks for a non-empty match at en or any match
			// further on; regexp2 cannot be asked for a non-empty match
			// only, so an empty one found again at en is skipped above.
			prevEmptyAt = en
		}
	}
	b.WriteString(string(text[last:]))
	return b.String(), nil
}
