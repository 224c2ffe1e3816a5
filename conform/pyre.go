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
	var b strings.Builder
	rs := []rune(p)
	groups := 0
	names := map[string]int{}
	inClass := false
	classStart := 0
	// fold as it was outside each open group: (?i:...) and (?-i:...)
	// change it for their group only.
	var foldStack []bool
	// the group each open parenthesis opened, 0 for one that captures not.
	var groupStack []int
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case c == '\\':
			if i+1 >= len(rs) {
				return "", 0, nil, errors.New("pattern ends with a lone backslash")
			}
			i++
			e := rs[i]
			switch e {
			case 'Z':
				if inClass {
					return "", 0, nil, fmt.Errorf(`bad escape \Z in a character class`)
				}
				b.WriteString(`\z`)
			case 's':
				if inClass {
					b.WriteString(pySpaceClass)
				} else {
					b.WriteString("[" + pySpaceClass + "]")
				}
			case 'S':
				if inClass {
					b.WriteString(`\S`)
				} else {
					b.WriteString("[^" + pySpaceClass + "]")
				}
			case 'w':
				if inClass {
					b.WriteString(pyWordClass)
				} else {
					b.WriteString("[" + pyWordClass + "]")
				}
			case 'W':
				if inClass {
					b.WriteString(`\W`)
				} else {
					b.WriteString("[^" + pyWordClass + "]")
				}
			case 'b', 'B':
				switch {
				case inClass && e == 'B':
					return "", 0, nil, errors.New(`bad escape \B in a character class`)
				case inClass:
					b.WriteString(`\b`)
				case e == 'b':
					b.WriteString(pyWordBoundary)
				default:
					b.WriteString(pyNotWordBoundary)
				}
			case '1', '2', '3', '4', '5', '6', '7', '8', '9':
				if inClass {
					b.WriteRune('\\')
					b.WriteRune(e)
					break
				}
				// Python: three octal digits are a character, else one or
				// two digits name a group already closed.
				if i+2 < len(rs) && isOctal(e) && isOctal(rs[i+1]) && isOctal(rs[i+2]) {
					v, _ := strconv.ParseUint(string(rs[i:i+3]), 8, 32)
					if v > 0o377 {
						return "", 0, nil, fmt.Errorf(`octal escape \%s out of range`, string(rs[i:i+3]))
					}
					fmt.Fprintf(&b, `\x{%x}`, v)
					i += 2
					break
				}
				n := int(e - '0')
				if i+1 < len(rs) && rs[i+1] >= '0' && rs[i+1] <= '9' {
					n = n*10 + int(rs[i+1]-'0')
					i++
				}
				if n > groups || slices.Contains(groupStack, n) {
					return "", 0, nil, fmt.Errorf(`\%d refers to a group not closed before it`, n)
				}
				fmt.Fprintf(&b, `(?:\%d)`, n)
			case 'd', 'D', 'A', 'a', 'f', 'n', 'r', 't', 'v', 'x', 'u', '0':
				if inClass && e == 'A' {
					return "", 0, nil, fmt.Errorf(`bad escape \%c in a character class`, e)
				}
				b.WriteRune('\\')
				b.WriteRune(e)
			case 'U':
				// \UXXXXXXXX: regexp2 only knows \uXXXX and \x{...}.
				if i+8 >= len(rs) {
					return "", 0, nil, errors.New(`incomplete escape \U`)
				}
				hex := string(rs[i+1 : i+9])
				v, err := strconv.ParseUint(hex, 16, 32)
				if err != nil || v > unicode.MaxRune {
					return "", 0, nil, fmt.Errorf(`bad escape \U%s`, hex)
				}
				fmt.Fprintf(&b, `\x{%x}`, v)
				i += 8
			default:
				if e < 128 && unicode.IsLetter(e) {
					return "", 0, nil, fmt.Errorf(`bad escape \%c`, e)
				}
				b.WriteRune('\\')
				b.WriteRune(e)
			}
		case inClass:
			if c == ']' && i > classStart {
				inClass = false
				if fold {
					// In a negated class too: there they are excluded.
					b.WriteString(classExtras(rs[classStart:i]))
				}
			}
			if c == '[' {
				// regexp2 reads "-[" as class subtraction; Python as a literal.
				b.WriteString(`\[`)
				continue
			}
			b.WriteRune(c)
		case c == '[':
			inClass = true
			b.WriteRune(c)
			classStart = i + 1
			if classStart < len(rs) && rs[classStart] == '^' {
				b.WriteRune('^')
				i++
				classStart++
			}
			// A ']' first in a class is a literal in Python.
			if classStart < len(rs) && rs[classStart] == ']' {
				b.WriteString(`\]`)
				i++
				classStart++
			}
		case c == '(':
			if i+1 < len(rs) && rs[i+1] == '?' {
				rest := string(rs[i+2:])
				switch {
				case strings.HasPrefix(rest, "P<"):
					end := strings.IndexByte(rest, '>')
					if end < 0 {
						return "", 0, nil, errors.New("missing > after a group name")
					}
					name := rest[2:end]
					if !isPyIdent(name) {
						return "", 0, nil, fmt.Errorf("bad group name %q", name)
					}
					if _, dup := names[name]; dup {
						return "", 0, nil, fmt.Errorf("group name %q used twice", name)
					}
					groups++
					names[name] = groups
					foldStack = append(foldStack, fold)
					groupStack = append(groupStack, groups)
					b.WriteRune('(')
					i += 2 + len([]rune(rest[:end+1])) - 1
				case strings.HasPrefix(rest, "P="):
					end := strings.IndexByte(rest, ')')
					if end < 0 {
						return "", 0, nil, errors.New("missing ) after a group reference")
					}
					n, ok := names[rest[2:end]]
					if !ok {
						return "", 0, nil, fmt.Errorf("unknown group name %q", rest[2:end])
					}
					fmt.Fprintf(&b, `(?:\%d)`, n)
					i += 2 + len([]rune(rest[:end+1])) - 1
				case strings.HasPrefix(rest, "<") && !strings.HasPrefix(rest, "<=") && !strings.HasPrefix(rest, "<!"),
					strings.HasPrefix(rest, "'"):
					return "", 0, nil, errors.New("named groups are written (?P<name>...) in Python's dialect")
				case strings.HasPrefix(rest, "#"):
					end := strings.IndexByte(rest, ')')
					if end < 0 {
						return "", 0, nil, errors.New("missing ) after a comment")
					}
					i += 2 + len([]rune(rest[:end+1])) - 1
				default:
					// (?:, lookarounds, (?>, conditionals and inline flags.
					j := i + 2
					for j < len(rs) && strings.ContainsRune("aiLmsux-", rs[j]) {
						j++
					}
					flags := string(rs[i+2 : j])
					if strings.ContainsAny(flags, "aL") {
						return "", 0, nil, fmt.Errorf("flag %q of (?%s) is not supported", strings.Trim(flags, "imsux-"), flags)
					}
					if j >= len(rs) {
						return "", 0, nil, errors.New("missing ) after (?")
					}
					if flags != "" && rs[j] != ':' && rs[j] != ')' {
						return "", 0, nil, fmt.Errorf("unknown flag %q after (?%s", rs[j], flags)
					}
					if flags == "" && !strings.ContainsRune(":=!<>(", rs[j]) {
						return "", 0, nil, fmt.Errorf("unknown extension (?%c", rs[j])
					}
					switch {
					case flags != "" && rs[j] == ')':
						// Global flags: Python 3.11 takes them only first.
						if i != 0 {
							return "", 0, nil, errors.New("global flags such as (?i) must start the pattern")
						}
						b.WriteString("(?" + strings.ReplaceAll(flags, "u", "") + ")")
						i = j
					case flags != "":
						foldStack = append(foldStack, fold)
						groupStack = append(groupStack, 0)
						on, off, _ := strings.Cut(flags, "-")
						if strings.Contains(on, "i") {
							fold = true
						}
						if strings.Contains(off, "i") {
							fold = false
						}
						b.WriteString("(?" + strings.ReplaceAll(flags, "u", ""))
						i = j - 1
					default:
						foldStack = append(foldStack, fold)
						groupStack = append(groupStack, 0)
						b.WriteString("(?")
						i++
					}
				}
			} else {
				groups++
				foldStack = append(foldStack, fold)
				groupStack = append(groupStack, groups)
				b.WriteRune('(')
			}
		case c == ')':
			if len(foldStack) > 0 {
				fold = foldStack[len(foldStack)-1]
				foldStack = foldStack[:len(foldStack)-1]
				groupStack = groupStack[:len(groupStack)-1]
			}
			b.WriteRune(c)
		case c == '{':
			// Python reads {,n} as {0,n}; regexp2 as a literal.
			if i+1 < len(rs) && rs[i+1] == ',' {
				j := i + 2
				for j < len(rs) && rs[j] >= '0' && rs[j] <= '9' {
					j++
				}
				if j > i+2 && j < len(rs) && rs[j] == '}' {
					b.WriteString("{0,")
					i++
					continue
				}
			}
			b.WriteRune(c)
		case c == '*' || c == '+' || c == '?' || c == '}':
			if i+1 < len(rs) && rs[i+1] == '+' {
				return "", 0, nil, errors.New("possessive quantifiers are not supported")
			}
			b.WriteRune(c)
		default:
			if extra, ok := caseExtras[unicode.ToLower(c)]; fold && ok && c < 128 {
				b.WriteString("[" + string(c) + extra + "]")
				continue
			}
			b.WriteRune(c)
		}
	}
	if inClass {
		return "", 0, nil, errors.New("unterminated character set")
	}
	return b.String(), groups, names, nil
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
	var parts []templatePart
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			parts = append(parts, templatePart{lit: lit.String(), group: -1})
			lit.Reset()
		}
	}
	addGroup := func(n int) error {
		if n > p.groups {
			return fmt.Errorf("replacement refers to group %d, the pattern has %d", n, p.groups)
		}
		flush()
		parts = append(parts, templatePart{group: n})
		return nil
	}
	rs := []rune(t)
	isOct := func(r rune) bool { return r >= '0' && r <= '7' }
	isDig := func(r rune) bool { return r >= '0' && r <= '9' }
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		if c != '\\' {
			lit.WriteRune(c)
			continue
		}
		if i+1 >= len(rs) {
			return nil, errors.New("replacement ends with a lone backslash")
		}
		i++
		e := rs[i]
		switch {
		case e == 'g':
			if i+1 >= len(rs) || rs[i+1] != '<' {
				return nil, errors.New(`missing < after \g in the replacement`)
			}
			end := -1
			for j := i + 2; j < len(rs); j++ {
				if rs[j] == '>' {
					end = j
					break
				}
			}
			if end < 0 {
				return nil, errors.New(`missing > after \g< in the replacement`)
			}
			name := string(rs[i+2 : end])
			i = end
			if n, err := strconv.Atoi(name); err == nil && n >= 0 && strings.Trim(name, "0123456789") == "" {
				if err := addGroup(n); err != nil {
					return nil, err
				}
				continue
			}
			n, ok := p.names[name]
			if !ok {
				return nil, fmt.Errorf("replacement refers to unknown group %q", name)
			}
			if err := addGroup(n); err != nil {
				return nil, err
			}
		case e == '0':
			// Octal escape of up to three digits.
			v := 0
			j := i
			for k := 0; k < 2 && j+1 < len(rs) && isOct(rs[j+1]); k++ {
				j++
				v = v*8 + int(rs[j]-'0')
			}
			i = j
			lit.WriteRune(rune(v))
		case isDig(e):
			num := string(e)
			if i+1 < len(rs) && isDig(rs[i+1]) {
				num += string(rs[i+1])
				i++
				if isOct(rune(num[0])) && isOct(rune(num[1])) && i+1 < len(rs) && isOct(rs[i+1]) {
					num += string(rs[i+1])
					i++
					v, _ := strconv.ParseInt(num, 8, 32)
					if v > 0o377 {
						return nil, fmt.Errorf(`octal escape \%s out of range in the replacement`, num)
					}
					lit.WriteRune(rune(v))
					continue
				}
			}
			n, _ := strconv.Atoi(num)
			if err := addGroup(n); err != nil {
				return nil, err
			}
		default:
			switch e {
			case 'a':
				lit.WriteRune('\a')
			case 'b':
				lit.WriteRune('\b')
			case 'f':
				lit.WriteRune('\f')
			case 'n':
				lit.WriteRune('\n')
			case 'r':
				lit.WriteRune('\r')
			case 't':
				lit.WriteRune('\t')
			case 'v':
				lit.WriteRune('\v')
			case '\\':
				lit.WriteRune('\\')
			default:
				if e < 128 && unicode.IsLetter(e) {
					return nil, fmt.Errorf(`bad escape \%c in the replacement`, e)
				}
				lit.WriteRune('\\')
				lit.WriteRune(e)
			}
		}
	}
	flush()
	return parts, nil
}

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
