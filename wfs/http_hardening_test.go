package wfs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feature/featuretest"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/source"
	"github.com/ingestd/ingestd/wfs/wfstest"
)

const headerSecret = "hdr-5ec7e7-value"

// headerLog records, per request kind, the X-Api-Key header each request
// carried, in front of a real handler.
type headerLog struct {
	mu   sync.Mutex
	seen map[string][]string // request kind → header values
	next http.Handler
}

func (h *headerLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kind := r.URL.Query().Get("request")
	if r.URL.Query().Get("resultType") == "hits" {
		kind = "hits"
	}
	if kind == "" {
		kind = "plain"
	}
	h.mu.Lock()
	if h.seen == nil {
		h.seen = map[string][]string{}
	}
	h.seen[kind] = append(h.seen[kind], r.Header.Get("X-Api-Key"))
	h.mu.Unlock()
	h.next.ServeHTTP(w, r)
}

// TestFeedHeadersOnEveryRequest: a feed's headers go with every request of
// the feed (GetCapabilities, hits, every GetFeature page, a failing one),
// and never into a log line or an error.
func TestFeedHeadersOnEveryRequest(t *testing.T) {
	t.Parallel()
	fx := wfstest.New()
	fx.AddLayer("parcels", layertest.Parcels{N: 25})
	rec := &headerLog{next: fx}
	srv := serve(t, rec)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := NewClient(nil, testRegistry(t, 1), logger)
	headers := map[string]string{"X-Api-Key": headerSecret}

	auto := source.Layer{Kind: Kind, URL: srv.URL + "/wfs", Settings: Settings{TypeName: "parcels", Version: Auto, OutputFormat: Auto}, PageSize: 10, Headers: headers}
	layer, _, err := c.Prepare(t.Context(), auto)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Hits(t.Context(), layer); err != nil {
		t.Fatal(err)
	}
	var col collect
	if _, err := c.Fetch(t.Context(), layer, 0, col.handle); err != nil || col.total() != 25 {
		t.Fatalf("fetch: %v, %d features", err, col.total())
	}
	// A failing request must not leak the header either.
	missing := source.Layer{Kind: Kind, Settings: Settings{TypeName: "t"}, URL: srv.URL + "/geojson/nope.geojson", Headers: headers}
	_, ferr := c.Fetch(t.Context(), missing, 0, (&collect{}).handle)
	if ferr == nil || strings.Contains(ferr.Error(), headerSecret) {
		t.Errorf("missing document: %v", ferr)
	}

	rec.mu.Lock()
	defer rec.mu.Unlock()
	want := map[string]int{"GetCapabilities": 1, "hits": 1, "GetFeature": 4}
	for kind, n := range want {
		got := rec.seen[kind]
		if len(got) != n {
			t.Errorf("%s: %d requests, want %d", kind, len(got), n)
		}
		for _, v := range got {
			if v != headerSecret {
				t.Errorf("%s request carried X-Api-Key %q, want the feed's header", kind, v)
			}
		}
	}
	if strings.Contains(logs.String(), headerSecret) {
		t.Errorf("a log line carries the header's value:\n%s", logs.String())
	}

	// A header net/http would refuse is the feed's error, before any
	// request, and the message names the header, not its value.
	bad := missing
	bad.Headers = map[string]string{"X-Api-Key": headerSecret + "\r\nX-Evil: 1"}
	before := len(rec.seen["GetFeature"])
	_, err = c.Fetch(t.Context(), bad, 0, (&collect{}).handle)
	if !errors.Is(err, source.ErrInvalidLayer) || strings.Contains(err.Error(), headerSecret) || !strings.Contains(err.Error(), "X-Api-Key") {
		t.Errorf("bad header value: %v", err)
	}
	if len(rec.seen["GetFeature"]) != before {
		t.Error("a request went out with a bad header")
	}
}

