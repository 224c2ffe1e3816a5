package socrata

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ingestd/ingestd/feature"
)

// ContentError is an answer of the portal that arrived whole and is not
// what SODA sends: a page that is not an array of rows, a row that is not
// an object, invalid JSON, a value of the wrong type, a geometry that is
// not GeoJSON, a column that comes and goes between the pages of one
// read. It is the feed's error, in ingestd's words: the portal answered
// (its breaker counts a success), and asking again would get the same
// answer, so the poll fails and is not parked. It unwraps to a
// *feature.DecodeError, which is how the rest of ingestd tells a content
// error from a transport failure.
type ContentError struct {
	// What is the answer: "page 2 (offset 20, https://…)"; "" when the
	// caller names it.
	What string
	// Row is the row of a page (-1: the answer as a whole).
	Row int
	// Column is the column, "" when the fault is not one column's.
	Column string
	// Reason says what was wrong.
	Reason string

	decode *feature.DecodeError
}

func newContentError(what string, row int, column, reason string) *ContentError {
	reason = feature.BoundMessage(reason)
	return &ContentError{What: what, Row: row, Column: column, Reason: reason,
		decode: &feature.DecodeError{Format: Kind, Index: row, Msg: reason}}
}

// Error names the answer, the row and the column where they are known,
// then the reason: "page 2 (offset 20, …), row 3, column \"nom\": …".
func (e *ContentError) Error() string {
	var parts []string
	if e.What != "" {
		parts = append(parts, e.What)
	}
	if e.Row >= 0 {
		parts = append(parts, "row "+strconv.Itoa(e.Row))
	}
	if e.Column != "" {
		parts = append(parts, "column "+feature.Snippet(e.Column))
	}
	if len(parts) == 0 {
		return e.Reason
	}
	return strings.Join(parts, ", ") + ": " + e.Reason
}

// Unwrap returns the *feature.DecodeError that classifies e as the feed's.
func (e *ContentError) Unwrap() error { return e.decode }

// jsonReason says, in ingestd's words, what encoding/json (or go-geom's
// GeoJSON decoder) found wrong with the JSON of subject ("the row", "the
// metadata"): a type that is not the one wanted, named by its JSON path,
// or a syntax error at its byte.
func jsonReason(err error, subject string) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		what := subject
		if te.Field != "" {
			what = te.Field
		}
		return fmt.Sprintf("%s is %s, want %s", what, article(te.Value), feature.JSONType(te.Type))
	case errors.As(err, &se):
		return syntaxReason(se, subject)
	}
	return feature.Bound(err).Error()
}

// syntaxReason says where the JSON of subject ("the row", "the
// metadata") stops being JSON, and what came there, or that it is nested
// too deep; the byte is counted from the start of the answer.
func syntaxReason(se *json.SyntaxError, subject string) string {
	msg := se.Error()
	switch {
	case strings.Contains(msg, "exceeded max depth"):
		return fmt.Sprintf("%s is nested more than %d levels deep (byte %d of the answer)", subject, maxJSONDepth, se.Offset)
	case strings.HasPrefix(msg, "invalid character "):
		// "invalid character 'x' looking for beginning of value"
		ch := strings.TrimPrefix(msg, "invalid character ")
		if i := strings.LastIndex(ch, "' "); i >= 0 {
			ch = ch[:i+1]
		}
		return fmt.Sprintf("%s is not valid JSON: unexpected %s at byte %d of the answer", subject, ch, se.Offset)
	case strings.Contains(msg, "unexpected end"):
		return fmt.Sprintf("%s is not valid JSON: it ends inside a value, at byte %d of the answer", subject, se.Offset)
	}
	return fmt.Sprintf("%s is not valid JSON at byte %d of the answer", subject, se.Offset)
}

// maxJSONDepth is encoding/json's bound on nesting, which it reports as a
// syntax error.
const maxJSONDepth = 10000

// article is a JSON type as encoding/json names it ("string", "number
// 1.5", "array", "object", "bool") with its article.
func article(value string) string {
	switch {
	case value == "array" || value == "object":
		return "an " + value
	case value == "bool":
		return "true or false"
	case strings.HasPrefix(value, "number"):
		return "a number"
	}
	return "a " + value
}

// describeJSON names the valid JSON value v with its type: "the number
// 42", "null", "an array [1,2]".
func describeJSON(v []byte) string {
	v = []byte(strings.TrimSpace(string(v)))
	if len(v) == 0 {
		return "empty"
	}
	kind := "the number"
	switch v[0] {
	case '[':
		kind = "an array"
	case '{':
		kind = "an object"
	case '"':
		kind = "the string"
	case 'n':
		return "null"
	case 't', 'f':
		kind = "the boolean"
	}
	return kind + " " + jsonText(v)
}

// jsonText is the JSON value v as a message shows it: as written when
// short and valid (valid JSON holds no control character), else a quoted
// snippet.
func jsonText(v []byte) string {
	v = []byte(strings.TrimSpace(string(v)))
	if len(v) <= 64 && json.Valid(v) {
		return string(v)
	}
	return feature.Snippet(v)
}

// memberKeys lists the keys of the JSON object obj but the system
// fields, sorted, for a message.
func memberKeys(obj []byte) []string {
	var keys []string
	_ = eachMember(obj, func(key string, _ []byte) error {
		if !strings.HasPrefix(key, ":") {
			keys = append(keys, feature.Snippet(key))
		}
		return nil
	})
	slices.Sort(keys)
	return keys
}

// columnSet is what a read knows of the dataset's columns: those its
// metadata lists (and the system fields), and those its rows have had,
// each with the page it first came on. A column the metadata does not
// list is a column of the read only if it comes on the first page: one
// that first comes on a later page is a column renamed or added between
// the pages of the read (SODA leaves nulls out of rows, so a listed
// column absent from a page is nulls, and a column dropped shows in the
// metadata read again at the end).
type columnSet struct {
	listed map[string]bool
	seen   map[string]int
	// extra are the columns the metadata does not list, from the first page.
	extra []string
}

func newColumnSet(v *View) *columnSet {
	c := &columnSet{listed: map[string]bool{idField: true}, seen: map[string]int{}}
	for _, name := range systemColumns {
		c.listed[name] = true
	}
	for _, col := range v.Columns {
		c.listed[col.FieldName] = true
	}
	return c
}

// see records that a row of page has column key, and says why it must
// not ("" when it may).
func (c *columnSet) see(page int, key string) string {
	if _, ok := c.seen[key]; ok {
		return ""
	}
	if !c.listed[key] {
		if page > 0 {
			listed, before := c.list(c.listed), c.list(c.seenSet())
			pages := "page 0"
			if page > 1 {
				pages = fmt.Sprintf("pages 0 to %d", page-1)
			}
			where := fmt.Sprintf("the metadata nor %s have it (their columns: %s)", pages, listed)
			if listed != before {
				where = fmt.Sprintf("the metadata (%s) nor %s (%s) have it", listed, pages, before)
			}
			return fmt.Sprintf("the column comes first on page %d: neither %s", page, where)
		}
		c.extra = append(c.extra, key)
	}
	c.seen[key] = page
	return ""
}

func (c *columnSet) seenSet() map[string]bool {
	m := make(map[string]bool, len(c.seen))
	for k := range c.seen {
		m[k] = true
	}
	return m
}

// list names the columns of set, sorted, without the system fields.
func (c *columnSet) list(set map[string]bool) string {
	var names []string
	for k := range set {
		if !strings.HasPrefix(k, ":") {
			names = append(names, feature.Snippet(k))
		}
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}
