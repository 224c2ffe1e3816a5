package wfstest

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ingestd/ingestd/internal/layertest"
)

// Kinds of hostile feed: how ingestd is configured to read the case.
const (
	// HostileGeoJSON is a plain GeoJSON document, fetched in one request.
	HostileGeoJSON = "geojson"
	// HostileWFS is a WFS 2.0 GetFeature layer with GeoJSON output.
	HostileWFS = "wfs"
	// HostileGML is a WFS 2.0 GetFeature layer with GML 3.2 output.
	HostileGML = "gml"
)

// Origins of the hostile corpus. Each is its own listener (its own breaker in
// ingestd), so that a case that pauses or trips one origin cannot turn the
// other cases into refusals. A case may name an origin of its own (the 429
// cases do, since each may pause its origin).
const (
	// OriginMain serves most cases; ingestd's breaker for it never trips.
	OriginMain = "main"
	// OriginContent serves cases whose content is deterministically bad;
	// its breaker trips on the first failure ingestd charges to the origin,
	// so a tripped breaker there shows a content error counted as the
	// origin's.
	OriginContent = "content"
	// OriginPeer is the other host redirects point to. It serves a good
	// layer at every path, so a redirect followed there loads, and the case
	// shows it.
	OriginPeer = "peer"
)

// HostileOrigins lists the origins cases need, the peer included, sorted.
func HostileOrigins(cases []HostileCase) []string {
	seen := map[string]bool{OriginMain: true, OriginPeer: true}
	for i := range cases {
		seen[cases[i].OriginName()] = true
	}
	out := make([]string, 0, len(seen))
	for o := range seen {
		out = append(out, o)
	}
	sort.Strings(out)
	return out
}

// HostileCase is one lying or malformed response and what ingestd must make
// of it. The feed first loads a good layer (Hostile's good phase), then
// meets the hostile response at the same URL.
type HostileCase struct {
	// Name is the feed id and the path segment: /hostile/NAME.
	Name string
	// Class is the class of input the case belongs to, for reports.
	Class string
	// Kind is HostileGeoJSON (the default), HostileWFS or HostileGML.
	Kind string
	// Origin is the origin that serves the case (OriginMain when empty).
	Origin string

	// Load says the poll must load the layer (the response is legitimately
	// loadable, possibly after a repair); otherwise it must fail and leave
	// the previous snapshot alone.
	Load bool
	// Features is, for a Load case, the number of features the layer has
	// afterwards.
	Features int
	// InvalidGeometries is, for a Load case, the least number of invalid
	// geometries the poll must count.
	InvalidGeometries int
	// Repaired says, for a Load case, that some stored id or property
	// must hold U+FFFD: the bad text was repaired, not dropped.
	Repaired bool
	// Errors are, for a failing case, the substrings of which the error
	// must contain at least one: the cause, e.g. "limits.value_bytes".
	Errors []string
	// Within bounds the poll's wall time (0: the feed's timeout).
	Within time.Duration

	// Limits are the feed's `limits:` settings (key → value).
	Limits map[string]int64
	// RequestTimeout and Timeout override the corpus defaults when set.
	RequestTimeout, Timeout time.Duration
	// PageSize pages a WFS layer (0: the corpus default, one page).
	PageSize int
	// Breaker is the breaker block (YAML flow mapping) of the case's
	// jurisdiction, over the corpus default (one attempt, never trips);
	// every case of an origin must say the same.
	Breaker string
	// Query is appended to the feed URL (planted secrets).
	Query string
	// UserInfo is put in the feed URL (a planted token).
	UserInfo string
	// Secrets must appear nowhere in ingestd's output for the case.
	Secrets []string

	// Respond serves the hostile phase.
	Respond Responder
}

// Feed returns the case's feed key in a corpus config: "jurisdiction/feed".
func (c *HostileCase) Feed() string { return c.Jurisdiction() + "/" + c.Name }

// Jurisdiction is the jurisdiction of the case's feed: one per origin, so
// each can carry its own breaker policy.
func (c *HostileCase) Jurisdiction() string {
	if c.Origin == "" {
		return "hostile"
	}
	return "hostile_" + c.Origin
}

