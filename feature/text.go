package feature

import (
	"strconv"
	"unicode/utf8"
)

// Bad text in a feature is repaired, never a reason to fail the page: one
// county record with a Latin-1 byte in a UTF-8 body, or a JavaScript
// producer's lone surrogate escape, would otherwise stop the whole layer at
// every poll. The repair is the one encoding/json applies when it decodes a
// string, so it is faithful in the sense that any JSON reader of the source
// would have seen the same text:
//
//   - every byte that does not belong to a valid UTF-8 sequence (including
//     encoded surrogates and overlong forms) becomes U+FFFD, one per byte;
//   - a \uD800–\uDFFF escape that is not part of a high/low surrogate pair
//     becomes the escape \ufffd;
//   - everything else is kept as written, \u0000 included: whether a NUL
//     can be stored is the store's decision (jsonb cannot hold it).

// snippetBytes bounds the input quoted in an error message: a 20 MB number
// must not make a 20 MB log line.
const snippetBytes = 100

// snippet quotes at most snippetBytes of s for an error message, cut at a
// rune boundary, with invalid bytes escaped (the text is valid UTF-8 and
// safe for a PostgreSQL text column).
func Snippet[T string | []byte](s T) string {
	if len(s) <= snippetBytes {
		return strconv.Quote(string(s))
	}
	cut := snippetBytes
	for cut > snippetBytes-utf8.UTFMax && cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(string(s[:cut])) + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// boundedError caps the message of an error from elsewhere (strconv and
// encoding/json quote their whole input) while keeping it for errors.Is
// and errors.As.
type boundedError struct{ err error }

// maxErrorText bounds the text of one wrapped error.
const maxErrorText = 300

func (e boundedError) Error() string {
	msg := e.err.Error()
	if len(msg) <= maxErrorText {
		return msg
	}
	cut := maxErrorText
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "…"
}

func (e boundedError) Unwrap() error { return e.err }

// bound wraps err so that its message stays short; nil stays nil.
func Bound(err error) error {
	switch err.(type) {
	case nil, boundedError, *LimitError:
		return err
	}
	return boundedError{err}
}

// fixUTF8 returns s with every byte outside a valid UTF-8 sequence replaced
// by U+FFFD (one per byte, as encoding/json does; strings.ToValidUTF8 would
// merge a run into one).
func FixUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(b)
}

// jsonTextStats scans valid JSON text (an object, as validJSON checked it)
// and returns the number of members of the outermost object and whether the
// text needs repairJSONText: an invalid UTF-8 byte or a lone surrogate
// escape. It makes no allocation; text is read once.
func JSONTextStats(b []byte) (members int, needsRepair Repairs) {
	depth := 0
	empty := true
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '"':
			if depth == 1 {
				empty = false
			}
			// Scan the string.
			for i++; i < len(b) && b[i] != '"'; i++ {
				switch c := b[i]; {
				case c == '\\':
					if i+1 < len(b) && b[i+1] == 'u' {
						if n := surrogateEscape(b, i); n < 0 {
							needsRepair |= RepairedSurrogate
						} else {
							i += n - 1
							continue
						}
					}
					i++
				case c >= utf8.RuneSelf:
					r, size := utf8.DecodeRune(b[i:])
					if r == utf8.RuneError && size == 1 {
						needsRepair |= RepairedUTF8
					}
					i += size - 1
				}
			}
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		case c == ',' && depth == 1:
			members++
		}
	}
	if !empty {
		members++
	}
	return members, needsRepair
}

// surrogateEscape looks at the \u escape at b[i] ('\\'): it returns the
// length of the escape (6, or 12 for a surrogate pair) when it is sound, -1
// for a lone surrogate.
func surrogateEscape(b []byte, i int) int {
	r, ok := hex4(b, i+2)
	if !ok || r < 0xD800 || r > 0xDFFF {
		return 6
	}
	if r >= 0xDC00 {
		return -1 // a low surrogate first
	}
	if i+12 <= len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
		if lo, ok := hex4(b, i+8); ok && lo >= 0xDC00 && lo <= 0xDFFF {
			return 12
		}
	}
	return -1
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// repairJSONText returns a copy of the valid JSON text b with invalid UTF-8
// bytes replaced by U+FFFD and lone surrogate escapes by \ufffd. Only
// strings can hold either, so the copy is valid JSON with the same
// structure.
func RepairJSONText(b []byte) []byte {
	out := make([]byte, 0, len(b)+16)
	inString := false
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '"':
			inString = !inString
		case inString && c == '\\':
			n := 2
			if i+1 < len(b) && b[i+1] == 'u' {
				n = surrogateEscape(b, i)
				if n < 0 {
					out = append(out, `\ufffd`...)
					i += 6
					continue
				}
			}
			n = min(n, len(b)-i)
			out = append(out, b[i:i+n]...)
			i += n
			continue
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, b[i:i+size]...)
			}
			i += size
			continue
		}
		out = append(out, c)
		i++
	}
	return out
}
