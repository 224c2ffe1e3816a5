package hostile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ingestd/ingestd/socrata/socratatest"
)

// The Socrata portal of the corpus. A socrata feed's requests name the
// dataset, not the feed's path (the client builds /api/views/ID.json and
// /resource/ID.json on the portal's host), so each case has a dataset ID
// of its own, DatasetID, and the server finds the case by it. The good
// phase is socratatest's portal with one dataset of GoodFeatures rows; a
// hostile phase is socratatest's portal with the case's own dataset of
// sodaRows rows, edited later (so that no poll finds it unchanged), whose
// answers the case's hooks replace or edit.

// AppTokenVar is the environment variable the corpus config reads every
// socrata feed's app_token from (the config refuses a literal token), and
// AppToken its value: the processes that load the config need it in their
// environment (Env). Every socrata case checks that the token reaches
// neither the output nor any table.
const (
	AppTokenVar = "INGESTD_HOSTILE_APP_TOKEN"
	AppToken    = "hstAppT0ken7q2zW"
)

// Env is the environment a process that loads the corpus config needs
// besides its own: the socrata feeds' app token.
func Env() []string { return []string{AppTokenVar + "=" + AppToken} }

// DatasetID is the 4x4 of case name's dataset: eight base-36 digits of
// its name's hash.
func DatasetID(name string) string {
	h := fnv.New64a()
	h.Write([]byte(name))
	s := strconv.FormatUint(h.Sum64(), 36)
	s = strings.Repeat("0", max(0, 8-len(s))) + s
	return s[:4] + "-" + s[4:8]
}

// portalPath matches the two paths a socrata feed asks for.
var portalPath = regexp.MustCompile(`^/(api/views|resource)/([a-z0-9]{4}-[a-z0-9]{4})\.json$`)

// socrataPath maps a portal path of a socrata case's dataset to NAME/path,
// as if it were below /hostile/NAME; false when no case has the dataset.
func (h *Server) socrataPath(path string) (string, bool) {
	m := portalPath.FindStringSubmatch(path)
	if m == nil {
		return "", false
	}
	for name, c := range h.cases {
		if c.Kind == Socrata && DatasetID(name) == m[2] {
			return name + path, true
		}
	}
	return "", false
}

// goodDataset is the good phase's dataset, which every socrata case's
// dataset ID stands for in the good phase.
const goodDataset = "good-0001"

var fourByFour = regexp.MustCompile(`[a-z0-9]{4}-[a-z0-9]{4}`)

// goodSocrataPath is sub with the case's dataset replaced by goodDataset.
func goodSocrataPath(sub string) string { return fourByFour.ReplaceAllString(sub, goodDataset) }

// sodaEpoch is when the good dataset was last updated; a hostile
// dataset, a day later.
var sodaEpoch = time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)

// sodaColumns are the columns of every corpus dataset: three values and a
// point, the geometry column.
var sodaColumns = []socratatest.Column{
	{FieldName: "name", Name: "Name", DataTypeName: "text"},
	{FieldName: "kind", Name: "Kind", DataTypeName: "text"},
	{FieldName: "amount", Name: "Amount", DataTypeName: "number"},
	{FieldName: "location", Name: "Location", DataTypeName: "point"},
}

// sodaRow is row i of a corpus dataset.
func sodaRow(i int) socratatest.Row {
	at := sodaEpoch.Add(time.Duration(i) * time.Second)
	return socratatest.Row{ID: fmt.Sprintf("row-%04d", i), CreatedAt: at, UpdatedAt: at, Values: map[string]any{
		"name": "Site " + strconv.Itoa(i), "kind": "kind " + strconv.Itoa(i%3), "amount": strconv.Itoa(i) + ".50",
		"location": map[string]any{"type": "Point", "coordinates": []float64{-87.6 + float64(i)*1e-4, 41.8}},
	}}
}

// newPortal is a portal of dataset id with rows 0…n-1 (sodaRow) updated
// at updated; it knows AppToken.
func newPortal(id string, n int, updated time.Time) *socratatest.Server {
	p := socratatest.New()
	p.AppToken = AppToken
	rows := make([]socratatest.Row, n)
	for i := range rows {
		rows[i] = sodaRow(i)
	}
	p.Add(&socratatest.Dataset{ID: id, Name: "hostile", Columns: sodaColumns, RowsUpdatedAt: updated}, rows...)
	return p
}

// goodPortal serves the good phase's dataset.
func goodPortal() *socratatest.Server { return newPortal(goodDataset, GoodFeatures, sodaEpoch) }

