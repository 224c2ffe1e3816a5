// Package socratatest serves Socrata datasets as the SODA 2.1
// documentation describes them, for tests: the metadata at
// /api/views/<4x4>.json (columns with fieldName and dataTypeName,
// rowsUpdatedAt), the rows at /resource/<4x4>.json with $select (the
// system fields :id, :created_at and :updated_at among them), $order=:id,
// $limit (default 1000) and $offset, count(*) and max(:updated_at), an app
// token in X-App-Token (requests without one are throttled with 429 after
// a number of them), SODA's error bodies, and edits that move
// rowsUpdatedAt and :updated_at. Faults make it misbehave as portals do: a
// page that drops a row, an offset past the end answered with rows, a
// request answered with an error body, an answer edited.
package socratatest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Column is one column of a dataset's metadata.
type Column struct {
	FieldName    string
	Name         string
	DataTypeName string
}

// Row is one row: its system fields and its values, by field name, as
// the .json format writes them (numbers as strings, checkboxes as
// booleans, points as GeoJSON objects); a missing or nil value is null,
// which SODA leaves out of the row.
type Row struct {
	ID                   string
	CreatedAt, UpdatedAt time.Time
	Values               map[string]any
}

// Dataset is one dataset of the portal.
type Dataset struct {
	ID      string
	Name    string
	Columns []Column
	// RowsUpdatedAt is when the rows last changed; NoRowsUpdatedAt leaves
	// it out of the metadata (the client then asks max(:updated_at)).
	RowsUpdatedAt   time.Time
	NoRowsUpdatedAt bool
	rows            []Row // sorted by ID
}

// Request is one request the server answered, for tests to inspect.
type Request struct {
	Path   string
	Query  string // decoded
	Select string
	Offset int
	Token  string
	Status int
	At     time.Time
}

// Fault makes the server misbehave on the requests it matches.
type Fault struct {
	// Match selects the requests (nil: every one).
	Match func(r *http.Request) bool
	// Times is how many matching requests it applies to (0: every one).
	Times int
	// Status and Body answer a matching request instead (an error body).
	Status int
	Body   string
	// DropRow drops the first row of a matching page (a portal losing a
	// row of a page).
	DropRow bool
	// PastEnd answers a page past the end with the last full page again.
	PastEnd bool
	// Before runs before a matching request is answered (an edit made
	// while a client reads the dataset).
	Before func(s *Server)
	// Edit changes the body of a matching answer: a row that is not an
	// object, a column renamed on one page, a metadata field of the wrong
	// type.
	Edit func(body []byte) []byte
}

// Server is a Socrata portal. Its zero value is not usable: call New.
type Server struct {
	mu       sync.Mutex
	datasets map[string]*Dataset
	log      []Request
	faults   []*Fault
	unauth   int
	now      func() time.Time

	// AppToken is the app token the portal knows; a request with another
	// token is refused (403). "" knows none.
	AppToken string
	// FreeRequests is how many requests without a token the portal
	// answers before one 429 (with RetryAfter), after which the count
	// starts again; 0 never throttles.
	FreeRequests int
	// RetryAfter is the 429's Retry-After in seconds.
	RetryAfter int
}

// New returns a portal with no datasets.
func New() *Server {
	return &Server{datasets: map[string]*Dataset{}, now: func() time.Time { return time.Now().UTC() }, RetryAfter: 1}
}

// Add adds a dataset with rows.
func (s *Server) Add(d *Dataset, rows ...Row) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d.rows = slices.Clone(rows)
	slices.SortFunc(d.rows, func(a, b Row) int { return strings.Compare(a.ID, b.ID) })
	s.datasets[d.ID] = d
}

// Rows returns the dataset's rows, by :id.
func (s *Server) Rows(id string) []Row {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.datasets[id].rows)
}

// edited is the time of an edit of d: now, and at least a second after
// its last, since rowsUpdatedAt counts seconds and an edit must move it.
func (s *Server) edited(d *Dataset) time.Time {
	now := s.now()
	if !now.After(d.RowsUpdatedAt.Add(time.Second)) {
		now = d.RowsUpdatedAt.Add(time.Second)
	}
	d.RowsUpdatedAt = now
	return now
}

// Update sets values of row rowID (nil deletes a value) and moves its
// :updated_at and the dataset's rowsUpdatedAt (see edited).
func (s *Server) Update(id, rowID string, values map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.datasets[id]
	now := s.edited(d)
	for i := range d.rows {
		if d.rows[i].ID == rowID {
			v := make(map[string]any, len(d.rows[i].Values))
			for k, x := range d.rows[i].Values {
				v[k] = x
			}
			for k, x := range values {
				v[k] = x
			}
			d.rows[i].Values, d.rows[i].UpdatedAt = v, now
		}
	}
}