// OriginName is c.Origin with the default resolved.
func (c *HostileCase) OriginName() string {
	if c.Origin == "" {
		return OriginMain
	}
	return c.Origin
}

// Responder writes the hostile response of a case.
type Responder func(w http.ResponseWriter, r *HostileRequest)

// HostileRequest is one request for a case, with what a Responder needs.
type HostileRequest struct {
	*http.Request
	// Case is the case requested.
	Case *HostileCase
	// StartIndex and Count are the WFS paging parameters (Count -1 when absent).
	StartIndex, Count int

	h *Hostile
}

// File returns a static body from the corpus directory.
func (r *HostileRequest) File(name string) []byte {
	b, ok := r.h.files[name]
	r.h.mu.Lock()
	r.h.used[name] = true
	r.h.mu.Unlock()
	if !ok {
		panic("wfstest: hostile case " + r.Case.Name + " names a file that was not loaded: " + name)
	}
	return b
}

// PeerURL is the base URL of the peer origin ("" when it is not known).
func (r *HostileRequest) PeerURL() string { return r.h.peer.Load().(string) }

// MaxGenerated is the most bytes (before compression) a generated body may
// have; 0: no bound.
func (r *HostileRequest) MaxGenerated() int64 { return r.h.MaxGenerated }

// Hostile serves a hostile corpus: each case at /hostile/NAME, a good layer
// there until SetHostile(true), then the case's hostile response. Bodies
// that inflate to gigabytes are generated while they are written, never held.
type Hostile struct {
	// MaxGenerated bounds generated bodies, before compression (0: no bound),
	// so that a test of a build that lacks a limit reads tens of megabytes
	// instead of gigabytes. Set it before serving.
	MaxGenerated int64

	cases   map[string]*HostileCase
	files   map[string][]byte
	hostile atomic.Bool
	peer    atomic.Value // string

	mu       sync.Mutex
	requests map[string]int
	used     map[string]bool // files served, for the test that finds unused ones
}

// NewHostile returns a server of cases whose static bodies are in dir, all
// loaded up front (they are small). A case that names a file dir lacks
// panics when served; TestHostileCorpusShape serves every case.
func NewHostile(dir string, cases []HostileCase) (*Hostile, error) {
	h := &Hostile{cases: map[string]*HostileCase{}, files: map[string][]byte{}, requests: map[string]int{}, used: map[string]bool{}}
	h.peer.Store("")
	for i := range cases {
		c := &cases[i]
		if _, dup := h.cases[c.Name]; dup {
			return nil, fmt.Errorf("wfstest: hostile case %q twice", c.Name)
		}
		h.cases[c.Name] = c
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("wfstest: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("wfstest: %w", err)
		}
		h.files[e.Name()] = b
	}
	return h, nil
}

// SetHostile switches every case between the good layer (false) and its
// hostile response (true).
func (h *Hostile) SetHostile(on bool) { h.hostile.Store(on) }

// SetPeer sets the base URL (scheme://host:port) of the peer origin, where
// cross-origin redirects point.
func (h *Hostile) SetPeer(baseURL string) { h.peer.Store(strings.TrimRight(baseURL, "/")) }

// Requests is the number of requests case name received.
func (h *Hostile) Requests(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.requests[name]
}

// ServeHTTP answers /hostile/NAME (and /hostile/_phase: POST "good" or
// "hostile" switches the phase, for a server in another process). Any other
// path gets the good layer, so a redirect to the peer origin lands on data.
func (h *Hostile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/hostile/")
	if !ok {
		serveGood(w, r, HostileWFS)
		return
	}
	if rest == "_phase" {
		h.servePhase(w, r)
		return
	}
	c, ok := h.cases[rest]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h.mu.Lock()
	h.requests[c.Name]++
	h.mu.Unlock()
	if !h.hostile.Load() {
		serveGood(w, r, c.Kind)
		return
	}
	q := lowerKeys(r.URL.Query())
	req := &HostileRequest{Request: r, Case: c, h: h,
		StartIndex: atoiOr(q["startindex"], 0), Count: atoiOr(firstNonEmpty(q["count"], q["maxfeatures"]), -1)}
	c.Respond(w, req)
}