// Sizes of a hostile dataset: sodaRows rows in pages of sodaPageSize.
const (
	sodaRows     = 30
	sodaPageSize = 10
)

// sodaHook answers the requests it matches instead of the portal (which
// respond may ask, and edit the answer of).
type sodaHook struct {
	match   func(r *Request) bool
	respond func(w http.ResponseWriter, r *Request, portal http.Handler)
}

// soda serves a case's hostile dataset of n rows: the requests a hook
// matches (the first that does) as it says, the rest as the portal does.
func soda(n int, hooks ...sodaHook) Responder {
	var once sync.Once
	var portal *socratatest.Server
	return func(w http.ResponseWriter, r *Request) {
		once.Do(func() { portal = newPortal(DatasetID(r.Case.Name), n, sodaEpoch.Add(24*time.Hour)) })
		for _, h := range hooks {
			if h.match(r) {
				h.respond(w, r, portal)
				return
			}
		}
		portal.ServeHTTP(w, r.Request)
	}
}

// on answers the requests match matches with resp.
func on(match func(*Request) bool, resp Responder) sodaHook {
	return sodaHook{match: match, respond: func(w http.ResponseWriter, r *Request, _ http.Handler) { resp(w, r) }}
}

// edited answers the requests match matches with the portal's answer
// (JSON, numbers kept as written) as edit changes it.
func edited(match func(*Request) bool, edit func(r *Request, doc any) any) sodaHook {
	return sodaHook{match: match, respond: func(w http.ResponseWriter, r *Request, portal http.Handler) {
		rec := httptest.NewRecorder()
		portal.ServeHTTP(rec, r.Request)
		dec := json.NewDecoder(rec.Body)
		dec.UseNumber()
		var doc any
		if err := dec.Decode(&doc); err != nil {
			panic("hostile: the portal's answer does not decode: " + err.Error())
		}
		var out bytes.Buffer
		enc := json.NewEncoder(&out)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(edit(r, doc))
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(rec.Code)
		_, _ = w.Write(out.Bytes())
	}}
}

// editRows edits each row of the pages match matches: edit(offset+k, row)
// for the page's k-th row (its row number in the dataset).
func editRows(match func(*Request) bool, edit func(i int, row map[string]any)) sodaHook {
	return edited(match, func(r *Request, doc any) any {
		rows, _ := doc.([]any)
		off := offsetOf(r)
		for k, row := range rows {
			if m, ok := row.(map[string]any); ok {
				edit(off+k, m)
			}
		}
		return rows
	})
}

// mapRows replaces each row of the pages match matches by what f makes of
// row i (its row number in the dataset).
func mapRows(match func(*Request) bool, f func(i int, row any) any) sodaHook {
	return edited(match, func(r *Request, doc any) any {
		rows, _ := doc.([]any)
		off := offsetOf(r)
		for k := range rows {
			rows[k] = f(off+k, rows[k])
		}
		return rows
	})
}

// editMeta edits the dataset's metadata document.
func editMeta(edit func(v map[string]any)) sodaHook {
	return edited(isMeta, func(_ *Request, doc any) any {
		edit(doc.(map[string]any))
		return doc
	})
}

// Requests of a socrata feed.

func selectOf(r *Request) string { return strings.TrimSpace(r.URL.Query().Get("$select")) }

func offsetOf(r *Request) int {
	n, _ := strconv.Atoi(r.URL.Query().Get("$offset"))
	return n
}

// isMeta matches the metadata request.
func isMeta(r *Request) bool { return strings.HasPrefix(r.Path, "/api/views/") }

// isCount matches count(*).
func isCount(r *Request) bool { return strings.HasPrefix(selectOf(r), "count(") }

// isPage matches the requests of rows.
func isPage(r *Request) bool {
	return strings.HasPrefix(r.Path, "/resource/") && strings.HasPrefix(selectOf(r), ":id,")
}

// pageAt matches the request of the page at offset.
func pageAt(offset int) func(*Request) bool {
	return func(r *Request) bool { return isPage(r) && offsetOf(r) == offset }
}

// pagesFrom matches the requests of the pages at offset and after.
func pagesFrom(offset int) func(*Request) bool {
	return func(r *Request) bool { return isPage(r) && offsetOf(r) >= offset }
}

// fromPeer matches the requests that reached the peer origin.
func fromPeer(r *Request) bool { return "http://"+r.Host == r.PeerURL() }

// sodaError is a SODA error body.
func sodaError(code, msg string) string {
	m := map[string]any{"error": true, "message": msg}
	if code != "" {
		m["code"] = code
	}
	b, _ := json.Marshal(m)
	return string(b)
}
