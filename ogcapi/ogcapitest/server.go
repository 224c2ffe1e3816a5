// Package ogcapitest is ingestd's OGC API – Features fixture server: a
// landing page, conformance, an OpenAPI document declaring the maximum
// limit, collections with CRS lists (Part 2: CRS84, EPSG:4326 latitude
// first, EPSG:3857), and items paged by offset through next links. Layers
// are internal/layertest layers (recorded FeatureCollections or generated
// parcels).
// Each collection may carry a Pitfall: the misbehaviour of real servers
// that a client must refuse or survive (see the Pitfall constants). The
// server as a whole may behave as a named server (Server.Mode): tipg,
// pygeoapi, or one answering RFC 7807 problem details (see the Mode
// constants).
package ogcapitest

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/ingestd/ingestd/internal/layertest"
	gj "github.com/twpayne/go-geom/encoding/geojson"
)

// Pitfall is a misbehaviour of a collection's items.
type Pitfall string

// Pitfalls, after servers met in the field.
const (
	// None pages correctly.
	None Pitfall = ""
	// NoNextOnFullPage omits the next link of the second page, which is
	// full (pygeoapi#1594, pygeoapi#1658); numberMatched is given.
	NoNextOnFullPage Pitfall = "no-next-on-full-page"
	// NextLoop makes the third page's next link point back to the second
	// page's URL.
	NextLoop Pitfall = "next-loop"
	// ZeroLimitSelf answers every request as if limit were 0: no
	// features, and a next link to the same URL.
	ZeroLimitSelf Pitfall = "zero-limit-self"
	// ApproxNumberMatched reports numberMatched rounded up to hundreds, as
	// servers that estimate counts do.
	ApproxNumberMatched Pitfall = "approx-number-matched"
	// WrongContentCRS answers in CRS84 but labels the response with the
	// CRS asked for (or, when none was, with EPSG:3857).
	WrongContentCRS Pitfall = "wrong-content-crs"
	// Exception200 answers the second page with an exception document and
	// status 200.
	Exception200 Pitfall = "exception-200"
	// OffsetIgnored serves page 1 for every offset while next links keep
	// coming (MapServer#6613).
	OffsetIgnored Pitfall = "offset-ignored"
	// ShortPages serves pages shorter than the limit (a server-side cap
	// below the limit asked for) with next links: legitimate, to be
	// followed.
	ShortPages Pitfall = "short-pages"
	// NoNumberMatched leaves numberMatched out: legitimate; completeness
	// then rests on the links alone.
	NoNumberMatched Pitfall = "no-number-matched"
	// Duplicates repeats the last feature of each page as the first of
	// the next one (an unstable order).
	Duplicates Pitfall = "duplicates"
	// DuplicateInPage serves feature 4 in place of feature 5: one id
	// twice in the first page, one feature missing, numberMatched and the
	// total still equal.
	DuplicateInPage Pitfall = "duplicate-in-page"
	// OverlapNoIDs serves features without ids and without numberMatched,
	// every page after the first starting half a page early: with 30
	// features and limit 10, features 0–9, 5–14 and 15–24, then no next
	// link (the same number of features, five of them twice, five never).
	OverlapNoIDs Pitfall = "overlap-no-ids"
	// NumberMatchedString sends numberMatched as a decimal string ("30").
	NumberMatchedString Pitfall = "number-matched-string"
	// NumberMatchedUnknown sends numberMatched as the string "unknown".
	NumberMatchedUnknown Pitfall = "number-matched-unknown"
	// NoNextNoNumberMatched is NoNextOnFullPage without numberMatched:
	// the second page is full and has no next link, and nothing says more
	// features exist.
	NoNextNoNumberMatched Pitfall = "no-next-no-number-matched"
)

// Pitfalls lists every Pitfall but None.
var Pitfalls = []Pitfall{NoNextOnFullPage, NextLoop, ZeroLimitSelf, ApproxNumberMatched, WrongContentCRS,
	Exception200, OffsetIgnored, ShortPages, NoNumberMatched, Duplicates, DuplicateInPage, OverlapNoIDs,
	NumberMatchedString, NumberMatchedUnknown, NoNextNoNumberMatched}

// CRS URIs the server offers.
const (
	CRS84    = "http://www.opengis.net/def/crs/OGC/1.3/CRS84"
	EPSG4326 = "http://www.opengis.net/def/crs/EPSG/0/4326"
	EPSG3857 = "http://www.opengis.net/def/crs/EPSG/0/3857"
)

