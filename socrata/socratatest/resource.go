package socratatest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// timestamp is how SODA writes a fixed timestamp.
const timestamp = "2006-01-02T15:04:05.000Z"

var aggregate = regexp.MustCompile(`^\s*count\(\*\)(\s+as\s+(\w+))?(\s*,\s*max\(:updated_at\)(\s+as\s+(\w+))?)?\s*$`)

// resource answers a /resource query: count(*) and max(:updated_at), or
// rows with their $select, $order, $limit and $offset.
func (s *Server) resource(d *Dataset, q url.Values, fault *Fault) (int, []byte, map[string]string) {
	for k := range q {
		switch k {
		case "$select", "$order", "$limit", "$offset", "$$app_token":
		default:
			return http.StatusBadRequest, errorBody("query.compiler.malformed", "Unrecognized parameter "+k), nil
		}
	}
	sel := strings.ToLower(strings.TrimSpace(q.Get("$select")))
	if m := aggregate.FindStringSubmatch(sel); m != nil {
		return http.StatusOK, s.aggregates(d, m), nil
	}
	system, fields, ok := parseSelect(sel, d)
	if !ok {
		return http.StatusBadRequest, errorBody("query.compiler.malformed", "Could not parse SoQL query \"select "+q.Get("$select")+"\" at line 1 character 8"), nil
	}
	if o := q.Get("$order"); o != "" && o != ":id" {
		return http.StatusBadRequest, errorBody("query.soql.no-such-column", "No such column: "+o), nil
	}
	limit, offset := 1000, 0
	var err1, err2 error
	if v := q.Get("$limit"); v != "" {
		limit, err1 = strconv.Atoi(v)
	}
	if v := q.Get("$offset"); v != "" {
		offset, err2 = strconv.Atoi(v)
	}
	if err1 != nil || err2 != nil || limit < 0 || offset < 0 {
		return http.StatusBadRequest, errorBody("query.compiler.malformed", "Invalid $limit or $offset"), nil
	}
	rows := d.rows
	if fault != nil && fault.PastEnd && offset >= len(rows) && len(rows) > 0 {
		offset = max(0, len(rows)-limit)
	}
	page := rows[min(offset, len(rows)):min(offset+limit, len(rows))]
	if fault != nil && fault.DropRow && len(page) > 0 {
		page = page[1:]
	}
	out := make([]json.RawMessage, 0, len(page))
	for _, r := range page {
		out = append(out, encodeRow(r, system, fields))
	}
	b, _ := json.Marshal(out)
	return http.StatusOK, b, nil
}

// aggregates answers count(*) [, max(:updated_at)] with the aliases asked.
func (s *Server) aggregates(d *Dataset, m []string) []byte {
	countName, maxName := "count", "max_updated_at"
	if m[2] != "" {
		countName = m[2]
	}
	if m[5] != "" {
		maxName = m[5]
	}
	row := map[string]any{countName: strconv.Itoa(len(d.rows))}
	if m[3] != "" && len(d.rows) > 0 {
		var last time.Time
		for _, r := range d.rows {
			if r.UpdatedAt.After(last) {
				last = r.UpdatedAt
			}
		}
		row[maxName] = last.UTC().Format(timestamp)
	}
	b, _ := json.Marshal([]any{row})
	return b
}

// parseSelect reads a $select of system fields and * (or named columns):
// the system fields asked, and the dataset's fields asked.
func parseSelect(sel string, d *Dataset) (system []string, fields []string, ok bool) {
	if sel == "" {
		sel = "*"
	}
	for _, item := range strings.Split(sel, ",") {
		item = strings.TrimSpace(item)
		switch {
		case item == "*":
			for _, c := range d.Columns {
				fields = append(fields, c.FieldName)
			}
		case item == ":*":
			system = append(system, ":id", ":created_at", ":updated_at")
		case item == ":id" || item == ":created_at" || item == ":updated_at":
			system = append(system, item)
		case slices.ContainsFunc(d.Columns, func(c Column) bool { return c.FieldName == item }):
			fields = append(fields, item)
		default:
			return nil, nil, false
		}
	}
	return system, fields, true
}

// encodeRow writes a row as the .json format does: the system fields
// asked, then the fields, nulls left out.
func encodeRow(r Row, system, fields []string) json.RawMessage {
	b := []byte{'{'}
	add := func(k string, v any) {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, k)
		b = append(b, ':')
		enc, _ := json.Marshal(v)
		b = append(b, enc...)
	}
	for _, f := range system {
		switch f {
		case ":id":
			add(f, r.ID)
		case ":created_at":
			add(f, r.CreatedAt.UTC().Format(timestamp))
		case ":updated_at":
			add(f, r.UpdatedAt.UTC().Format(timestamp))
		}
	}
	for _, f := range fields {
		if v, ok := r.Values[f]; ok && v != nil {
			add(f, v)
		}
	}
	return append(b, '}')
}
