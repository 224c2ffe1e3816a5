package wfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feature/featuretest"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/ows"
	"github.com/ingestd/ingestd/source"
)

const testToken = "tok-8c1f3e"

func wfsLayer(url string, pageSize int) source.Layer {
	return source.Layer{Kind: Kind, URL: url + "/geoserver/wfs?token=" + testToken, Settings: Settings{TypeName: "county:parcels"}, PageSize: pageSize}
}

func TestFetchPaging(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		fx            *fixtureWFS
		version       string
		firstPage     int
		wantRequests  int
		wantFeatures  int
		wantMatched   int
		wantLastQuery string
	}{
		{name: "numberMatched stops after 5 full pages", fx: &fixtureWFS{n: 50, withMatched: true}, wantRequests: 5, wantFeatures: 50, wantMatched: 50, wantLastQuery: "startIndex=40&count=10"},
		{name: "no numberMatched, short last page", fx: &fixtureWFS{n: 47}, wantRequests: 5, wantFeatures: 47, wantMatched: -1, wantLastQuery: "startIndex=40&count=10"},
		{name: "no numberMatched, exact multiple needs an empty page", fx: &fixtureWFS{n: 50}, wantRequests: 6, wantFeatures: 50, wantMatched: -1, wantLastQuery: "startIndex=50&count=10"},
		{name: "1.1.0 pages with maxFeatures", fx: &fixtureWFS{n: 45, withMatched: true}, version: "1.1.0", wantRequests: 5, wantFeatures: 45, wantMatched: 45, wantLastQuery: "startIndex=40&maxFeatures=10"},
		{name: "resume at page 2", fx: &fixtureWFS{n: 50, withMatched: true}, firstPage: 2, wantRequests: 3, wantFeatures: 30, wantMatched: 50, wantLastQuery: "startIndex=40&count=10"},
		{name: "ids absent", fx: &fixtureWFS{n: 50, withMatched: true, withoutIDs: true}, wantRequests: 5, wantFeatures: 50, wantMatched: 50, wantLastQuery: "startIndex=40&count=10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := serve(t, tt.fx)
			layer := wfsLayer(srv.URL, 10)
			setSettings(&layer, func(s *Settings) { s.Version = tt.version })
			var c collect
			var urls []string
			handle := func(ctx context.Context, p source.Page, fr feature.FeatureReader) error {
				urls = append(urls, p.URL)
				if p.StartIndex != p.Index*10 {
					t.Errorf("page %d starts at %d", p.Index, p.StartIndex)
				}
				return c.handle(ctx, p, fr)
			}
			stats, err := newTestClient(t, 1).Fetch(t.Context(), layer, tt.firstPage, handle)
			if err != nil {
				t.Fatal(err)
			}
			if len(tt.fx.queries) != tt.wantRequests || stats.Pages != tt.wantRequests {
				t.Errorf("%d requests, %d pages; want %d", len(tt.fx.queries), stats.Pages, tt.wantRequests)
			}
			if stats.Features != tt.wantFeatures || c.total() != tt.wantFeatures || stats.NumberMatched != tt.wantMatched {
				t.Errorf("stats %+v, handled %d; want %d features, numberMatched %d", stats, c.total(), tt.wantFeatures, tt.wantMatched)
			}
			if last := tt.fx.queries[len(tt.fx.queries)-1]; !strings.HasSuffix(last, tt.wantLastQuery) {
				t.Errorf("last query %s, want …%s", last, tt.wantLastQuery)
			}
			if stats.Bytes <= 0 || len(stats.Warnings) != 0 {
				t.Errorf("stats %+v", stats)
			}
			for _, u := range urls {
				if strings.Contains(u, testToken) || !strings.Contains(u, "token=REDACTED") {
					t.Errorf("Page.URL %s is not redacted", u)
				}
			}
			if got := c.pages[tt.firstPage][0]; !strings.Contains(got, fmt.Sprintf(`{"n":%d}`, tt.firstPage*10)) {
				t.Errorf("first feature handled %s", got)
			}
		})
	}
}

