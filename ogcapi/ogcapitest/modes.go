package ogcapitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Mode is a real server whose behaviour the fixture reproduces, read from
// its source.
type Mode string

// Modes.
const (
	// Plain is ingestd's own fixture: every link carries f=json, errors
	// are OGC exceptions ({"code", "description"}), one maximum limit
	// for the server (components/parameters/limit).
	Plain Mode = ""
	// TiPg is tipg 1.x (developmentseed/tipg: tipg/factory.py,
	// dependencies.py, errors.py, collections.py). Its links carry no f;
	// f is checked against each endpoint's list (json|html for the
	// landing page, conformance, collections; schemajson|html for
	// queryables; geojson|html|json|csv|geojsonseq|ndjson for items),
	// anything else a FastAPI 422 ({"detail": [{"loc", "msg", …}]}).
	// f=json on items answers a JSON array of flat rows (collectionId,
	// itemId, the properties, the geometry as EWKT), not GeoJSON. Its
	// maximum limit (TIPG_MAX_FEATURES_PER_QUERY) is declared once, on
	// /collections/{collectionId}/items in the OpenAPI document at /api,
	// and a limit above it is a 422. A collection id is schema.table
	// (else a 422); other errors are {"detail": "…"}. Next links keep
	// every parameter of the request and come only while features remain;
	// no Content-Crs header.
	TiPg Mode = "tipg"
	// PyGeoAPI is pygeoapi (geopython/pygeoapi: pygeoapi/api/itemtypes.py,
	// collection.py, openapi.py). Its links carry f=json; each
	// collection's maximum limit (Collection.MaxLimit, its limits:
	// max_items) is declared inline on its own items path in the OpenAPI
	// document, and a larger limit is throttled to it silently. A full
	// page has a next link even when it is the last (len(features) ==
	// limit), so a collection whose size the page size divides ends with
	// an empty page. Errors are {"code", "type", "description"}.
	PyGeoAPI Mode = "pygeoapi"
	// Problem answers errors as RFC 7807 problem details
	// (application/problem+json: type, title, status, detail), and
	// otherwise as Plain.
	Problem Mode = "rfc7807"
)

// fail answers an error as the server of the mode words it.
func (s *Server) fail(w http.ResponseWriter, status int, code, desc string) {
	switch s.Mode {
	case TiPg:
		writeDetail(w, status, desc)
	case PyGeoAPI:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		// pygeoapi/api/__init__.py get_exception, in its order.
		fmt.Fprintf(w, `{"code":%s,"type":%s,"description":%s}`+"\n", quote(code), quote(code), quote(desc))
	case Problem:
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"type":"about:blank","title":%s,"status":%d,"detail":%s}`+"\n", quote(http.StatusText(status)), status, quote(desc))
	default:
		writeException(w, status, code, desc)
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// writeDetail answers FastAPI's HTTPException: {"detail": "…"}.
func writeDetail(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"detail":%s}`+"\n", quote(detail))
}

// writeValidation answers FastAPI's 422 for query parameter param.
func writeValidation(w http.ResponseWriter, typ, param, msg, input string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnprocessableEntity)
	_ = json.NewEncoder(w).Encode(map[string]any{"detail": []map[string]any{
		{"type": typ, "loc": []string{"query", param}, "msg": msg, "input": input}}})
}

// badFormat answers tipg's 422 to an f that is not one of allowed (the
// Literal type of the endpoint's f parameter), and reports whether it did.
func (s *Server) badFormat(w http.ResponseWriter, r *http.Request, allowed ...string) bool {
	f := r.URL.Query().Get("f")
	if s.Mode != TiPg || f == "" || slices.Contains(allowed, f) {
		return false
	}
	quoted := make([]string, len(allowed))
	for i, a := range allowed {
		quoted[i] = "'" + a + "'"
	}
	list := strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
	writeValidation(w, "literal_error", "f", "Input should be "+list, f)
	return true
}

// format is the f parameter the mode's links carry ("" for none).
func (s *Server) format() string {
	if s.Mode == TiPg {
		return ""
	}
	return "?f=json"
}

func (s *Server) openAPIPath() string {
	if s.Mode == TiPg {
		return "/api"
	}
	return "/openapi"
}

// landingLinks are the landing page's links.
func (s *Server) landingLinks(base string) []map[string]string {
	f := s.format()
	return []map[string]string{
		{"href": base + "/" + f, "rel": "self", "type": "application/json"},
		{"href": base + "/conformance" + f, "rel": "conformance", "type": "application/json"},
		{"href": base + "/collections" + f, "rel": "data", "type": "application/json"},
		{"href": base + s.openAPIPath() + f, "rel": "service-desc", "type": "application/vnd.oai.openapi+json;version=3.0"},
	}
}

