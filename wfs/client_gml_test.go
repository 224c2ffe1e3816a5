package wfs

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feature/featuretest"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/ows"
	"github.com/ingestd/ingestd/source"
)

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestLyingBodies: every way a 200 can lie, from recorded bodies, through a
// real attempt: the outcome the breaker sees, and an error that names the
// (redacted) URL and what was wrong.
func TestLyingBodies(t *testing.T) {
	t.Parallel()
	gml := featuretest.ReadTestdata(t, "geoserver_wfs20_gml32_parcels.xml")
	geojson := featuretest.ReadTestdata(t, "geoserver_2_0_page.json")
	// A transport that does not negotiate gzip: a server that gzips anyway
	// must still be understood.
	noCompression := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	var exc *ows.ExceptionReportError
	var be *httpcall.BodyError
	tests := []struct {
		name     string
		h        http.Handler
		client   *http.Client
		opts     []Option
		want     breaker.Outcome
		features int    // when the body is data
		errHas   string // when it is not
		check    func(error) bool
	}{
		{name: "200 ows:ExceptionReport, server code", h: body(t, 200, "geoserver_exception_2_0_noapplicablecode.xml"), want: breaker.Failure,
			errHas: "OGC exception NoApplicableCode", check: func(err error) bool { return errors.As(err, &exc) && exc.ServerSide }},
		{name: "200 ows:ExceptionReport, client code", h: body(t, 200, "geoserver_exception_2_0_invalidparametervalue.xml"), want: breaker.Success,
			errHas: "InvalidParameterValue (locator typeName): Feature type county:parcelz unknown", check: func(err error) bool { return errors.As(err, &exc) && !exc.ServerSide }},
		{name: "200 ServiceExceptionReport (WFS 1.0, MapServer)", h: body(t, 200, "mapserver_service_exception_1_1.xml", "Content-Type", "application/vnd.ogc.se_xml"), want: breaker.Success,
			errHas: "TYPENAME 'zoning_districts' doesn't exist", check: func(err error) bool { return errors.As(err, &exc) && exc.Code == "InvalidParameterValue" }},
		{name: "200 GeoServer JSON exception, client code", h: body(t, 200, "geoserver_exception_json.json", "Content-Type", "application/json"), want: breaker.Success,
			errHas: "OGC exception InvalidParameterValue (locator typeName): Feature type county:parcelz unknown", check: func(err error) bool { return errors.As(err, &exc) && !exc.ServerSide }},
		{name: "200 GeoServer JSON exception, server code", h: body(t, 200, "geoserver_exception_json_noapplicablecode.json", "Content-Type", "application/json"), want: breaker.Failure,
			errHas: "NoApplicableCode (locator noLocator): java.lang.RuntimeException: Unable to obtain connection", check: func(err error) bool { return errors.As(err, &exc) && exc.ServerSide }},
		{name: "200 HTML", h: body(t, 200, "geoserver_error_page.html", "Content-Type", "text/html"), want: breaker.Failure,
			errHas: "HTML page instead of data", check: func(err error) bool { return errors.Is(err, httpcall.ErrHTMLBody) }},
		{name: "GeoJSON labelled text/plain: the body decides", h: body(t, 200, "geoserver_2_0_page.json", "Content-Type", "text/plain"), want: breaker.Success, features: 3},
		{name: "GML labelled application/json: the body decides", h: body(t, 200, "geoserver_wfs20_gml32_parcels.xml", "Content-Type", "application/json"), want: breaker.Success, features: 3},
		{name: "truncated XML", h: body(t, 200, "geoserver_wfs20_gml32_truncated.xml", "Content-Type", "text/xml; subtype=gml/3.2"), want: breaker.Failure,
			errHas: ": gml: feature 1", check: func(err error) bool { return errors.As(err, &be) && errors.Is(err, io.ErrUnexpectedEOF) }},
		{name: "truncated JSON", h: body(t, 200, "truncated_page.json"), want: breaker.Failure,
			errHas: ": geojson: feature 2", check: func(err error) bool { return errors.As(err, &be) }},
		{name: "GML cut by the connection", h: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			cutConnection(w, string(gml[:1500]), len(gml))
		}), want: breaker.Failure, errHas: "unexpected EOF", check: func(err error) bool { return errors.As(err, &be) }},
		{name: "gzip, negotiated", h: gzipHandler(t, gml, true), want: breaker.Success, features: 3},
		{name: "gzip unasked, transport without compression", h: gzipHandler(t, gml, false), client: noCompression, want: breaker.Success, features: 3},
		{name: "gzip without Content-Encoding", h: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(gzipped(t, geojson))
		}), want: breaker.Success, features: 3},
		{name: "gzip cut short", h: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			z := gzipped(t, gml)
			w.Write(z[:len(z)/2])
		}), client: noCompression, want: breaker.Failure, errHas: "unexpected EOF", check: func(err error) bool { return errors.As(err, &be) }},
		// A body over the limit is the feed's error (a success for the
		// breaker: the server answered), naming the limit to raise.
		{name: "GML larger than the client's body limit", h: body(t, 200, "geoserver_wfs20_gml32_parcels.xml"), opts: []Option{WithMaxBodyBytes(2000)}, want: breaker.Success,
			errHas: "limits.body_bytes exceeded (2000 bytes)", check: func(err error) bool { return errors.Is(err, feature.ErrLimit) && errors.As(err, &be) }},
		{name: "gzip bomb stops at the decompressed limit", h: gzipHandler(t, append([]byte(`{"type":"FeatureCollection","features":[`), bytes.Repeat([]byte(" "), 1<<20)...), false), client: noCompression, opts: []Option{WithMaxBodyBytes(64 << 10)}, want: breaker.Success,
			errHas: "limits.body_bytes exceeded (65536 bytes)", check: func(err error) bool { return errors.Is(err, feature.ErrLimit) }},
		{name: "XML that is not features", h: text(200, `<?xml version="1.0"?><Error><Code>NoSuchKey</Code></Error>`), want: breaker.Failure,
			errHas: "XML root element <Error>", check: func(err error) bool { return errors.Is(err, httpcall.ErrUnrecognizedBody) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewClient(tt.client, nil, nil, tt.opts...)
			res, col := runAttempt(t, tt.h, c, func(u string) source.Layer { return wfsLayer(u, 10) }, t.Context())
			if res.Outcome != tt.want {
				t.Errorf("outcome %s, want %s (err %v)", res.Outcome, tt.want, res.Err)
			}
			if tt.check == nil {
				if res.Err != nil || col.total() != tt.features {
					t.Errorf("err %v, %d features; want %d features", res.Err, col.total(), tt.features)
				}
				return
			}
			if res.Err == nil || !tt.check(res.Err) {
				t.Fatalf("err %v (%T) fails the check", res.Err, res.Err)
			}
			msg := res.Err.Error()
			if !strings.Contains(msg, "token=REDACTED") || strings.Contains(msg, testToken) || !strings.Contains(msg, tt.errHas) {
				t.Errorf("error %q must name the redacted URL and say %q", msg, tt.errHas)
			}
			// An attempt's error is the shared layers' (httpcall, the
			// decoders), which name no kind: Fetch names it once.
			if strings.Contains(msg, "wfs: ") {
				t.Errorf("error %q names a kind; only Fetch does", msg)
			}
		})
	}
}