// TestBodyLimitPerFeed: the feed's limits.body_bytes bounds its responses
// after decompression, capabilities included; exceeding it is the feed's
// *LimitError, a success for the breaker (not retried, never opening it),
// while another feed of the same client keeps the default.
func TestBodyLimitPerFeed(t *testing.T) {
	t.Parallel()
	fx := wfstest.New()
	fx.AddLayer("parcels", layertest.Parcels{N: 40})
	var n atomic.Int64
	// Gzip every answer: the limit must count inflated bytes (the 40
	// parcels are 35 KB, 2.7 KB gzipped: a limit of 4000 counted on the
	// wire would let them through).
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		rw := &recorder{header: http.Header{}}
		fx.ServeHTTP(rw, r)
		for k, v := range rw.header {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(rw.status)
		w.Write(gzipped(t, rw.body.Bytes()))
	}))
	p := breaker.DefaultPolicy()
	p.ConsecutiveFailures, p.FailureRatio, p.MaxAttempts, p.RateLimit = 1, 0, 3, 0
	p.BackoffBase, p.BackoffMax = time.Millisecond, time.Millisecond
	reg := breaker.NewRegistry(breaker.Config{Policy: p}, nil)
	c := NewClient(nil, reg, nil)

	small := source.Layer{Kind: Kind, Settings: Settings{TypeName: "t"}, URL: srv.URL + "/geojson/parcels.geojson", Limits: feature.Limits{BodyBytes: 4000}}
	_, err := c.Fetch(t.Context(), small, 0, (&collect{}).handle)
	var le *feature.LimitError
	if !errors.As(err, &le) || le.Name != "body_bytes" || le.Max != 4000 || !strings.Contains(err.Error(), "limits.body_bytes") {
		t.Fatalf("err %v, want *LimitError body_bytes 4000", err)
	}
	if n.Load() != 1 {
		t.Errorf("%d requests, want 1: a limit is not retried", n.Load())
	}
	// The same layer with the default limit loads, through the same origin:
	// the breaker did not open on the feed's error.
	big := small
	big.Limits = feature.Limits{}
	var col collect
	if _, err := c.Fetch(t.Context(), big, 0, col.handle); err != nil || col.total() != 40 {
		t.Fatalf("default limit: %v, %d features", err, col.total())
	}
	// GetCapabilities is bounded by the same limit.
	caps := source.Layer{Kind: Kind, URL: srv.URL + "/wfs", Settings: Settings{TypeName: "parcels"}, Limits: feature.Limits{BodyBytes: 500}}
	_, err = c.Capabilities(t.Context(), caps)
	if !errors.As(err, &le) || le.Max != 500 {
		t.Errorf("capabilities over the limit: %v, want *LimitError", err)
	}
	if _, err := c.Capabilities(t.Context(), source.Layer{Kind: Kind, URL: srv.URL + "/wfs", Settings: Settings{TypeName: "parcels"}}); err != nil {
		t.Errorf("capabilities under the default limit: %v", err)
	}
	for _, s := range reg.Snapshot() {
		if s.State != breaker.StateClosed || s.Counts.Failures != 0 {
			t.Errorf("breaker %s: %s with %d failures, want closed with none", s.Origin, s.State, s.Counts.Failures)
		}
	}
}

// recorder is a minimal http.ResponseWriter that keeps what a handler wrote.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(p)
}
func (r *recorder) WriteHeader(status int) { r.status = status }