func (h *Hostile) servePhase(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 64))
		switch strings.TrimSpace(string(b)) {
		case "good":
			h.SetHostile(false)
		case "hostile":
			h.SetHostile(true)
		default:
			http.Error(w, `want "good" or "hostile"`, http.StatusBadRequest)
			return
		}
	}
	phase := "good"
	if h.hostile.Load() {
		phase = "hostile"
	}
	fmt.Fprintln(w, phase)
}

// GoodFeatures is the number of features of the good layer every case
// serves before it turns hostile.
const GoodFeatures = 2

// goodLayer is the layer of the good phase: two address points.
var goodLayer = layertest.Points{N: GoodFeatures}

// serveGood answers a request of kind with the good layer, paged as asked.
func serveGood(w http.ResponseWriter, r *http.Request, kind string) {
	q := lowerKeys(r.URL.Query())
	req := Request{Layer: "points", StartIndex: atoiOr(q["startindex"], 0), Count: atoiOr(firstNonEmpty(q["count"], q["maxfeatures"]), -1)}
	var body []byte
	switch kind {
	case HostileGML:
		body = renderGML32Page(goodLayer, req, false)
		w.Header().Set("Content-Type", "application/gml+xml; version=3.2")
	default:
		body = renderPage(goodLayer, req, kind == HostileGeoJSON || kind == "", false)
		w.Header().Set("Content-Type", "application/json")
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body)
}

// Responders: the building blocks of the case table.

// reply answers status with body and headers (name, value pairs).
func reply(status int, contentType, body string, header ...string) Responder {
	return func(w http.ResponseWriter, r *HostileRequest) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// file answers 200 with a static body of the corpus directory.
func file(contentType, name string, header ...string) Responder {
	return fileStatus(http.StatusOK, contentType, name, header...)
}

// fileStatus answers status with a static body of the corpus directory.
func fileStatus(status int, contentType, name string, header ...string) Responder {
	return func(w http.ResponseWriter, r *HostileRequest) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		body := r.File(name)
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}
}

// gzipped answers 200 with a static body gzipped (twice when twice),
// declared with Content-Encoding: gzip (once).
func gzipped(contentType, name string, twice bool) Responder {
	return func(w http.ResponseWriter, r *HostileRequest) {
		body := gzipBytes(r.File(name))
		if twice {
			body = gzipBytes(body)
		}
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}
}

// gzipMangled answers a gzipped static body after mangle altered it.
func gzipMangled(contentType, name string, mangle func([]byte) []byte) Responder {
	return func(w http.ResponseWriter, r *HostileRequest) {
		body := mangle(gzipBytes(r.File(name)))
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}
}

func gzipBytes(b []byte) []byte {
	var buf strings.Builder
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return []byte(buf.String())
}

// Cut modes: how a truncated response ends.
const (
	cutReset   = "reset"   // Content-Length announced, then a TCP reset
	cutFIN     = "fin"     // Content-Length announced, then a clean close
	cutChunked = "chunked" // chunked, the last chunk never comes, clean close
	cutClean   = "clean"   // a complete HTTP response of an incomplete document
)