// collectionLinks are a collection document's links, at coll.
func (s *Server) collectionLinks(coll string, c *Collection) []map[string]string {
	f := s.format()
	links := []map[string]string{{"href": coll + "/items?f=html", "rel": "items", "type": "text/html"}}
	if s.Mode == TiPg {
		links = append(links, map[string]string{"href": coll + "/items?f=csv", "rel": "alternate", "type": "text/csv"})
	}
	links = append(links, map[string]string{"href": coll + "/items" + f, "rel": "items", "type": "application/geo+json"})
	rel := func(r string) string {
		if s.Mode == TiPg {
			return r
		}
		return "http://www.opengis.net/def/rel/ogc/1.0/" + r
	}
	if c.Queryables != "" {
		links = append(links, map[string]string{"href": coll + "/queryables" + f, "rel": rel("queryables"), "type": "application/schema+json"})
	}
	if c.Schema != "" {
		links = append(links, map[string]string{"href": coll + "/schema" + f, "rel": rel("schema"), "type": "application/schema+json"})
	}
	return links
}

// openAPI is the OpenAPI document: the limit parameter where the mode's
// server declares it.
func (s *Server) openAPI() map[string]any {
	limit := func(max int) map[string]any {
		return map[string]any{"name": "limit", "in": "query", "required": false, "schema": map[string]any{
			"type": "integer", "minimum": 1, "maximum": max, "default": s.DefaultLimit}}
	}
	switch s.Mode {
	case TiPg:
		return map[string]any{"openapi": "3.1.0", "paths": map[string]any{"/collections/{collectionId}/items": map[string]any{
			"get": map[string]any{"parameters": []any{limit(s.MaxLimit)}}}}}
	case PyGeoAPI:
		paths := map[string]any{}
		s.mu.Lock()
		for id, c := range s.collections {
			paths["/collections/"+id+"/items"] = map[string]any{"get": map[string]any{"parameters": []any{
				map[string]string{"$ref": "#/components/parameters/f"}, limit(s.maxLimit(c))}}}
		}
		s.mu.Unlock()
		return map[string]any{"openapi": "3.0.2", "paths": paths}
	}
	return map[string]any{"openapi": "3.0.2", "components": map[string]any{"parameters": map[string]any{"limit": limit(s.MaxLimit)}}}
}

// maxLimit is collection c's maximum limit.
func (s *Server) maxLimit(c *Collection) int {
	if c.MaxLimit > 0 {
		return c.MaxLimit
	}
	return s.MaxLimit
}

// itemsLimit is the limit an items request asks for, as the mode's server
// reads it; false when it answered the request with an error.
func (s *Server) itemsLimit(w http.ResponseWriter, v string, c *Collection) (int, bool) {
	if v == "" {
		return s.DefaultLimit, true
	}
	n, err := strconv.Atoi(v)
	max := s.maxLimit(c)
	switch {
	case s.Mode == TiPg && err != nil:
		writeValidation(w, "int_parsing", "limit", "Input should be a valid integer, unable to parse string as an integer", v)
	case s.Mode == TiPg && n < 0:
		writeValidation(w, "greater_than_equal", "limit", "Input should be greater than or equal to 0", v)
	case s.Mode == TiPg && n > max:
		writeValidation(w, "less_than_equal", "limit", "Input should be less than or equal to "+strconv.Itoa(max), v)
	case s.Mode == TiPg && n == 0:
		return s.DefaultLimit, true // limit or default_features_limit
	case s.Mode == PyGeoAPI && err != nil:
		s.fail(w, http.StatusBadRequest, "InvalidParameterValue", "limit value should be an integer")
	case s.Mode == PyGeoAPI && n <= 0:
		s.fail(w, http.StatusBadRequest, "InvalidParameterValue", "limit value should be strictly positive")
	case err != nil || n < 0:
		s.fail(w, http.StatusBadRequest, "InvalidParameterValue", "bad limit")
	default:
		return min(n, max), true
	}
	return 0, false
}

// pageURL is the link to the page at offset o of the items request r
// (whose query is q), as the mode's server writes it.
func (s *Server) pageURL(base string, r *http.Request, limit, gen, o int) string {
	switch s.Mode {
	case TiPg:
		// tipg: QueryParams({**request.query_params, "offset": next}).
		v := r.URL.Query()
		v.Set("offset", strconv.Itoa(o))
		return base + r.URL.Path + "?" + v.Encode()
	case PyGeoAPI:
		// pygeoapi: f first when given, then offset, then the request's
		// other parameters in their order.
		parts := []string{"offset=" + strconv.Itoa(o)}
		if f := r.URL.Query().Get("f"); f != "" {
			parts = append([]string{"f=" + f}, parts...)
		}
		for _, p := range strings.Split(r.URL.RawQuery, "&") {
			if k, _, _ := strings.Cut(p, "="); p != "" && k != "f" && k != "offset" {
				parts = append(parts, p)
			}
		}
		return base + r.URL.Path + "?" + strings.Join(parts, "&")
	}
	v := r.URL.Query()
	v.Set("offset", strconv.Itoa(o))
	v.Set("limit", strconv.Itoa(limit))
	v.Set("cursor", strconv.Itoa(gen))
	v.Set("f", "json")
	return base + r.URL.Path + "?" + v.Encode()
}