// TestContentErrorsAreTheFeeds: one server, two layers. The bad layer's
// content is deterministically wrong in every way a 200 with data can be;
// each poll of it fails with a message naming the cause, after one request,
// and the breaker of the server stays closed, so the good layer loads. A
// body cut short, by contrast, is still the origin's failure.
func TestContentErrorsAreTheFeeds(t *testing.T) {
	t.Parallel()
	bad := map[string]string{
		"not a FeatureCollection": `[1,2,3]`,
		"features not an array":   `{"type":"FeatureCollection","features":5}`,
		"bad geometry":            `{"type":"FeatureCollection","features":[{"type":"Feature","id":"a","geometry":{"type":"Point","coordinates":"east"},"properties":{}}]}`,
		"syntax error inside":     `{"type":"FeatureCollection","features":[{"type":"Feature","id":"a",,}]}`,
		"GML bad coordinates": `<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs/2.0" xmlns:gml="http://www.opengis.net/gml/3.2" xmlns:x="urn:x">` +
			`<wfs:member><x:p gml:id="a"><x:geom><gml:Point srsName="EPSG:4326"><gml:pos>east north</gml:pos></gml:Point></x:geom></x:p></wfs:member></wfs:FeatureCollection>`,
	}
	fx := wfstest.New()
	fx.AddLayer("good", layertest.Parcels{N: 15})
	fx.AddLayer("bad", layertest.Parcels{N: 15})
	var current atomic.Value
	fx.SetFault(func(r wfstest.Request) *wfstest.Fault {
		if r.Layer != "bad" {
			return nil
		}
		return &wfstest.Fault{Status: 200, Body: current.Load().(string), ContentType: "application/json"}
	})
	srv := serve(t, fx)
	p := breaker.DefaultPolicy()
	p.ConsecutiveFailures, p.FailureRatio, p.MaxAttempts, p.RateLimit = 2, 0, 3, 0
	p.BackoffBase, p.BackoffMax = time.Millisecond, time.Millisecond
	reg := breaker.NewRegistry(breaker.Config{Policy: p}, nil)
	c := NewClient(nil, reg, nil)
	layer := func(name string) source.Layer {
		return source.Layer{Kind: Kind, URL: srv.URL + "/wfs", Settings: Settings{TypeName: name}, PageSize: 10}
	}
	state := func() breaker.OriginState {
		for _, s := range reg.Snapshot() {
			return s
		}
		return breaker.OriginState{}
	}
	for name, doc := range bad {
		current.Store(doc)
		before := fx.PageRequests("bad", 0)
		_, err := c.Fetch(t.Context(), layer("bad"), 0, (&collect{}).handle)
		var be *httpcall.BodyError
		if !errors.As(err, &be) {
			t.Errorf("%s: err %v, want a *BodyError", name, err)
			continue
		}
		var re *breaker.RetryError
		if errors.As(err, &re) {
			t.Errorf("%s: retried as the origin's failure: %v", name, err)
		}
		if n := fx.PageRequests("bad", 0) - before; n != 1 {
			t.Errorf("%s: %d requests, want 1", name, n)
		}
		if s := state(); s.State != breaker.StateClosed || s.Counts.Failures != 0 {
			t.Errorf("%s: breaker %s with %d failures, want closed with none", name, s.State, s.Counts.Failures)
		}
	}
	var col collect
	if _, err := c.Fetch(t.Context(), layer("good"), 0, col.handle); err != nil || col.total() != 15 {
		t.Fatalf("good layer: %v, %d features", err, col.total())
	}

	// The other side of the rule: a body cut short is the origin's.
	fx.SetFault(func(r wfstest.Request) *wfstest.Fault {
		if r.Layer == "bad" {
			return &wfstest.Fault{CutAfter: 300}
		}
		return nil
	})
	for range 2 {
		_, err := c.Fetch(t.Context(), layer("bad"), 0, (&collect{}).handle)
		var re *breaker.RetryError
		if !errors.As(err, &re) {
			t.Errorf("cut body: %v, want the origin's failure after retries", err)
		}
	}
	if s := state(); s.State != breaker.StateOpen {
		t.Errorf("breaker %s after two cut bodies, want open", s.State)
	}
}