// truncated serves the first n bytes of a static body (n < 0: len+n), ending
// the way mode says.
func truncated(contentType, name string, n int, mode string) Responder {
	return func(w http.ResponseWriter, r *HostileRequest) {
		full := r.File(name)
		if n < 0 {
			n += len(full)
		}
		part := full[:min(max(n, 0), len(full))]
		if mode == cutClean {
			w.Header().Set("Content-Type", contentType)
			w.Header().Set("Content-Length", strconv.Itoa(len(part)))
			_, _ = w.Write(part)
			return
		}
		conn, bufrw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		if mode == cutChunked {
			fmt.Fprintf(bufrw, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nTransfer-Encoding: chunked\r\n\r\n", contentType)
			if len(part) > 0 {
				fmt.Fprintf(bufrw, "%x\r\n%s\r\n", len(part), part)
			}
		} else {
			fmt.Fprintf(bufrw, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", contentType, len(full))
			_, _ = bufrw.Write(part)
		}
		_ = bufrw.Flush()
		if tc, ok := conn.(*net.TCPConn); ok && mode == cutReset {
			_ = tc.SetLinger(0)
		}
	}
}

// raw writes bytes straight to the connection: a malformed HTTP response.
// With reset, the connection is reset instead of closed.
func raw(response string, reset bool) Responder {
	return func(w http.ResponseWriter, r *HostileRequest) {
		conn, bufrw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = bufrw.WriteString(response)
		_ = bufrw.Flush()
		if tc, ok := conn.(*net.TCPConn); ok && reset {
			_ = tc.SetLinger(0)
		}
	}
}

// hang never answers; the client's timeout must end the request.
func hang() Responder {
	return func(w http.ResponseWriter, r *HostileRequest) { <-r.Context().Done() }
}

// slow sends the headers, then one byte of a static body every interval:
// slowloris, which only the request timeout can end.
func slow(contentType, name string, interval time.Duration) Responder {
	return func(w http.ResponseWriter, r *HostileRequest) {
		body := r.File(name)
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(http.StatusOK)
		fl, _ := w.(http.Flusher)
		t := time.NewTicker(interval)
		defer t.Stop()
		for i := range body {
			if _, err := w.Write(body[i : i+1]); err != nil {
				return
			}
			if fl != nil {
				fl.Flush()
			}
			select {
			case <-r.Context().Done():
				return
			case <-t.C:
			}
		}
	}
}

// redirect answers 302 (or status) to location; "{peer}" in it is the peer
// origin's base URL and "{self}" this request's origin.
func redirect(status int, location string) Responder {
	return func(w http.ResponseWriter, r *HostileRequest) {
		loc := strings.ReplaceAll(location, "{peer}", r.PeerURL())
		loc = strings.ReplaceAll(loc, "{self}", "http://"+r.Host)
		w.Header().Set("Location", loc)
		w.WriteHeader(status)
	}
}

// Generated bodies.

// generator writes one part of a generated body: head, then item(i) for
// i = 0, 1, … n-1 (n < 0: for ever) separated by sep, then tail.
type generator struct {
	head, sep, tail string
	n               int64
	item            func(buf []byte, i int64) []byte
}

// stream serves the parts one after the other, gzipped when gz. It stops
// early, leaving the document (and the gzip stream) incomplete, when the
// client goes away or MaxGenerated bytes were written.
func stream(contentType string, gz bool, parts ...generator) Responder {
	return func(w http.ResponseWriter, r *HostileRequest) {
		w.Header().Set("Content-Type", contentType)
		var out io.Writer = w
		var zw *gzip.Writer
		if gz {
			w.Header().Set("Content-Encoding", "gzip")
			zw, _ = gzip.NewWriterLevel(w, gzip.BestCompression)
			out = zw
		}
		bw := bufio.NewWriterSize(out, 64<<10)
		cw := &capWriter{w: bw, left: r.MaxGenerated(), bounded: r.MaxGenerated() > 0}
		complete := true
		for _, g := range parts {
			if !g.run(r.Context(), cw) {
				complete = false
				break
			}
		}
		_ = bw.Flush()
		if zw == nil {
			return
		}
		if complete {
			_ = zw.Close()
		} else {
			_ = zw.Flush() // what was compressed so far, without the trailer
		}
	}
}

func (g generator) run(ctx context.Context, w *capWriter) bool {
	if !w.write([]byte(g.head)) {
		return false
	}
	buf := make([]byte, 0, 64<<10)
	for i := int64(0); g.item != nil && (g.n < 0 || i < g.n); i++ {
		if ctx.Err() != nil {
			return false
		}
		buf = buf[:0]
		if i > 0 {
			buf = append(buf, g.sep...)
		}
		buf = g.item(buf, i)
		if !w.write(buf) {
			return false
		}
	}
	return w.write([]byte(g.tail))
}

// text is a part of fixed text.
func text(s string) generator { return generator{head: s} }

// capWriter writes until left bytes are spent, when bounded.
type capWriter struct {
	w       io.Writer
	left    int64
	bounded bool
}

func (c *capWriter) write(p []byte) bool {
	if c.bounded {
		if int64(len(p)) > c.left {
			_, _ = c.w.Write(p[:c.left])
			c.left = 0
			return false
		}
		c.left -= int64(len(p))
	}
	_, err := c.w.Write(p)
	return err == nil
}

// repeatBytes is an item of n bytes of c, in chunks of at most 64 KiB.
func repeatBytes(c byte, n int64) generator {
	const chunk = 64 << 10
	return generator{n: (n + chunk - 1) / chunk, item: func(buf []byte, i int64) []byte {
		size := min(int64(chunk), n-i*chunk)
		for range size {
			buf = append(buf, c)
		}
		return buf
	}}
}

// featureCollectionHead opens a FeatureCollection: WFS 2.0 style with
// numberMatched when matched ≥ 0, bare otherwise.
func featureCollectionHead(matched int64) string {
	if matched < 0 {
		return `{"type":"FeatureCollection","features":[`
	}
	return `{"type":"FeatureCollection","numberMatched":` + strconv.FormatInt(matched, 10) + `,"features":[`
}

// points is a generator of n distinct point features (n < 0: for ever).
func points(n int64) generator {
	return generator{head: featureCollectionHead(-1), sep: ",", tail: "]}", n: n, item: appendPoint}
}

func appendPoint(buf []byte, i int64) []byte {
	buf = append(buf, `{"type":"Feature","id":"p.`...)
	buf = strconv.AppendInt(buf, i, 10)
	buf = append(buf, `","geometry":{"type":"Point","coordinates":[`...)
	buf = strconv.AppendFloat(buf, -78.9+float64(i%1000)*0.0001, 'f', 4, 64)
	buf = append(buf, ',')
	buf = strconv.AppendFloat(buf, 35.6+float64(i/1000%1000)*0.0001, 'f', 4, 64)
	buf = append(buf, `]},"properties":{"n":`...)
	buf = strconv.AppendInt(buf, i, 10)
	return append(buf, `,"name":"a street name that is long enough to matter"}}`...)
}

// gmlHead and gmlTail frame GML 3.2 members as a WFS 2.0 FeatureCollection
// whose size the server does not know (no numberReturned, numberMatched
// "unknown"), as a streaming server answers.
const (
	gmlHead = `<?xml version="1.0" encoding="UTF-8"?>
<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs/2.0" xmlns:gml="http://www.opengis.net/gml/3.2" xmlns:ingestd="http://ingestd.example/fixture" numberMatched="unknown" timeStamp="2026-01-01T00:00:00Z">`
	gmlTail = "</wfs:FeatureCollection>\n"
)

// appendGMLPoint appends GML member i, a point with one attribute.
func appendGMLPoint(buf []byte, i int64) []byte {
	buf = append(buf, `<wfs:member><ingestd:points gml:id="g.`...)
	buf = strconv.AppendInt(buf, i, 10)
	buf = append(buf, `"><ingestd:geom><gml:Point srsName="urn:ogc:def:crs:EPSG::4326" srsDimension="2"><gml:pos>35.6 -78.9</gml:pos></gml:Point></ingestd:geom><ingestd:n>`...)
	buf = strconv.AppendInt(buf, i, 10)
	return append(buf, `</ingestd:n></ingestd:points></wfs:member>`...)
}

// paged serves a WFS GeoJSON layer page by page: page(start, count) returns
// the page's numberMatched (< 0: omitted), numberReturned (< 0: omitted) and
// the ids of its features.
func paged(page func(start, count int) (matched, returned int, ids []int)) Responder {
	return func(w http.ResponseWriter, r *HostileRequest) {
		count := r.Count
		if count < 0 {
			count = 100
		}
		matched, returned, ids := page(r.StartIndex, count)
		buf := []byte(`{"type":"FeatureCollection",`)
		if matched >= 0 {
			buf = append(buf, `"numberMatched":`...)
			buf = strconv.AppendInt(buf, int64(matched), 10)
			buf = append(buf, ',')
		}
		if returned >= 0 {
			buf = append(buf, `"numberReturned":`...)
			buf = strconv.AppendInt(buf, int64(returned), 10)
			buf = append(buf, ',')
		}
		buf = append(buf, `"features":[`...)
		for k, id := range ids {
			if k > 0 {
				buf = append(buf, ',')
			}
			buf = appendPoint(buf, int64(id))
		}
		buf = append(buf, "]}"...)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(buf)))
		_, _ = w.Write(buf)
	}
}
