// Package wfstest is the fixture feed server: it serves layers as WFS 2.0.0 and
// 1.1.0 GetFeature (GeoJSON output, with paging) and as plain GeoJSON documents,
// and misbehaves on demand (status codes, HTML error pages, OGC exception
// reports, delays, connections cut mid-body) so that tests and the demo can
// exercise a flapping county server without leaving the machine.
//
// One Server is one origin. Tests usually start it with NewTestServer; the
// feedserver command serves testdata/feeds over loopback ports for the demo.
// The layers it serves (generated or loaded from GeoJSON) are
// internal/layertest's, which no protocol owns.
package wfstest

import (
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ingestd/ingestd/internal/layertest"
)

// Request describes one request the server received, for fault injection and counting.
type Request struct {
	// Seq numbers requests to this server from 1.
	Seq int64
	// Layer is the requested type name or GeoJSON document name.
	Layer string
	// StartIndex and Count are the paging parameters (Count -1 when absent).
	StartIndex, Count int
	// Page is StartIndex / Count, the 0-based page index (0 without paging).
	Page int
	// HTTP is the underlying request.
	HTTP *http.Request
}

// Fault is how the server misbehaves for one request. The zero Fault serves
// the request normally.
type Fault struct {
	// Delay waits before answering (or before cutting the connection).
	Delay time.Duration
	// Status answers with this status code and Body instead of data.
	Status int
	// Body is the response body for Status (and for 200 when Status is 200).
	Body string
	// ContentType of Body; "text/html" when empty and Body looks like HTML.
	ContentType string
	// Header adds response headers (e.g. Retry-After).
	Header map[string]string
	// CutAfter, when > 0, serves the normal response but closes the
	// connection after that many body bytes, the way a dying server does.
	CutAfter int
	// Hang blocks until the client gives up (its context or timeout).
	Hang bool
}

// FaultFunc decides the fault for a request; nil means serve normally.
type FaultFunc func(r Request) *Fault

// Server is one fixture origin.
type Server struct {
	// CRS84 makes the capabilities and GML output use urn:ogc:def:crs:OGC:1.3:CRS84
	// (longitude first) instead of urn:ogc:def:crs:EPSG::4326 (latitude first).
	// GDAL's WFS driver applies the advertised axis order to GeoJSON output too,
	// so a GeoJSON comparison against it needs CRS84. Set it before serving.
	CRS84 bool

	mu     sync.RWMutex
	layers map[string]layertest.Layer
	fault  FaultFunc

	seq      atomic.Int64
	countsMu sync.Mutex
	counts   map[string]map[int]int // layer → page → requests
}

// New returns a server with no layers.
func New() *Server {
	return &Server{layers: map[string]layertest.Layer{}, counts: map[string]map[int]int{}}
}

// AddLayer serves l under name (a WFS type name, and /geojson/NAME.geojson).
func (s *Server) AddLayer(name string, l layertest.Layer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.layers[name] = l
}

// LoadDir adds every NAME.geojson FeatureCollection in dir as layer NAME.
func (s *Server) LoadDir(dir string) error {
	paths, err := filepath.Glob(filepath.Join(dir, "*.geojson"))
	if err != nil {
		return fmt.Errorf("wfstest: %w", err)
	}
	if len(paths) == 0 {
		return fmt.Errorf("wfstest: no .geojson files in %s", dir)
	}
	for _, p := range paths {
		l, err := layertest.LoadFeatureCollection(p)
		if err != nil {
			return err
		}
		s.AddLayer(strings.TrimSuffix(filepath.Base(p), ".geojson"), l)
	}
	return nil
}

// SetFault installs f for subsequent requests; nil restores normal service.
func (s *Server) SetFault(f FaultFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
}

// Requests is the total number of requests received, faulty or not.
func (s *Server) Requests() int64 { return s.seq.Load() }

// PageRequests is how many times page of layer was requested.
func (s *Server) PageRequests(layer string, page int) int {
	s.countsMu.Lock()
	defer s.countsMu.Unlock()
	return s.counts[layer][page]
}