// Collection is one collection of the server.
type Collection struct {
	Layer   layertest.Layer
	Pitfall Pitfall
	// ETag, when set, is sent with every items response.
	ETag string
	// Queryables and Schema, when set, are served as the collection's
	// Part 3 queryables and Part 5 schema documents (as given: a test may
	// serve a broken one) and linked from the collection document.
	Queryables, Schema string
	// Hits makes the collection answer resulttype=hits with its count
	// (numberMatched, no features), as pygeoapi does, whatever its
	// Pitfall; without it the parameter is ignored, as most servers do.
	Hits bool
	// MaxLimit, when set, is the collection's own maximum limit (served
	// and, in PyGeoAPI mode, declared in the OpenAPI document on the
	// collection's items path, as pygeoapi's per-collection limits are);
	// Server.MaxLimit otherwise.
	MaxLimit int
}

// JSONSchema is a JSON Schema of features with fields, as a Part 3
// queryables or Part 5 schema document describes them: the geometry
// first (geomFormat, e.g. "geometry-polygon"), then each field with the
// JSON Schema type of its XSD type.
func JSONSchema(fields []layertest.Field, geomFormat string) string {
	var b strings.Builder
	b.WriteString(`{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object","properties":{`)
	fmt.Fprintf(&b, `"geometry":{"x-ogc-role":"primary-geometry","format":%q}`, geomFormat)
	for _, f := range fields {
		t := map[layertest.FieldType]string{layertest.Integer: `"type":"integer"`, layertest.Double: `"type":"number","format":"double"`,
			layertest.Boolean: `"type":"boolean"`, layertest.Date: `"type":"string","format":"date"`}[f.Type]
		if t == "" {
			t = `"type":"string"`
		}
		fmt.Fprintf(&b, `,%q:{"title":%q,%s}`, f.Name, f.Name, t)
	}
	b.WriteString(`}}`)
	return b.String()
}

// Server is the fixture server; its zero value is not usable: use New.
type Server struct {
	// MaxLimit is the largest limit served (and declared in the OpenAPI
	// document); larger limits are capped. DefaultLimit is used without one.
	MaxLimit, DefaultLimit int
	// NoPart2 leaves Part 2 out of the conformance classes.
	NoPart2 bool
	// Hook, when set, is called with every items request before it is
	// answered (a test trips a breaker there).
	Hook func(collection string, offset int)
	// Mode is the server this one behaves as (Plain by default).
	Mode Mode

	mu          sync.Mutex
	bombs       map[string][]byte // path → gzip body (see Bomb)
	collections map[string]*Collection
	requests    map[string]int // path → count
	items       map[string]int // collection?offset → count
	conditional map[string]int // collection → items requests with validators
	notModified map[string]int // collection → 304 answers
	generation  int            // cursors of older generations are refused
}

// New returns a server with MaxLimit 10,000 and DefaultLimit 10.
func New() *Server {
	return &Server{MaxLimit: 10_000, DefaultLimit: 10, collections: map[string]*Collection{}, requests: map[string]int{},
		items: map[string]int{}, conditional: map[string]int{}, notModified: map[string]int{}}
}

// Add adds (or replaces) collection id.
func (s *Server) Add(id string, c Collection) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.collections[id] = &c
}

// Requests is the number of requests whose path was path.
func (s *Server) Requests(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[path]
}

// ItemRequests is the number of items requests of collection at offset.
func (s *Server) ItemRequests(collection string, offset int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.items[collection+"?"+strconv.Itoa(offset)]
}

// Conditional is the number of items requests of collection that carried
// validators (If-None-Match or If-Modified-Since), and NotModified the
// number of them answered 304.
func (s *Server) Conditional(collection string) (conditional, notModified int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conditional[collection], s.notModified[collection]
}

// Bomb makes the server answer every request of path (the landing page
// "/", "/conformance", "/openapi", "/collections/ID", its items…) with
// head, unit repeated, then tail, gzip-compressed: a body of a few KB that
// inflates to about size bytes. unit is shaped to cost most to a decoder
// that keeps the document whole (`{},` in a links array, `{"a":0},` in an
// OpenAPI document); tail ends the document with what a client needs of
// it, so that a client that streams it finds it.
func (s *Server) Bomb(path, head, unit, tail string, size int) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = io.WriteString(zw, head)
	block := []byte(strings.Repeat(unit, max(1, (64<<10)/len(unit))))
	left := size - len(head) - len(tail)
	for left >= len(block) {
		_, _ = zw.Write(block)
		left -= len(block)
	}
	_, _ = zw.Write(block[:left/len(unit)*len(unit)])
	_, _ = io.WriteString(zw, tail)
	_ = zw.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bombs == nil {
		s.bombs = map[string][]byte{}
	}
	s.bombs[path] = buf.Bytes()
}

// BombBytes is the size of the gzip body Bomb set for path.
func (s *Server) BombBytes(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bombs[path])
}

// ExpireCursors makes every next link given so far invalid: a request
// carrying an older cursor answers 400 with an exception document, as
// servers whose paging cursors expire do.
func (s *Server) ExpireCursors() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.generation++
}

func (s *Server) collection(id string) *Collection {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.collections[id]
}