func TestFetchStartIndexIgnored(t *testing.T) {
	t.Parallel()
	for _, withoutIDs := range []bool{false, true} {
		fx := &fixtureWFS{n: 50, ignoreStart: true, withoutIDs: withoutIDs}
		srv := serve(t, fx)
		var c collect
		stats, err := newTestClient(t, 3).Fetch(t.Context(), wfsLayer(srv.URL, 10), 0, c.handle)
		if !errors.Is(err, ErrStartIndexIgnored) {
			t.Fatalf("withoutIDs=%v: err = %v, want ErrStartIndexIgnored", withoutIDs, err)
		}
		// The repeated page never reached the handler, and the verdict is not
		// retried: the server answered, it just does not page.
		if c.calls != 1 || stats.Pages != 1 || len(fx.queries) != 2 {
			t.Errorf("withoutIDs=%v: handler calls %d, pages %d, requests %d; want 1 1 2", withoutIDs, c.calls, stats.Pages, len(fx.queries))
		}
		if !strings.Contains(err.Error(), "token=REDACTED") || strings.Contains(err.Error(), testToken) {
			t.Errorf("error %q does not name the redacted URL", err)
		}
	}
}

func TestFetchPageSizeIgnored(t *testing.T) {
	t.Parallel()
	fx := &fixtureWFS{n: 25, ignoreCount: true}
	srv := serve(t, fx)
	var c collect
	stats, err := newTestClient(t, 1).Fetch(t.Context(), wfsLayer(srv.URL, 10), 0, c.handle)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Pages != 1 || stats.Features != 25 || len(stats.Warnings) != 1 || !strings.Contains(stats.Warnings[0], "ignored the page size") {
		t.Errorf("stats %+v", stats)
	}
}

// TestFetchRetryRerunsPage: a body cut mid-page fails the attempt; the
// breaker retries it and the handler stages the page again from scratch.
func TestFetchRetryRerunsPage(t *testing.T) {
	t.Parallel()
	fx := &fixtureWFS{n: 50, withMatched: true, serverSideErr: map[int]int{20: 1}}
	srv := serve(t, fx)
	var c collect
	stats, err := newTestClient(t, 3).Fetch(t.Context(), wfsLayer(srv.URL, 10), 0, c.handle)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Pages != 5 || stats.Features != 50 || c.total() != 50 || len(fx.queries) != 6 {
		t.Errorf("stats %+v, handled %d, requests %d; want 5 pages, 50 features, 6 requests", stats, c.total(), len(fx.queries))
	}
}

// TestFetchHandlerError: the database failing is not the origin's fault: the
// handler's error comes back as is, after one attempt.
func TestFetchHandlerError(t *testing.T) {
	t.Parallel()
	fx := &fixtureWFS{n: 50, withMatched: true}
	srv := serve(t, fx)
	errDB := errors.New("pg: connection refused")
	handle := func(ctx context.Context, p source.Page, fr feature.FeatureReader) error {
		if _, err := fr.Next(); err != nil {
			return err
		}
		return fmt.Errorf("copy into staging: %w", errDB)
	}
	_, err := newTestClient(t, 3).Fetch(t.Context(), wfsLayer(srv.URL, 10), 0, handle)
	if !errors.Is(err, errDB) || !strings.HasPrefix(err.Error(), "copy into staging") {
		t.Errorf("err = %v, want the handler's error as is", err)
	}
	if len(fx.queries) != 1 {
		t.Errorf("%d requests, want 1 (an Ignored attempt is not retried)", len(fx.queries))
	}
}

// runAttempt serves one response and runs one attempt of page 0 against it,
// so that the test sees the Outcome the breaker would.
func runAttempt(t *testing.T, h http.Handler, c *Client, layer func(string) source.Layer, ctx context.Context) (breaker.Result, *collect) {
	t.Helper()
	srv := serve(t, h)
	l := layer(srv.URL)
	u, err := RequestURL(l, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := source.Page{Index: 0, URL: RedactURL(u.String())}
	var col collect
	var res pageResult
	r := c.base.Calls.Attempt(ctx, request(l, u, acceptHeader(l)), func(a *httpcall.Attempt) breaker.Result {
		return c.attempt(a, l, p, func(string) error { return nil }, col.handle, &res)
	})
	return r, &col
}

func body(t *testing.T, status int, name string, header ...string) http.Handler {
	var data []byte
	if name != "" {
		data = featuretest.ReadTestdata(t, name)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(status)
		w.Write(data)
	})
}

func text(status int, s string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		io.WriteString(w, s)
	})
}

