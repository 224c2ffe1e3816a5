package socrata_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/socrata/socratatest"
	"github.com/ingestd/ingestd/source"
)

// editRows edits a page's rows as JSON values.
func editRows(t *testing.T, edit func(rows []any)) func([]byte) []byte {
	return func(body []byte) []byte {
		var rows []any
		if err := json.Unmarshal(body, &rows); err != nil {
			t.Errorf("the portal's page: %v", err)
			return body
		}
		edit(rows)
		out, _ := json.Marshal(rows)
		return out
	}
}

// isViews matches the metadata requests.
func isViews(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/api/views/") }

// A page or a row that is not what SODA sends is the feed's content
// error, in ingestd's words: which page (numbered from 0 in every
// message, with its $offset), which row, which column, what was wrong;
// never encoding/json's words, never a *breaker.RetryError (the portal
// answered: the poll fails and is not parked). A column that first comes
// on a later page, and is not one the metadata lists, is a column renamed
// or added while the dataset was read: the read fails naming it, the
// columns the metadata lists and those of the pages before.
func TestContentErrorsInIngestdWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault socratatest.Fault
		want  []string
	}{
		{"a page that is 42", socratatest.Fault{Match: offset(1000), Status: 200, Body: "42"},
			[]string{"socrata: page 1 (offset 1000, ", "the answer is the JSON value 42, not an array of rows"}},
		{"a page that is null", socratatest.Fault{Match: offset(2000), Status: 200, Body: "null"},
			[]string{"page 2 (offset 2000, ", "the JSON value null"}},
		{"a row that is a number", socratatest.Fault{Match: offset(1000), Edit: editRows(t, func(rows []any) { rows[5] = 42 })},
			[]string{"page 1 (offset 1000, ", "row 5: the row is the number 42, not an object of columns"}},
		{"a column renamed on page 2", socratatest.Fault{Match: offset(2000), Edit: func(b []byte) []byte {
			return bytes.ReplaceAll(b, []byte(`"name":`), []byte(`"nom":`))
		}}, []string{"page 2 (offset 2000, ", `column "nom": the column comes first on page 2: neither the metadata nor pages 0 to 1 have it (their columns: "amount", "boundary"`,
			`this row has "amount", "boundary", "inspected", "location", "nom", "open"`, "mixes two schemas"}},
		{"invalid JSON in row 3", socratatest.Fault{Match: offset(0), Edit: func(b []byte) []byte {
			i := bytes.Index(b, []byte(`{":id":"row-0000.0003"`))
			return append(append(b[:i:i], `{":id":"row-0000.0003",name:1},`...), b[i:]...)
		}}, []string{"page 0 (offset 0, ", "row 3: the row is not valid JSON: unexpected 'n' at byte"}},
		{"a row nested too deep", socratatest.Fault{Match: offset(0), Status: 200,
			Body: `[{":id":"a","deep":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}]`},
			[]string{"page 0 (offset 0, ", "row 0: the row is nested more than 10000 levels deep"}},
		{"a geometry that is WKT", socratatest.Fault{Match: offset(1000), Edit: editRows(t, func(rows []any) {
			rows[2].(map[string]any)["location"] = "POINT (1 2)"
		})}, []string{"page 1 (offset 1000, ", `row 2, column "location": the geometry column's value is not a GeoJSON geometry: the value is a string, want an object`}},
		{"metadata of the wrong type", socratatest.Fault{Match: isViews, Edit: func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"rowsUpdatedAt":`), []byte(`"rowsUpdatedAt":"soon","x":`), 1)
		}}, []string{"socrata: metadata of ", "rowsUpdatedAt is a string, want a number"}},
		{"metadata that is an array", socratatest.Fault{Match: isViews, Status: 200, Body: `[{}]`},
			[]string{"socrata: metadata of ", "the metadata is an array, want an object"}},
		{"metadata that is 42", socratatest.Fault{Match: isViews, Status: 200, Body: `42`},
			[]string{"socrata: metadata of ", "the answer is the JSON value 42, not an object"}},
		{"a count that is a string", socratatest.Fault{Match: selects("count(*)"), Status: 200, Body: `"many"`},
			[]string{"socrata: count of ", `the answer is the JSON value "many", not an array of rows`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, ts := portal(t, 2500)
			s.AddFault(&tc.fault)
			_, _, err := fetch(t, layer(ts, 1000), nil)
			var de *feature.DecodeError
			var retry *breaker.RetryError
			if err == nil || !errors.As(err, &de) || errors.As(err, &retry) {
				t.Fatalf("err %v; want the feed's content error (a *feature.DecodeError), not the portal's failure", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err %q lacks %q", err, w)
				}
			}
			for _, lib := range []string{" json:", "Go value", "Go struct", "feature ", "body of page", "invalid character"} {
				if strings.Contains(err.Error(), lib) {
					t.Errorf("err %q says %q: a library's words, or another numbering", err, lib)
				}
			}
		})
	}
}

// A column the dataset drops while it is read shows in its metadata,
// read again at the end: the read fails naming the columns before and
// after, since its pages mix two schemas. A column the metadata does not
// list, on the first page already, is a column of the read.
func TestColumnsChangedDuringRead(t *testing.T) {
	t.Parallel()
	s, ts := portal(t, 2500)
	dropOpen := func(b []byte) []byte {
		var v map[string]any
		_ = json.Unmarshal(b, &v)
		cols := v["columns"].([]any)
		v["columns"] = cols[:len(cols)-1]
		out, _ := json.Marshal(v)
		return out
	}
	s.AddFault(&socratatest.Fault{Match: offset(2000), Times: 1, Before: func(s *socratatest.Server) {
		s.AddFault(&socratatest.Fault{Match: isViews, Edit: dropOpen})
	}})
	_, _, err := fetch(t, layer(ts, 1000), nil)
	var ie *source.IncompleteError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "columns changed during the read (name, amount, inspected, open, location, boundary, then name, amount, inspected, open, location)") {
		t.Fatalf("err %v; want an *source.IncompleteError naming the columns before and after", err)
	}

	s2, ts2 := portal(t, 1500)
	s2.AddFault(&socratatest.Fault{Match: isViews, Edit: dropOpen})
	got, _, err := fetch(t, layer(ts2, 1000), nil)
	if err != nil || len(got.features) != 1500 || !strings.Contains(string(got.features[1].Properties), `"boundary"`) {
		t.Fatalf("a column the metadata does not list, from the first page: %v, %d features; want it loaded", err, len(got.features))
	}
}
