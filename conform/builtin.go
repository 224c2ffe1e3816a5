package conform

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// scanNumber is prefixedNumberRe's match at the start of s, without the
// engine: ^\s*(\d+(?:[ -]\d/\d)?|\d+-\d+|\d+-?[A-Z])\s+ ignoring case, tried
// alternative by alternative as a backtracking engine tries them. It
// returns the group's byte span and the end of the trailing whitespace, or
// ok false. Most features of an address layer go through it twice (number
// and street), so it is worth skipping regexp2's allocations for;
// FuzzBuiltinScan holds it to the pattern.
func scanNumber(s string) (gs, ge, end int, ok bool) {
	i := skipSpace(s, 0)
	gs = i
	d := skipDigits(s, i)
	if d == i {
		return 0, 0, 0, false
	}
	// \d+(?:[ -]\d/\d)?\s+: with the fraction, then without it. Fewer
	// digits never help: a digit would follow, which no branch takes.
	if d < len(s) && (s[d] == ' ' || s[d] == '-') {
		if e, ok := fraction(s, d+1); ok {
			if w := skipSpace(s, e); w > e {
				return gs, e, w, true
			}
		}
	}
	if w := skipSpace(s, d); w > d {
		return gs, d, w, true
	}
	// \d+-\d+\s+
	if d < len(s) && s[d] == '-' {
		if e := skipDigits(s, d+1); e > d+1 {
			if w := skipSpace(s, e); w > e {
				return gs, e, w, true
			}
		}
	}
	// \d+-?[A-Z]\s+: with the hyphen, then without.
	for _, h := range []int{1, 0} {
		p := d
		if h == 1 {
			if p >= len(s) || s[p] != '-' {
				continue
			}
			p++
		}
		if r, n := utf8.DecodeRuneInString(s[p:]); n > 0 && isFoldedLetter(r) {
			if w := skipSpace(s, p+n); w > p+n {
				return gs, p + n, w, true
			}
		}
	}
	return 0, 0, 0, false
}

// fraction matches \d/\d at i and returns its end.
func fraction(s string, i int) (int, bool) {
	r, n := utf8.DecodeRuneInString(s[i:])
	if n == 0 || !unicode.IsDigit(r) {
		return 0, false
	}
	i += n
	if i >= len(s) || s[i] != '/' {
		return 0, false
	}
	i++
	r, n = utf8.DecodeRuneInString(s[i:])
	if n == 0 || !unicode.IsDigit(r) {
		return 0, false
	}
	return i + n, true
}

// isFoldedLetter is [A-Z] under Python's IGNORECASE.
func isFoldedLetter(r rune) bool {
	return ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || r == 0x130 || r == 0x131 || r == 0x17f || r == 0x212a
}

func skipSpace(s string, i int) int {
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !isPySpace(r) {
			break
		}
		i += n
	}
	return i
}

func skipDigits(s string, i int) int {
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsDigit(r) {
			break
		}
		i += n
	}
	return i
}

// prefixedNumber is batch-machine's row_fxn_prefixed_number on one value.
func prefixedNumber(s string) string {
	gs, ge, _, ok := scanNumber(s)
	if !ok {
		return ""
	}
	return s[gs:ge]
}

// postfixedStreet is row_fxn_postfixed_street without units:
// ^(?:\s*(?:…)\s+)?(.*), the rest of the value after a house number up to
// a line break, which . does not match.
func postfixedStreet(s string) string {
	start := 0
	if _, _, end, ok := scanNumber(s); ok {
		start = end
	}
	rest := s[start:]
	if i := strings.IndexByte(rest, '\n'); i >= 0 {
		rest = rest[:i]
	}
	return rest
}
