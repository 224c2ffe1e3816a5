package socrata_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/schema"
	"github.com/ingestd/ingestd/socrata"
	"github.com/ingestd/ingestd/socrata/socratatest"
)

// A dataset of 2,500 rows read in pages of 1,000 ($limit, $offset,
// $order=:id) arrives whole: every row once, in :id order, its :id the
// feature id, its point the geometry, every other value (the second
// geometry column and the system timestamps included) its properties, as
// the portal served them; the metadata types the columns.
func TestCompleteLoad(t *testing.T) {
	t.Parallel()
	s, ts := portal(t, 2500)
	got, stats, err := fetch(t, layer(ts, 1000), nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := s.Rows(dsID)
	if len(got.features) != len(rows) || stats.Features != len(rows) || stats.Pages != 3 || stats.NumberMatched != 2500 {
		t.Fatalf("read %d features (stats %d in %d pages, count %d), want %d in 3 pages", len(got.features), stats.Features, stats.Pages, stats.NumberMatched, len(rows))
	}
	for i, f := range got.features {
		r := rows[i]
		if f.ID != r.ID {
			t.Fatalf("feature %d: id %q, want %q", i, f.ID, r.ID)
		}
		loc := r.Values["location"].(map[string]any)["coordinates"].([]float64)
		if c := firstCoords(f.Geometry); !reflect.DeepEqual(c, loc) || f.Geometry.SRID() != 4326 {
			t.Fatalf("feature %s: geometry %v (srid %d), want the point %v in 4326", f.ID, c, f.Geometry.SRID(), loc)
		}
		var props map[string]any
		if err := json.Unmarshal(f.Properties, &props); err != nil {
			t.Fatalf("feature %s: properties %s: %v", f.ID, f.Properties, err)
		}
		if want := wantProperties(t, r, "location"); !reflect.DeepEqual(props, want) {
			t.Fatalf("feature %s: properties\n%v\nwant\n%v", f.ID, props, want)
		}
	}
	for i, p := range got.pages {
		if p.StartIndex != i*1000 || !strings.Contains(p.URL, "%24order=%3Aid") || !strings.Contains(p.URL, "%24limit=1000") {
			t.Errorf("page %d: %+v; want offset %d, $order=:id and $limit=1000", i, p, i*1000)
		}
	}
	want := map[string]schema.Type{"name": schema.Text, "amount": schema.Numeric, "inspected": schema.Timestamp, "open": schema.Boolean,
		"boundary": "", ":created_at": schema.Timestamp, ":updated_at": schema.Timestamp}
	d := stats.Declared
	if d == nil || d.Geometry != "Point" || len(d.Columns) != len(want) {
		t.Fatalf("declared %+v; want a Point geometry and columns %v", d, want)
	}
	for _, c := range d.Columns {
		if tp, ok := want[c.Name]; !ok || tp != c.Type {
			t.Errorf("declared column %s %q; want %q", c.Name, c.Type, want[c.Name])
		}
	}
	if stats.Validators.Version == "" {
		t.Error("a complete read has no version for the next poll's cheap refresh")
	}
}

// geometry_column picks another geometry column, whose values become the
// geometries while the point becomes a property; one the dataset lacks,
// or that is no geometry, fails naming the dataset's geometry columns.
func TestGeometryColumn(t *testing.T) {
	t.Parallel()
	s, ts := portal(t, 30)
	l := layer(ts, 1000)
	l.Settings = socrata.Settings{Dataset: dsID, GeometryColumn: "boundary"}
	got, stats, err := fetch(t, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Declared.Geometry != "MultiPolygon" {
		t.Errorf("declared geometry %q, want MultiPolygon", stats.Declared.Geometry)
	}
	for i, f := range got.features {
		r := s.Rows(dsID)[i]
		_, has := r.Values["boundary"]
		if (f.Geometry != nil) != has || (has && f.Geometry.Layout().Stride() != 2) {
			t.Errorf("feature %s: geometry %v, want the boundary (%v)", f.ID, f.Geometry, has)
		}
		if !strings.Contains(string(f.Properties), `"location":{"coordinates"`) {
			t.Errorf("feature %s: properties %s lack the point", f.ID, f.Properties)
		}
	}
	for _, bad := range []string{"nope", "amount"} {
		l.Settings = socrata.Settings{Dataset: dsID, GeometryColumn: bad}
		_, _, err := fetch(t, l, nil)
		var me *socrata.MetadataError
		if !errors.As(err, &me) || !strings.Contains(err.Error(), `geometry_column "`+bad+`"`) || !strings.Contains(err.Error(), "location, boundary") {
			t.Errorf("geometry_column %s: %v; want a metadata error naming location, boundary", bad, err)
		}
	}
}

// An unchanged dataset is a cheap refresh: with the version of the last
// applied read, the next fetch asks only the metadata and the count and
// answers NotModified; an edit (which moves rowsUpdatedAt) or, without
// rowsUpdatedAt, max(:updated_at) makes it read the rows again.
func TestCheapRefresh(t *testing.T) {
	t.Parallel()
	for _, noRowsUpdatedAt := range []bool{false, true} {
		s, ts := portal(t, 1500)
		if noRowsUpdatedAt {
			s.Add(&socratatest.Dataset{ID: dsID, Columns: columns, NoRowsUpdatedAt: true}, s.Rows(dsID)...)
		}
		l := layer(ts, 1000)
		_, first, err := fetch(t, l, nil)
		if err != nil {
			t.Fatal(err)
		}
		l.Validators = first.Validators
		before := len(s.Requests())
		got, stats, err := fetch(t, l, nil)
		if err != nil || !stats.NotModified || len(got.pages) != 0 {
			t.Fatalf("unchanged dataset (no rowsUpdatedAt: %v): %v, not modified %v, %d pages; want not modified", noRowsUpdatedAt, err, stats.NotModified, len(got.pages))
		}
		asked := s.Requests()[before:]
		if len(asked) != 2 || !strings.HasPrefix(asked[0].Path, "/api/views/") || !strings.HasPrefix(asked[1].Select, "count(*)") {
			t.Errorf("unchanged dataset: asked %+v; want the metadata and the count only", asked)
		}
		if noRowsUpdatedAt != strings.Contains(asked[1].Select, "max(:updated_at)") {
			t.Errorf("count asked %q; max(:updated_at) wanted exactly when the metadata has no rowsUpdatedAt (%v)", asked[1].Select, noRowsUpdatedAt)
		}
		s.Update(dsID, row(3).ID, map[string]any{"name": "Renamed"})
		got, stats, err = fetch(t, l, nil)
		if err != nil || stats.NotModified || len(got.features) != 1500 {
			t.Fatalf("edited dataset: %v, not modified %v, %d features; want a full read", err, stats.NotModified, len(got.features))
		}
	}
}

// The portal's error bodies, in both of SODA's shapes and whatever the
// status, fail the fetch with the portal's own words and the request
// they answered.
func TestErrorBodies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault socratatest.Fault
		token string
		want  []string
	}{
		{"malformed query on the count", socratatest.Fault{Match: selects("count(*)"), Status: 400,
			Body: `{"code":"query.compiler.malformed","error":true,"message":"Invalid SoQL query: column n is ambiguous","data":{}}`},
			"", []string{"count of", "HTTP 400", "query.compiler.malformed", "Invalid SoQL query: column n is ambiguous"}},
		{"error object with 200 for a page", socratatest.Fault{Match: selects(":id, :created_at"), Status: 200,
			Body: `{"error":true,"message":"Query timed out; try a smaller $limit"}`},
			"", []string{"page 0", "HTTP 200", "Query timed out; try a smaller $limit"}},
		{"dataset gone", socratatest.Fault{Match: func(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/api/views/") }, Status: 404,
			Body: `{"code":"not_found","error":true,"message":"Cannot find view with id abcd-1234"}`},
			"", []string{"metadata of", "HTTP 404", "not_found", "Cannot find view with id abcd-1234"}},
		{"app token refused", socratatest.Fault{Match: func(*http.Request) bool { return false }},
			"wrong", []string{"HTTP 403", "Invalid app_token specified"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, ts := portal(t, 10)
			s.AddFault(&tc.fault)
			l := layer(ts, 1000)
			if tc.token != "" {
				l.Headers = map[string]string{socrata.TokenHeader: tc.token}
			}
			_, _, err := fetch(t, l, nil)
			var se *socrata.ServerError
			if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), "socrata: ") {
				t.Fatalf("err %v; want a socrata *ServerError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err %q lacks %q", err, w)
				}
			}
		})
	}
}