// Delete removes row rowID and moves rowsUpdatedAt.
func (s *Server) Delete(id, rowID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.datasets[id]
	d.rows = slices.DeleteFunc(d.rows, func(r Row) bool { return r.ID == rowID })
	s.edited(d)
}

// AddFault adds a fault.
func (s *Server) AddFault(f *Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, f)
}

// Requests returns the requests answered so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

var (
	viewsPath    = regexp.MustCompile(`^/api/views/([a-z0-9]{4}-[a-z0-9]{4})(\.json)?$`)
	resourcePath = regexp.MustCompile(`^/resource/([a-z0-9]{4}-[a-z0-9]{4})\.json$`)
)

// ServeHTTP answers the portal's API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token := r.Header.Get("X-App-Token")
	if token == "" {
		token = r.URL.Query().Get("$$app_token")
	}
	fault := s.fault(r)
	if fault != nil && fault.Before != nil {
		fault.Before(s)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q := r.URL.Query()
	rec := Request{Path: r.URL.Path, Query: r.URL.RawQuery, Select: q.Get("$select"), Token: token, At: s.now()}
	rec.Offset, _ = strconv.Atoi(q.Get("$offset"))
	if dec, err := url.QueryUnescape(r.URL.RawQuery); err == nil {
		rec.Query = dec
	}
	status, body, header := s.answer(r, token, fault)
	if fault != nil && fault.Edit != nil {
		body = fault.Edit(body)
	}
	rec.Status = status
	s.log = append(s.log, rec)
	for k, v := range header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// fault returns the first fault matching r, counting it.
func (s *Server) fault(r *http.Request) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if f.Match == nil || f.Match(r) {
			if f.Times > 0 {
				if f.Times--; f.Times == 0 {
					s.faults = slices.Delete(s.faults, i, i+1)
				}
			}
			return f
		}
	}
	return nil
}

// errorBody is a SODA error body; code "" is the short shape.
func errorBody(code, msg string) []byte {
	m := map[string]any{"error": true, "message": msg}
	if code != "" {
		m["code"] = code
	}
	b, _ := json.Marshal(m)
	return b
}

func (s *Server) answer(r *http.Request, token string, fault *Fault) (int, []byte, map[string]string) {
	switch {
	case token != "" && token != s.AppToken:
		return http.StatusForbidden, errorBody("", "Invalid app_token specified"), nil
	case token == "" && s.FreeRequests > 0:
		if s.unauth++; s.unauth > s.FreeRequests {
			s.unauth = 0
			return http.StatusTooManyRequests, errorBody("", "Too many requests: use an app token"),
				map[string]string{"Retry-After": strconv.Itoa(s.RetryAfter)}
		}
	}
	if fault != nil && fault.Status != 0 {
		return fault.Status, []byte(fault.Body), nil
	}
	if m := viewsPath.FindStringSubmatch(r.URL.Path); m != nil {
		d, ok := s.datasets[m[1]]
		if !ok {
			return http.StatusNotFound, errorBody("not_found", "Cannot find view with id "+m[1]), nil
		}
		return http.StatusOK, s.metadata(d), nil
	}
	m := resourcePath.FindStringSubmatch(r.URL.Path)
	if m == nil {
		return http.StatusNotFound, errorBody("", "Not found"), nil
	}
	d, ok := s.datasets[m[1]]
	if !ok {
		return http.StatusNotFound, errorBody("not_found", fmt.Sprintf("Dataset %s not found", m[1])), nil
	}
	return s.resource(d, r.URL.Query(), fault)
}

// metadata is the dataset's /api/views document.
func (s *Server) metadata(d *Dataset) []byte {
	cols := make([]map[string]any, len(d.Columns))
	for i, c := range d.Columns {
		cols[i] = map[string]any{"id": 1000 + i, "name": c.Name, "fieldName": c.FieldName, "dataTypeName": c.DataTypeName,
			"position": i + 1, "renderTypeName": c.DataTypeName, "format": map[string]any{}}
	}
	v := map[string]any{"id": d.ID, "name": d.Name, "assetType": "dataset", "viewType": "tabular", "displayType": "table", "columns": cols}
	if !d.NoRowsUpdatedAt {
		v["rowsUpdatedAt"] = d.RowsUpdatedAt.Unix()
	}
	b, _ := json.Marshal(v)
	return b
}