// TestByteOrderMark: a UTF-8 BOM before JSON, GML or capabilities is skipped.
func TestByteOrderMark(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"geoserver_2_0_page.json", "geoserver_wfs20_gml32_parcels.xml"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data := append([]byte("\xef\xbb\xbf"), featuretest.ReadTestdata(t, name)...)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(data) })
			res, col := runAttempt(t, h, NewClient(nil, nil, nil), func(u string) source.Layer { return wfsLayer(u, 10) }, t.Context())
			if res.Outcome != breaker.Success || res.Err != nil || col.total() != 3 {
				t.Errorf("%s %v, %d features; want 3 features", res.Outcome, res.Err, col.total())
			}
		})
	}
	t.Run("capabilities", func(t *testing.T) {
		t.Parallel()
		fx := wfstest.New()
		srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("\xef\xbb\xbf"))
			fx.ServeHTTP(w, r)
		}))
		if _, err := NewClient(nil, nil, nil).Capabilities(t.Context(), source.Layer{Kind: Kind, URL: srv.URL + "/wfs", Settings: Settings{TypeName: "x"}}); err != nil {
			t.Errorf("capabilities after a BOM: %v", err)
		}
	})
}

// TestGzipLabelOnPlainBody: a server that says Content-Encoding: gzip and
// sends plain JSON is read as sent, with a warning, through a default
// transport (whose transparent decompression used to report "empty
// response body"); a real gzip still inflates.
func TestGzipLabelOnPlainBody(t *testing.T) {
	t.Parallel()
	data := featuretest.ReadTestdata(t, "geoserver_2_0_page.json")
	for _, real := range []bool{false, true} {
		t.Run(fmt.Sprintf("gzip=%v", real), func(t *testing.T) {
			t.Parallel()
			srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Encoding", "gzip")
				if real {
					w.Write(gzipped(t, data))
					return
				}
				w.Write(data)
			}))
			var col collect
			stats, err := NewClient(&http.Client{}, nil, nil).Fetch(t.Context(), source.Layer{Kind: Kind, Settings: Settings{TypeName: "t"}, URL: srv.URL + "/p.json"}, 0, col.handle)
			var ie *source.IncompleteError // the recorded page promises 12 of which it holds 3
			if !errors.As(err, &ie) || col.total() != 3 || stats.Bytes != int64(len(data)) {
				t.Fatalf("err %v, %d features, %d bytes; want the 3 features read", err, col.total(), stats.Bytes)
			}
			warned := strings.Contains(strings.Join(stats.Warnings, "\n"), "Content-Encoding gzip but the body is not gzip")
			if warned == real {
				t.Errorf("warnings %q", stats.Warnings)
			}
		})
	}
	t.Run("capabilities", func(t *testing.T) {
		t.Parallel()
		fx := wfstest.New()
		srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			fx.ServeHTTP(w, r)
		}))
		if _, err := NewClient(&http.Client{}, nil, nil).Capabilities(t.Context(), source.Layer{Kind: Kind, URL: srv.URL + "/wfs", Settings: Settings{TypeName: "x"}}); err != nil {
			t.Errorf("plain capabilities labelled gzip: %v", err)
		}
	})
}

// shuffledWFS pages a layer of n features in a random order per request,
// with no numberMatched and never a short page: paging never ends by itself.
type shuffledWFS struct {
	n        int
	requests atomic.Int64
}

func (s *shuffledWFS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	seq := s.requests.Add(1)
	var count int
	fmt.Sscan(r.URL.Query().Get("count"), &count)
	var b strings.Builder
	b.WriteString(`{"type":"FeatureCollection","features":[`)
	for i := range count {
		if i > 0 {
			b.WriteByte(',')
		}
		id := (int(seq)*7919 + i*104729) % s.n // a different slice of the layer per request
		fmt.Fprintf(&b, `{"type":"Feature","id":"f.%d","geometry":{"type":"Point","coordinates":[%d,1]},"properties":{"n":%d}}`, id, id, id)
	}
	b.WriteString(`]}`)
	io.WriteString(w, b.String())
}

