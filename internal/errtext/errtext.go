// Package errtext shortens an error's text for a narrow surface (a status
// page cell, a terminal column) without losing either end: ingestd's
// errors wrap outwards, "what failed: of what: … : the root cause", so the
// start says which step of which feed failed and the end says why, and a
// cut from either side alone hides one of them.
package errtext

import (
	"strings"
	"unicode/utf8"
)

// Ellipsis marks what Short left out.
const Ellipsis = "…"

// Short returns s if it has at most n runes; otherwise its first clause
// (up to the first ": ", with the next one too when the first is a single
// word such as a package name), an ellipsis, and as many of its last
// clauses as fit, so that the result has at most n runes. The first clause
// gets at most a third of n; a clause too long for its share is cut
// inside, keeping its start (the first clause) or its end (the last). n
// below 20 is taken as 20.
func Short(s string, n int) string {
	n = max(n, 20)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	head := firstClause(s)
	cut := head + ": " + Ellipsis + " "
	// The head takes at most a third: the cause is the part nobody can guess.
	if utf8.RuneCountInString(head) > n/3 {
		cut = string([]rune(head)[:n/3-1]) + Ellipsis + " "
	}
	budget := n - utf8.RuneCountInString(cut)
	rest := []rune(s)
	// The longest run of whole last clauses that fits.
	tail := ""
	for i := len(rest) - 2; i > 0; i-- {
		if rest[i] == ':' && rest[i+1] == ' ' {
			cand := string(rest[i+2:])
			if utf8.RuneCountInString(cand) > budget {
				break
			}
			tail = cand
		}
	}
	if tail == "" { // the last clause alone is too long: keep its end
		tail = strings.TrimLeft(string(rest[len(rest)-budget:]), " ")
	}
	return cut + tail
}

// firstClause is s up to its first ": ", and up to the second when the
// first is a single word ("arcgis: layer description of …").
func firstClause(s string) string {
	i := strings.Index(s, ": ")
	if i < 0 {
		return s
	}
	if !strings.ContainsAny(s[:i], " \t") {
		if j := strings.Index(s[i+2:], ": "); j >= 0 {
			return s[:i+2+j]
		}
	}
	return s[:i]
}

// Head returns s if it has at most n bytes; otherwise its first n bytes,
// backed off to a rune boundary so that a quoted id or a server's text is
// never cut inside a character, and Ellipsis. It bounds what a message
// quotes from a source (an id, an exception text), where the start is what
// identifies it.
func Head(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + Ellipsis
}