func gzipHandler(t *testing.T, b []byte, onlyIfAsked bool) http.Handler {
	z := gzipped(t, b)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if onlyIfAsked && !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Write(b)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(z)
	})
}

// gmlWFS serves n point features as WFS 2.0 GML 3.2 pages, and misbehaves
// as told.
type gmlWFS struct {
	n        int
	matched  int // numberMatched to claim; -1: n; -2: omit
	stopAt   int // serve no feature at or past this index (0: n)
	dupStart int // the page at this start index also repeats feature dupStart-1 at its end
	drift    int // numberMatched grows by this on every page after the first
	returned int // numberReturned to claim (0: the truth)
	mu       sync.Mutex
	requests int
}

func (g *gmlWFS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	g.mu.Lock()
	g.requests++
	reqs := g.requests
	g.mu.Unlock()
	start, _ := strconv.Atoi(q.Get("startIndex"))
	count, err := strconv.Atoi(q.Get("count"))
	if err != nil {
		count = g.n
	}
	limit := g.n
	if g.stopAt > 0 {
		limit = g.stopAt
	}
	end := min(start+count, limit)
	ids := []int{}
	for i := start; i < end; i++ {
		ids = append(ids, i)
	}
	if g.dupStart > 0 && start == g.dupStart && len(ids) > 0 {
		ids[len(ids)-1] = g.dupStart - 1
	}
	matched := g.matched
	if matched == -1 {
		matched = g.n
	}
	matched += g.drift * (reqs - 1)
	returned := len(ids)
	if g.returned > 0 {
		returned = g.returned
	}
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs/2.0" xmlns:gml="http://www.opengis.net/gml/3.2" xmlns:county="http://county.example.gov"`)
	if g.matched != -2 {
		fmt.Fprintf(&b, ` numberMatched="%d"`, matched)
	}
	fmt.Fprintf(&b, ` numberReturned="%d">`, returned)
	for _, i := range ids {
		fmt.Fprintf(&b, `<wfs:member><county:p gml:id="p.%d"><county:geom><gml:Point srsName="urn:ogc:def:crs:EPSG::4326"><gml:pos>%d.5 -%d.25</gml:pos></gml:Point></county:geom><county:n>%d</county:n></county:p></wfs:member>`, i, 30+i%10, 70+i%10, i)
	}
	b.WriteString(`</wfs:FeatureCollection>`)
	w.Header().Set("Content-Type", "application/gml+xml; version=3.2")
	io.WriteString(w, b.String())
}