// ServeHTTP answers GetFeature at any path with a "request" parameter, and plain
// GeoJSON at /geojson/NAME.geojson.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := lowerKeys(r.URL.Query())
	req, ok := s.parseRequest(w, r, q)
	if !ok {
		return
	}
	s.countsMu.Lock()
	if s.counts[req.Layer] == nil {
		s.counts[req.Layer] = map[int]int{}
	}
	s.counts[req.Layer][req.Page]++
	s.countsMu.Unlock()

	s.mu.RLock()
	layer, found := s.layers[req.Layer]
	fault := s.fault
	s.mu.RUnlock()
	f := &Fault{}
	if fault != nil {
		if ff := fault(req); ff != nil {
			f = ff
		}
	}
	if f.serve(w, r) {
		return
	}
	plain := strings.HasPrefix(r.URL.Path, "/geojson/")
	if !found {
		if plain {
			http.NotFound(w, r)
			return
		}
		writeException(w, http.StatusBadRequest, "InvalidParameterValue", "typeNames",
			fmt.Sprintf("Feature type %q unknown", req.Layer))
		return
	}
	s.serveLayer(w, layer, req, q, plain, f.CutAfter)
}

// parseRequest reads the request's kind and paging; it answers the
// requests that are not for features (capabilities, DescribeFeatureType,
// unknown ones) itself and then reports false.
func (s *Server) parseRequest(w http.ResponseWriter, r *http.Request, q map[string]string) (Request, bool) {
	req := Request{Seq: s.seq.Add(1), Count: -1, HTTP: r}
	switch {
	case strings.HasPrefix(r.URL.Path, "/geojson/"):
		req.Layer = strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/geojson/"), ".geojson")
	case strings.EqualFold(q["request"], "GetCapabilities"):
		s.writeCapabilities(w, r)
		return req, false
	case strings.EqualFold(q["request"], "DescribeFeatureType"):
		s.writeDescribeFeatureType(w, firstNonEmpty(q["typenames"], q["typename"]))
		return req, false
	case strings.EqualFold(q["request"], "GetFeature"):
		// The capabilities name layers "ingestd:NAME"; accept both spellings.
		req.Layer = strings.TrimPrefix(firstNonEmpty(q["typenames"], q["typename"]), "ingestd:")
		req.StartIndex, req.Count = paging(q)
		if req.Count > 0 {
			req.Page = req.StartIndex / req.Count
		}
	default:
		writeException(w, http.StatusBadRequest, "OperationNotSupported", "request",
			"the fixture server answers GetCapabilities, DescribeFeatureType and GetFeature")
		return req, false
	}
	return req, true
}