// ServeHTTP serves the API at the root of its origin.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests[r.URL.Path]++
	bomb := s.bombs[r.URL.Path]
	s.mu.Unlock()
	if bomb != nil {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(bomb)
		return
	}
	base := "http://" + r.Host
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.URL.Path == "/" || r.URL.Path == "":
		if !s.badFormat(w, r, "json", "html") {
			writeJSON(w, map[string]any{"title": "ogcapitest", "links": s.landingLinks(base)})
		}
	case r.URL.Path == "/conformance":
		conf := []string{"http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core",
			"http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson"}
		if !s.NoPart2 {
			conf = append(conf, "http://www.opengis.net/spec/ogcapi-features-2/1.0/conf/crs")
		}
		if !s.badFormat(w, r, "json", "html") {
			writeJSON(w, map[string]any{"conformsTo": conf})
		}
	case r.URL.Path == s.openAPIPath():
		writeJSON(w, s.openAPI())
	case r.URL.Path == "/collections":
		if !s.badFormat(w, r, "json", "html") {
			writeJSON(w, map[string]any{"collections": []any{}, "crs": []string{CRS84, EPSG4326, EPSG3857}})
		}
	case len(parts) == 2 && parts[0] == "collections":
		if c := s.find(w, parts[1]); c != nil && !s.badFormat(w, r, "json", "html") {
			writeJSON(w, map[string]any{"id": parts[1], "itemType": "feature",
				"crs": []string{"#/crs"}, "storageCrs": CRS84, "links": s.collectionLinks(base+"/collections/"+parts[1], c)})
		}
	case len(parts) == 3 && parts[0] == "collections" && (parts[2] == "queryables" || parts[2] == "schema"):
		s.serveSchema(w, r, parts[1], parts[2])
	case len(parts) == 3 && parts[0] == "collections" && parts[2] == "items":
		if c := s.find(w, parts[1]); c != nil && !s.badFormat(w, r, "geojson", "html", "json", "csv", "geojsonseq", "ndjson") {
			s.serveItems(w, r, base, parts[1], c)
		}
	default:
		s.fail(w, http.StatusNotFound, "NotFound", "no such resource")
	}
}

// find returns collection id, or answers that it does not exist, as the
// server of the mode words it.
func (s *Server) find(w http.ResponseWriter, id string) *Collection {
	if s.Mode == TiPg && !strings.Contains(id, ".") {
		writeDetail(w, http.StatusUnprocessableEntity, "Invalid Collection format '"+id+"'.")
		return nil
	}
	if c := s.collection(id); c != nil {
		return c
	}
	switch s.Mode {
	case TiPg:
		writeDetail(w, http.StatusNotFound, "Table/Function '"+id+"' not found.")
	case PyGeoAPI:
		s.fail(w, http.StatusNotFound, "NotFound", "Collection not found")
	default:
		s.fail(w, http.StatusNotFound, "NotFound", "no collection "+id)
	}
	return nil
}

// serveSchema serves a collection's queryables or schema document.
func (s *Server) serveSchema(w http.ResponseWriter, r *http.Request, id, which string) {
	c := s.find(w, id)
	if c == nil || s.badFormat(w, r, "schemajson", "html") {
		return
	}
	doc := c.Schema
	if which == "queryables" {
		doc = c.Queryables
	}
	if doc == "" {
		s.fail(w, http.StatusNotFound, "NotFound", "no "+which+" for "+id)
		return
	}
	w.Header().Set("Content-Type", "application/schema+json")
	_, _ = io.WriteString(w, doc)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func writeException(w http.ResponseWriter, status int, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"code": code, "description": desc})
}

func appendLink(buf []byte, href, rel string) []byte {
	b, _ := json.Marshal(map[string]string{"href": href, "rel": rel, "type": "application/geo+json"})
	return append(buf, b...)
}

// reproject rewrites a CRS84 GeoJSON feature's coordinates into crs.
func reproject(feat []byte, crs string) []byte {
	var f gj.Feature
	if err := json.Unmarshal(feat, &f); err != nil || f.Geometry == nil {
		return feat
	}
	flat := f.Geometry.FlatCoords()
	stride := f.Geometry.Stride()
	for i := 0; i+1 < len(flat); i += stride {
		lon, lat := flat[i], flat[i+1]
		switch crs {
		case EPSG4326:
			flat[i], flat[i+1] = lat, lon
		case EPSG3857:
			flat[i], flat[i+1] = mercator(lon, lat)
		}
	}
	out, err := json.Marshal(&f)
	if err != nil {
		return feat
	}
	return out
}

// mercator is EPSG:3857 (spherical Web Mercator) of lon, lat.
func mercator(lon, lat float64) (x, y float64) {
	const r = 6378137.0
	x = r * lon * math.Pi / 180
	y = r * math.Log(math.Tan(math.Pi/4+lat*math.Pi/360))
	return math.Round(x*1000) / 1000, math.Round(y*1000) / 1000
}