func gmlLayer(url string, pageSize int) source.Layer {
	l := wfsLayer(url, pageSize)
	setSettings(&l, func(s *Settings) { s.OutputFormat = "application/gml+xml; version=3.2" })
	return l
}

func TestFetchGMLPaging(t *testing.T) {
	t.Parallel()
	fx := &gmlWFS{n: 25, matched: -1}
	srv := serve(t, fx)
	var c collect
	stats, err := newTestClient(t, 1).Fetch(t.Context(), gmlLayer(srv.URL, 10), 0, c.handle)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Pages != 3 || stats.Features != 25 || stats.NumberMatched != 25 || c.total() != 25 || fx.requests != 3 {
		t.Errorf("stats %+v, handled %d, requests %d", stats, c.total(), fx.requests)
	}
	if got := c.pages[2][4]; got != `p.24|{"n":"24"}` {
		t.Errorf("last feature %s", got)
	}
}

// TestFetchIncomplete: a snapshot that does not add up is an error, never a
// warning, so that the caller applies nothing.
func TestFetchIncomplete(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		fx       *gmlWFS
		pageSize int
		reason   string
		expected int
		got      int
	}{
		{"short page while numberMatched says more remain", &gmlWFS{n: 50, matched: -1, stopAt: 35}, 10, "page 3 ends the result at 35 features, numberMatched promised 50", 50, 35},
		{"full pages that never reach numberMatched", &gmlWFS{n: 40, matched: 45}, 10, "page 4 ends the result at 40 features, numberMatched promised 45", 45, 40},
		{"more features than numberMatched", &gmlWFS{n: 25, matched: 20}, 30, "page 0 ends the result at 25 features, numberMatched promised 20", 20, 25},
		{"one capped request", &gmlWFS{n: 1000, matched: -1, stopAt: 500}, 0, "one request returned 500 of the 1000 features", 1000, 500},
		{"numberMatched drifts between pages", &gmlWFS{n: 50, matched: -1, drift: 1}, 10, "numberMatched changed from 50 to 51 between pages", 51, 20},
		{"numberReturned the body does not hold", &gmlWFS{n: 50, matched: -1, returned: 12}, 10, "page 0: numberReturned says 12 features, the body held 10", 50, 10},
		{"duplicate id across pages", &gmlWFS{n: 50, matched: -1, dupStart: 30}, 10, `server paging is unstable: id "p.29" seen on pages 2 and 3`, -1, 39},
		{"duplicate id, no numberMatched", &gmlWFS{n: 50, matched: -2, dupStart: 20}, 10, `id "p.19" seen on pages 1 and 2`, -1, 29},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := serve(t, tt.fx)
			var c collect
			_, err := newTestClient(t, 3, WithDuplicateIDCheck()).Fetch(t.Context(), gmlLayer(srv.URL, tt.pageSize), 0, c.handle)
			var ie *source.IncompleteError
			if !errors.As(err, &ie) {
				t.Fatalf("err = %v, want *source.IncompleteError", err)
			}
			if !strings.Contains(ie.Reason, tt.reason) || ie.Expected != tt.expected || ie.Got != tt.got {
				t.Errorf("source.IncompleteError %+v, want reason %q expected %d got %d", ie, tt.reason, tt.expected, tt.got)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "wfs: incomplete result from http://") || !strings.Contains(msg, "token=REDACTED") || strings.Contains(msg, testToken) {
				t.Errorf("error %q must name the redacted URL", msg)
			}
		})
	}
	// The startIndex check still comes first: a server serving page 0 again
	// is told apart from an unstable order.
	fx := &fixtureWFS{n: 50, ignoreStart: true}
	srv := serve(t, fx)
	if _, err := newTestClient(t, 1).Fetch(t.Context(), wfsLayer(srv.URL, 10), 0, (&collect{}).handle); !errors.Is(err, ErrStartIndexIgnored) {
		t.Errorf("server ignoring startIndex: %v", err)
	}
}