// TestClassification runs every recorded body through a real attempt.
func TestClassification(t *testing.T) {
	t.Parallel()
	now := time.Date(2024, 5, 14, 9, 0, 0, 0, time.UTC)
	page := featuretest.ReadTestdata(t, "geoserver_2_0_page.json")
	var exc *ows.ExceptionReportError
	var hse *httpcall.HTTPStatusError
	var be *httpcall.BodyError
	var te *httpcall.TransportError
	tests := []struct {
		name    string
		h       http.Handler
		opts    []Option
		want    breaker.Outcome
		check   func(error) bool
		retryIn time.Duration
	}{
		{"200 GeoJSON page", body(t, 200, "geoserver_2_0_page.json"), nil, breaker.Success, func(err error) bool { return err == nil }, 0},
		{"200 GeoServer HTML error page", body(t, 200, "geoserver_error_page.html", "Content-Type", "text/html"), nil, breaker.Failure,
			func(err error) bool {
				return errors.Is(err, httpcall.ErrHTMLBody) && errors.As(err, &be) && strings.Contains(err.Error(), "HTTP Status 500")
			}, 0},
		{"200 XHTML maintenance page", body(t, 200, "proxy_maintenance.html"), nil, breaker.Failure, func(err error) bool { return errors.Is(err, httpcall.ErrHTMLBody) }, 0},
		{"200 ows:ExceptionReport NoApplicableCode", body(t, 200, "geoserver_exception_2_0_noapplicablecode.xml"), nil, breaker.Failure,
			func(err error) bool {
				return errors.As(err, &exc) && exc.Code == "NoApplicableCode" && exc.ServerSide && strings.Contains(exc.Text, "Connection to localhost:5432 refused")
			}, 0},
		{"400 ows:ExceptionReport NoApplicableCode", body(t, 400, "geoserver_exception_2_0_noapplicablecode.xml"), nil, breaker.Failure,
			func(err error) bool { return errors.As(err, &exc) && exc.Status == 400 }, 0},
		{"400 ows:ExceptionReport InvalidParameterValue", body(t, 400, "geoserver_exception_2_0_invalidparametervalue.xml"), nil, breaker.Success,
			func(err error) bool {
				return errors.As(err, &exc) && exc.Code == "InvalidParameterValue" && exc.Locator == "typeName" && !exc.ServerSide && exc.Text == "Feature type county:parcelz unknown"
			}, 0},
		{"200 MapServer ServiceExceptionReport InvalidParameterValue", body(t, 200, "mapserver_service_exception_1_1.xml", "Content-Type", "text/xml"), nil, breaker.Success,
			func(err error) bool {
				return errors.As(err, &exc) && exc.Code == "InvalidParameterValue" && exc.Locator == "typename" && strings.Contains(exc.Text, "doesn't exist")
			}, 0},
		{"200 MapServer ServiceExceptionReport without code", body(t, 200, "mapserver_service_exception_nocode.xml"), nil, breaker.Failure,
			func(err error) bool { return errors.As(err, &exc) && exc.Code == "" && exc.ServerSide }, 0},
		{"503", text(503, "Service Unavailable"), nil, breaker.Failure, func(err error) bool { return errors.As(err, &hse) && hse.Status == 503 }, 0},
		{"502 HTML", body(t, 502, "geoserver_error_page.html"), nil, breaker.Failure, func(err error) bool { return errors.As(err, &hse) && hse.Status == 502 }, 0},
		{"404", text(404, "Not Found"), nil, breaker.Success, func(err error) bool { return errors.As(err, &hse) && hse.Status == 404 }, 0},
		{"429 Retry-After seconds", body(t, 429, "", "Retry-After", "120"), nil, breaker.Throttled,
			func(err error) bool { return errors.As(err, &hse) && hse.Status == 429 }, 120 * time.Second},
		{"429 Retry-After date", body(t, 429, "", "Retry-After", now.Add(90*time.Second).Format(http.TimeFormat)), []Option{WithClock(func() time.Time { return now })}, breaker.Throttled,
			func(err error) bool { return errors.As(err, &hse) }, 90 * time.Second},
		{"429 without Retry-After", body(t, 429, ""), nil, breaker.Throttled, func(err error) bool { return errors.As(err, &hse) }, 0},
		{"connection cut mid-body (Content-Length)", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			cutConnection(w, string(page[:500]), len(page))
		}), nil, breaker.Failure, func(err error) bool { return errors.As(err, &be) && errors.Is(err, io.ErrUnexpectedEOF) }, 0},
		{"connection cut mid-body (chunked)", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write(page[:500])
			w.(http.Flusher).Flush()
			conn, _, _ := http.NewResponseController(w).Hijack()
			conn.Close()
		}), nil, breaker.Failure, func(err error) bool { return errors.As(err, &be) }, 0},
		{"200 truncated JSON", body(t, 200, "truncated_page.json"), nil, breaker.Failure,
			func(err error) bool { return errors.As(err, &be) && strings.Contains(err.Error(), "feature 2") }, 0},
		{"200 empty", text(200, ""), nil, breaker.Failure, func(err error) bool { return errors.Is(err, httpcall.ErrEmptyBody) }, 0},
		{"200 plain text", text(200, "Error: layer is being rebuilt"), nil, breaker.Failure, func(err error) bool { return errors.Is(err, httpcall.ErrUnrecognizedBody) }, 0},
		{"200 GML 3.2 page", body(t, 200, "geoserver_wfs20_gml32_parcels.xml"), nil, breaker.Success, func(err error) bool { return err == nil }, 0},
		{"200 too large: the feed's error", body(t, 200, "geoserver_2_0_page.json"), []Option{WithMaxBodyBytes(600)}, breaker.Success,
			func(err error) bool {
				var le *feature.LimitError
				return errors.As(err, &le) && le.Name == "body_bytes" && le.Max == 600 && errors.As(err, &be)
			}, 0},
		{"attempt timeout", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(time.Minute): // a hang ceiling: the client's 50ms request timeout ends it
			}
		}), []Option{WithRequestTimeout(50 * time.Millisecond)}, breaker.Failure,
			func(err error) bool { return errors.As(err, &te) && errors.Is(err, context.DeadlineExceeded) }, 0},
	}
	for _, tt := range tests {
		// Not parallel: the check funcs share the errors.As targets above.
		t.Run(tt.name, func(t *testing.T) {
			c := NewClient(nil, nil, nil, tt.opts...)
			res, col := runAttempt(t, tt.h, c, func(u string) source.Layer { return wfsLayer(u, 10) }, t.Context())
			if res.Outcome != tt.want || !tt.check(res.Err) {
				t.Errorf("outcome %s, err %v (%T); want %s", res.Outcome, res.Err, res.Err, tt.want)
			}
			if res.RetryAfter != tt.retryIn {
				t.Errorf("RetryAfter %s, want %s", res.RetryAfter, tt.retryIn)
			}
			if res.Err != nil {
				msg := res.Err.Error()
				// An attempt's error is the shared layers' (httpcall, the
				// decoders), which name no kind: Fetch names it once.
				if strings.Contains(msg, "wfs: ") {
					t.Errorf("error %q names a kind; only Fetch does", msg)
				}
				if strings.Contains(msg, testToken) || !strings.Contains(msg, "token=REDACTED") {
					t.Errorf("error %q must name the URL, redacted", msg)
				}
				if res.Outcome != breaker.Failure || !errors.As(res.Err, &be) {
					return
				}
			}
			if tt.want == breaker.Success && res.Err == nil && col.total() != 3 {
				t.Errorf("handled %d features, want 3", col.total())
			}
		})
	}
}

