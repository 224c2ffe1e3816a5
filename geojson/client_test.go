package geojson_test

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feature/featuretest"
	"github.com/ingestd/ingestd/geojson"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/source"
)

const testToken = "tok-8c1f3e"

// collect counts the features of every page, wrapping the reader's errors
// as a handler must (see source.PageFunc).
type collect struct{ n atomic.Int64 }

func (c *collect) handle(_ context.Context, p source.Page, r feature.FeatureReader) error {
	for {
		_, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("page %d: %w", p.Index, err)
		}
		c.n.Add(1)
	}
}

func serve(t *testing.T, h http.Handler) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// TestFetchAsIsGzip: the document's URL goes out as is (no paging or
// protocol parameters), gzip is asked for and read, and a document that
// holds fewer features than its numberMatched is incomplete; a resumed
// fetch (first page 1) is refused before any request.
func TestFetchAsIsGzip(t *testing.T) {
	t.Parallel()
	body := featuretest.ReadTestdata(t, "geoserver_2_0_page.json")
	var sawGzip atomic.Bool
	var requests atomic.Int64
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.URL.RawQuery != "apikey="+testToken {
			t.Errorf("query %q: a GeoJSON URL must go out as is", r.URL.RawQuery)
		}
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Write(body)
			return
		}
		sawGzip.Store(true)
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		zw.Write(body)
		zw.Close()
	}))
	layer := source.Layer{Kind: geojson.Kind, URL: srv.URL + "/parcels.geojson?apikey=" + testToken, PageSize: 2}
	c := geojson.NewClient(srv.Client(), nil, nil)
	var col collect
	// The recorded page promises numberMatched 12 and holds 3: one request
	// that the server capped is an incomplete snapshot, not a layer of 3.
	stats, err := c.Fetch(t.Context(), layer, 0, col.handle)
	var ie *source.IncompleteError
	if !errors.As(err, &ie) || ie.Expected != 12 || ie.Got != 3 || !strings.Contains(err.Error(), "apikey=REDACTED") ||
		!strings.HasPrefix(err.Error(), "geojson: ") {
		t.Fatalf("err = %v, want *source.IncompleteError 3 of 12 naming the kind and the redacted URL", err)
	}
	if !sawGzip.Load() {
		t.Error("the client did not ask for gzip")
	}
	if stats.Pages != 1 || stats.Features != 3 || stats.NumberMatched != 12 || stats.Bytes != int64(len(body)) {
		t.Errorf("stats %+v; want 1 page, 3 features, numberMatched 12, %d decompressed bytes", stats, len(body))
	}
	before := requests.Load()
	if _, err := c.Fetch(t.Context(), layer, 1, col.handle); !errors.Is(err, source.ErrInvalidLayer) {
		t.Errorf("resume a GeoJSON layer at page 1: %v, want source.ErrInvalidLayer", err)
	}
	if requests.Load() != before {
		t.Error("a resumed fetch made a request")
	}
}

// TestConditional: the validators of the last applied snapshot go back to
// the server, whose 304 ends the fetch unchanged; the first fetch keeps
// the document's validators and the feed's headers go with every request.
func TestConditional(t *testing.T) {
	t.Parallel()
	const doc = `{"type":"FeatureCollection","features":[{"type":"Feature","id":"a","geometry":{"type":"Point","coordinates":[1,2]},"properties":{}}]}`
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != testToken {
			t.Errorf("request without the feed's header")
		}
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", `"v1"`)
		io.WriteString(w, doc)
	}))
	layer := source.Layer{Kind: geojson.Kind, URL: srv.URL + "/doc.geojson", Headers: map[string]string{"X-Api-Key": testToken}}
	c := geojson.NewClient(srv.Client(), nil, nil)
	var col collect
	stats, err := c.Fetch(t.Context(), layer, 0, col.handle)
	if err != nil || stats.Features != 1 || stats.Validators.ETag != `"v1"` || stats.NotModified {
		t.Fatalf("first fetch: %+v, %v", stats, err)
	}
	layer.Validators = stats.Validators
	stats, err = c.Fetch(t.Context(), layer, 0, col.handle)
	if err != nil || !stats.NotModified || stats.Validators != layer.Validators || col.n.Load() != 1 {
		t.Errorf("second fetch: %+v, %v, %d features handed over; want NotModified and none", stats, err, col.n.Load())
	}
}

// TestErrorsNameTheKindOnce: a 404, an HTML page, a repeated id and a
// deadline each fail the fetch with an error that names geojson once.
func TestErrorsNameTheKindOnce(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	mux := http.NewServeMux()
	mux.HandleFunc("/html", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<!DOCTYPE html><html><head><title>Maintenance</title></head></html>")
	})
	mux.HandleFunc("/dup", func(w http.ResponseWriter, r *http.Request) {
		f := `{"type":"Feature","id":"a","geometry":{"type":"Point","coordinates":[1,2]},"properties":{}}`
		io.WriteString(w, `{"type":"FeatureCollection","features":[`+f+","+f+`]}`)
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	srv := serve(t, mux)
	c := geojson.NewClient(srv.Client(), nil, nil)
	for _, tc := range []struct {
		path string
		is   func(error) bool
	}{
		{"/missing", func(err error) bool { var se *httpcall.HTTPStatusError; return errors.As(err, &se) && se.Status == 404 }},
		{"/html", func(err error) bool { return errors.Is(err, httpcall.ErrHTMLBody) }},
		{"/dup", func(err error) bool { var ie *source.IncompleteError; return errors.As(err, &ie) }},
		{"/hang", func(err error) bool { var te *source.TimeoutError; return errors.As(err, &te) }},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		_, err := c.Fetch(ctx, source.Layer{Kind: geojson.Kind, URL: srv.URL + tc.path}, 0, (&collect{}).handle)
		cancel()
		if err == nil || !tc.is(err) || !strings.HasPrefix(err.Error(), "geojson: ") || strings.Count(err.Error(), "geojson") != 1 ||
			strings.Contains(err.Error(), "wfs") {
			t.Errorf("%s: %v (%T); want its type, and geojson named once at the start", tc.path, err, err)
		}
	}
}