// TestUnstablePagingStopsEarly: a server paging a 50-feature layer in an
// unstable order, with no numberMatched and never a short page, fails the
// fetch as incomplete within a few pages, with the default client (no
// WithDuplicateIDCheck, as the daemon runs it).
func TestUnstablePagingStopsEarly(t *testing.T) {
	t.Parallel()
	s := &shuffledWFS{n: 50}
	srv := serve(t, s)
	layer := source.Layer{Kind: Kind, URL: srv.URL + "/wfs", Settings: Settings{TypeName: "x"}, PageSize: 10}
	_, err := NewClient(nil, testRegistry(t, 1), nil).Fetch(t.Context(), layer, 0, (&collect{}).handle)
	var ie *source.IncompleteError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "paging is unstable") || !strings.Contains(err.Error(), "sort_by") {
		t.Fatalf("err %v, want *source.IncompleteError for unstable paging", err)
	}
	if n := s.requests.Load(); n > 6 {
		t.Errorf("%d pages before the verdict, want at most 6 for a 50-feature layer", n)
	}

	// The same through the fixture server, as the hostile corpus serves it.
	fx := wfstest.New()
	parcels := layertest.Parcels{N: 40}
	fx.AddLayer("parcels", parcels)
	fx.SetFault(wfstest.UnstablePages("parcels", parcels))
	fsrv := serve(t, fx)
	layer = source.Layer{Kind: Kind, URL: fsrv.URL + "/wfs", Settings: Settings{TypeName: "parcels"}, PageSize: 10}
	_, err = NewClient(nil, testRegistry(t, 1), nil).Fetch(t.Context(), layer, 0, (&collect{}).handle)
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "paging is unstable") {
		t.Fatalf("fixture: err %v, want *source.IncompleteError for unstable paging", err)
	}
	if n := fx.Requests(); n > 6 {
		t.Errorf("fixture: %d pages before the verdict, want at most 6 for a 40-feature layer", n)
	}
}

// TestPollTimeoutNamesThePages: a fetch that runs out of its deadline while
// the origin's pacing holds it reports "poll timeout after N pages", not
// the rate limiter's message. The deadline comes once two pages are in
// (and is already past then), so the count does not depend on how many
// pages the machine fetched in some span of time.
func TestPollTimeoutNamesThePages(t *testing.T) {
	t.Parallel()
	s := &shuffledWFS{n: 1_000_000} // never repeats within the test
	srv := serve(t, s)
	p := breaker.DefaultPolicy()
	// Two tokens for the two pages, then one an hour: the third page's
	// request must wait for the limiter, which refuses a wait past the
	// deadline at once, however long the pages took on a busy machine.
	p.RateLimit, p.Burst = 1.0/3600, 2
	reg := breaker.NewRegistry(breaker.Config{Policy: p}, nil)
	ctx := &lateDeadline{Context: t.Context()}
	c := &collect{}
	handle := func(hctx context.Context, page source.Page, fr feature.FeatureReader) error {
		err := c.handle(hctx, page, fr)
		if page.Index == 1 {
			ctx.set(time.Now())
		}
		return err
	}
	layer := source.Layer{Kind: Kind, URL: srv.URL + "/wfs?token=" + testToken, Settings: Settings{TypeName: "x"}, PageSize: 5}
	stats, err := NewClient(nil, reg, nil).Fetch(ctx, layer, 0, handle)
	var te *source.TimeoutError
	if !errors.As(err, &te) || te.Pages != stats.Pages || stats.Pages != 2 {
		t.Fatalf("err %v (%T), %d pages; want *source.TimeoutError", err, err, stats.Pages)
	}
	msg := err.Error()
	if !strings.Contains(msg, fmt.Sprintf("poll timeout after %d pages", stats.Pages)) || strings.Contains(msg, "rate:") || strings.Contains(msg, testToken) {
		t.Errorf("message %q", msg)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%v does not wrap context.DeadlineExceeded", err)
	}
}

// lateDeadline is a context that has no deadline until set gives it one:
// the pacing of the origin's next request then runs into it (a deadline
// already past is refused at once by the rate limiter), whatever the time.
type lateDeadline struct {
	context.Context
	mu       sync.Mutex
	deadline time.Time
}

func (c *lateDeadline) set(d time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline = d
}

func (c *lateDeadline) Deadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deadline, !c.deadline.IsZero()
}