func TestClassificationTransport(t *testing.T) {
	t.Parallel()
	srv := serve(t, http.NotFoundHandler())
	srv.Close() // nothing listens there any more
	c := NewClient(nil, nil, nil)
	l := wfsLayer(srv.URL, 10)
	u, _ := RequestURL(l, 0)
	var res pageResult
	r := c.base.Calls.Attempt(t.Context(), request(l, u, acceptHeader(l)), func(a *httpcall.Attempt) breaker.Result {
		return c.attempt(a, l, source.Page{URL: RedactURL(u.String())}, func(string) error { return nil }, (&collect{}).handle, &res)
	})
	var te *httpcall.TransportError
	if r.Outcome != breaker.Failure || !errors.As(r.Err, &te) || strings.Contains(r.Err.Error(), testToken) {
		t.Errorf("dial refused: %s %v", r.Outcome, r.Err)
	}
}

// TestClassificationCancelled: the caller's cancellation is nobody's fault.
func TestClassificationCancelled(t *testing.T) {
	t.Parallel()
	page := featuretest.ReadTestdata(t, "geoserver_2_0_page.json")
	ctx, cancel := context.WithCancel(t.Context())
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(page[:300])
		w.(http.Flusher).Flush()
		cancel()
		<-r.Context().Done()
	})
	res, _ := runAttempt(t, h, NewClient(nil, nil, nil), func(u string) source.Layer { return wfsLayer(u, 10) }, ctx)
	if res.Outcome != breaker.Ignored || !errors.Is(res.Err, context.Canceled) {
		t.Errorf("cancelled mid-body: %s %v, want Ignored wrapping context.Canceled", res.Outcome, res.Err)
	}
}