// serve carries out the fault's delay, hang, headers and status; it
// reports whether the request is answered (the data is not to be served).
func (f *Fault) serve(w http.ResponseWriter, r *http.Request) bool {
	if f.Delay > 0 {
		select {
		case <-time.After(f.Delay):
		case <-r.Context().Done():
			return true
		}
	}
	if f.Hang {
		<-r.Context().Done()
		return true
	}
	for k, v := range f.Header {
		w.Header().Set(k, v)
	}
	if f.Status == 0 {
		return false
	}
	ct := f.ContentType
	if ct == "" {
		ct = "text/plain; charset=utf-8"
		if strings.Contains(strings.ToLower(f.Body), "<html") {
			ct = "text/html; charset=utf-8"
		} else if strings.HasPrefix(strings.TrimSpace(f.Body), "<") {
			ct = "application/xml"
		}
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(f.Status)
	_, _ = w.Write([]byte(f.Body))
	return true
}

// serveLayer answers a request for layer's features: hits, a GML 3.2 page
// (a generated layer, when the output format asks for it), else GeoJSON;
// cut after cutAfter bytes when that is set.
func (s *Server) serveLayer(w http.ResponseWriter, layer layertest.Layer, req Request, q map[string]string, plain bool, cutAfter int) {
	if strings.EqualFold(q["resulttype"], "hits") {
		writeHits(w, layer.Len())
		return
	}
	var body []byte
	gen, isGenerated := layer.(layertest.Generated)
	// A plain document (/geojson/NAME.geojson) is GeoJSON, whatever it is asked.
	if isGenerated && !plain && wantsGML(q["outputformat"]) {
		body = renderGML32Page(gen, req, s.CRS84)
		w.Header().Set("Content-Type", "application/gml+xml; version=3.2")
	} else {
		body = renderPage(layer, req, plain, strings.HasPrefix(q["version"], "1."))
		w.Header().Set("Content-Type", "application/json")
	}
	if cutAfter > 0 && cutAfter < len(body) {
		cut(w, w.Header().Get("Content-Type"), body[:cutAfter], len(body))
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body)
}

// renderPage renders the requested slice of layer as a FeatureCollection: WFS 2.0
// style with numberMatched/numberReturned, GeoServer's WFS 1.1 style with
// totalFeatures, or a bare collection for plain GeoJSON.
func renderPage(l layertest.Layer, req Request, plain, v1 bool) []byte {
	start, end := 0, l.Len()
	if !plain {
		start = min(max(req.StartIndex, 0), l.Len())
		if req.Count >= 0 {
			end = min(start+req.Count, l.Len())
		}
	}
	buf := make([]byte, 0, 256*(end-start)+128)
	buf = append(buf, `{"type":"FeatureCollection",`...)
	switch {
	case plain:
	case v1:
		buf = append(buf, `"totalFeatures":`...)
		buf = strconv.AppendInt(buf, int64(l.Len()), 10)
		buf = append(buf, ',')
	default:
		buf = append(buf, `"numberMatched":`...)
		buf = strconv.AppendInt(buf, int64(l.Len()), 10)
		buf = append(buf, `,"numberReturned":`...)
		buf = strconv.AppendInt(buf, int64(end-start), 10)
		buf = append(buf, ',')
	}
	buf = append(buf, `"features":[`...)
	for i := start; i < end; i++ {
		if i > start {
			buf = append(buf, ',')
		}
		buf = l.AppendFeature(buf, i)
	}
	return append(buf, "]}\n"...)
}

// cut sends a response that announces full bytes but delivers only part of
// them, then drops the connection.
func cut(w http.ResponseWriter, contentType string, part []byte, full int) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("wfstest: response writer cannot be hijacked")
	}
	conn, bufrw, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprintf(bufrw, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", contentType, full)
	_, _ = bufrw.Write(part)
	_ = bufrw.Flush()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // a reset, not a clean FIN: what a crashed upstream looks like
	}
}

func writeException(w http.ResponseWriter, status int, code, locator, text string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<ows:ExceptionReport xmlns:ows="http://www.opengis.net/ows/1.1" version="2.0.0">
  <ows:Exception exceptionCode="%s" locator="%s">
    <ows:ExceptionText>%s</ows:ExceptionText>
  </ows:Exception>
</ows:ExceptionReport>
`, code, locator, text)
}

// Paging reads a GetFeature request's startIndex and count (maxFeatures
// in WFS 1.0), whatever the case of their names: 0 and -1 when absent.
func Paging(r *http.Request) (startIndex, count int) {
	return paging(lowerKeys(r.URL.Query()))
}

// paging is Paging of a query whose keys lowerKeys lowered.
func paging(q map[string]string) (startIndex, count int) {
	return atoiOr(q["startindex"], 0), atoiOr(firstNonEmpty(q["count"], q["maxfeatures"]), -1)
}

func lowerKeys(v map[string][]string) map[string]string {
	out := make(map[string]string, len(v))
	for k, vs := range v {
		if len(vs) > 0 {
			out[strings.ToLower(k)] = vs[0]
		}
	}
	return out
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func atoiOr(s string, def int) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return def
	}
	return n
}