// selects matches the requests whose $select starts with prefix.
func selects(prefix string) func(r *http.Request) bool {
	return func(r *http.Request) bool { return strings.HasPrefix(r.URL.Query().Get("$select"), prefix) }
}

// A 5xx with an error body is the portal's failure: retried by the
// breaker (the read completes when the portal recovers), and when it
// persists the poll's error keeps the portal's words.
func TestServerErrorRetried(t *testing.T) {
	t.Parallel()
	s, ts := portal(t, 10)
	body := `{"code":"internal.error","error":true,"message":"Backend unavailable"}`
	s.AddFault(&socratatest.Fault{Match: selects("count(*)"), Times: 1, Status: 500, Body: body})
	if _, _, err := fetch(t, layer(ts, 1000), nil); err != nil {
		t.Fatalf("a 500 then a count: %v; want the retry to succeed", err)
	}
	var counts int
	for _, r := range s.Requests() {
		if strings.HasPrefix(r.Select, "count(*)") {
			counts++
		}
	}
	if counts != 2 {
		t.Errorf("%d count requests, want 2 (the 500 and its retry)", counts)
	}
	s.AddFault(&socratatest.Fault{Match: selects("count(*)"), Status: 500, Body: body})
	_, _, err := fetch(t, layer(ts, 1000), nil)
	var se *socrata.ServerError
	if !errors.As(err, &se) || se.Status != 500 || !strings.Contains(err.Error(), "attempts exhausted") || !strings.Contains(err.Error(), "(internal.error): Backend unavailable") {
		t.Errorf("a persistent 500: %v; want the portal's words after the retries", err)
	}
}