// TestFetchOutcomesReachTheBreaker: a client-side exception is answered once,
// a server failure is retried until the breaker gives up, and either way the
// error Fetch returns is typed and names the redacted URL.
func TestFetchOutcomesReachTheBreaker(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		h        func(*testing.T) http.Handler
		requests int
		check    func(error) bool
	}{
		{"400 InvalidParameterValue is not retried", func(t *testing.T) http.Handler {
			return body(t, 400, "geoserver_exception_2_0_invalidparametervalue.xml")
		}, 1, func(err error) bool {
			var exc *ows.ExceptionReportError
			return errors.As(err, &exc) && exc.Code == "InvalidParameterValue"
		}},
		{"200 NoApplicableCode is retried", func(t *testing.T) http.Handler {
			return body(t, 200, "geoserver_exception_2_0_noapplicablecode.xml")
		}, 3, func(err error) bool {
			var re *breaker.RetryError
			var exc *ows.ExceptionReportError
			return errors.As(err, &re) && errors.As(err, &exc) && exc.Code == "NoApplicableCode"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var n int
			inner := tt.h(t)
			srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n++
				inner.ServeHTTP(w, r)
			}))
			var c collect
			_, err := newTestClient(t, 3).Fetch(t.Context(), wfsLayer(srv.URL, 10), 0, c.handle)
			if !tt.check(err) || n != tt.requests || c.calls != 0 {
				t.Errorf("err %v, %d requests, %d handler calls; want %d requests, none handled", err, n, c.calls, tt.requests)
			}
			if err != nil && (strings.Contains(err.Error(), testToken) || !strings.Contains(err.Error(), "token=REDACTED")) {
				t.Errorf("error %q must name the URL, redacted", err)
			}
		})
	}
}

func TestFetchWithoutRegistry(t *testing.T) {
	t.Parallel()
	fx := &fixtureWFS{n: 12, withMatched: true}
	srv := serve(t, fx)
	var c collect
	stats, err := NewClient(nil, nil, nil).Fetch(t.Context(), wfsLayer(srv.URL, 5), 0, c.handle)
	if err != nil || stats.Pages != 3 || stats.Features != 12 {
		t.Errorf("stats %+v, err %v; want 3 pages, 12 features", stats, err)
	}
}

// Every request names its client, so a county's admin can tell who is calling.
func TestUserAgent(t *testing.T) {
	t.Parallel()
	var got string
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.UserAgent()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"type":"FeatureCollection","features":[]}`))
	}))
	layer := source.Layer{Kind: Kind, Settings: Settings{TypeName: "t"}, URL: srv.URL + "/x.geojson"}
	if _, err := newTestClient(t, 1, WithUserAgent("ingestd/test")).Fetch(t.Context(), layer, 0, (&collect{}).handle); err != nil {
		t.Fatal(err)
	}
	if got != "ingestd/test" {
		t.Errorf("User-Agent %q, want ingestd/test", got)
	}
}

// TestDuplicateIDInOneResponse: an id twice in one response fails the
// fetch like an id on two pages (internal/pageids): kept once, the layer
// would look whole with a feature missing.
func TestDuplicateIDInOneResponse(t *testing.T) {
	t.Parallel()
	doc := `{"type":"FeatureCollection","features":[` +
		`{"type":"Feature","id":"a","geometry":{"type":"Point","coordinates":[1,2]},"properties":{"n":1}},` +
		`{"type":"Feature","id":"b","geometry":{"type":"Point","coordinates":[1,2]},"properties":{"n":2}},` +
		`{"type":"Feature","id":"a","geometry":{"type":"Point","coordinates":[1,2]},"properties":{"n":3}}]}`
	srv := serve(t, text(http.StatusOK, doc))
	var c collect
	_, err := newTestClient(t, 1).Fetch(t.Context(), source.Layer{Kind: Kind, Settings: Settings{TypeName: "t"}, URL: srv.URL + "/p.geojson"}, 0, c.handle)
	var ie *source.IncompleteError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), `id "a" comes twice in page 0: the ids are not unique`) {
		t.Fatalf("err = %v, want *source.IncompleteError naming the id twice in page 0", err)
	}
}
