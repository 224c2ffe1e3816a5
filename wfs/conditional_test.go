package wfs

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/source"
)

// validatorServer serves one small FeatureCollection with an ETag and a
// Last-Modified, answering 304 to a matching If-None-Match unless it
// ignores validators; it records the conditional headers it got.
type validatorServer struct {
	ignore bool
	mu     sync.Mutex
	inm    []string
	ims    []string
}

const (
	testETag         = `"v1-abc"`
	testLastModified = "Tue, 01 Dec 2026 10:00:00 GMT"
)

func (s *validatorServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.inm = append(s.inm, r.Header.Get("If-None-Match"))
	s.ims = append(s.ims, r.Header.Get("If-Modified-Since"))
	s.mu.Unlock()
	w.Header().Set("ETag", testETag)
	w.Header().Set("Last-Modified", testLastModified)
	if !s.ignore && r.Header.Get("If-None-Match") == testETag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/geo+json")
	_, _ = w.Write([]byte(`{"type":"FeatureCollection","features":[{"type":"Feature","id":"a","properties":{},"geometry":{"type":"Point","coordinates":[1,2]}}]}`))
}

func countingHandler(pages *int) source.PageFunc {
	return func(_ context.Context, _ source.Page, fr feature.FeatureReader) error {
		*pages++
		for {
			if _, err := fr.Next(); err != nil {
				return nil
			}
		}
	}
}

func TestConditionalFetch(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name             string
		layer            func(url string) source.Layer
		ignore           bool
		wantConditional  bool
		wantNotModified  bool
		wantValidatorsOf bool // the response's validators are kept
	}{
		{"unpaged WFS at a document path: 304", func(u string) source.Layer {
			return source.Layer{Kind: Kind, Settings: Settings{TypeName: "t"}, URL: u + "/doc.geojson"}
		},
			false, true, true, true},
		{"server ignoring validators is served as before", func(u string) source.Layer {
			return source.Layer{Kind: Kind, Settings: Settings{TypeName: "t"}, URL: u + "/doc.geojson"}
		}, true, true, false, true},
		{"unpaged WFS: 304", func(u string) source.Layer {
			return source.Layer{Kind: Kind, URL: u + "/wfs", Settings: Settings{TypeName: "t", Version: "2.0.0", OutputFormat: "application/json"}}
		}, false, true, true, true},
		{"paged WFS sends and keeps none", func(u string) source.Layer {
			return source.Layer{Kind: Kind, URL: u + "/wfs", Settings: Settings{TypeName: "t", Version: "2.0.0", OutputFormat: "application/json"}, PageSize: 10}
		}, false, false, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := &validatorServer{ignore: tt.ignore}
			ts := serve(t, srv)
			reg := testRegistry(t, 1)
			c := NewClient(&http.Client{}, reg, nil)
			layer := tt.layer(ts.URL)
			layer.Validators = source.Validators{ETag: testETag, LastModified: testLastModified}
			var pages int
			stats, err := c.Fetch(t.Context(), layer, 0, countingHandler(&pages))
			if err != nil {
				t.Fatal(err)
			}
			srv.mu.Lock()
			defer srv.mu.Unlock()
			sent := srv.inm[0] == testETag && srv.ims[0] == testLastModified
			if sent != tt.wantConditional || (!tt.wantConditional && (srv.inm[0] != "" || srv.ims[0] != "")) {
				t.Errorf("sent If-None-Match %q, If-Modified-Since %q; want conditional %v", srv.inm[0], srv.ims[0], tt.wantConditional)
			}
			if stats.NotModified != tt.wantNotModified {
				t.Errorf("NotModified %v; want %v", stats.NotModified, tt.wantNotModified)
			}
			if tt.wantNotModified && (pages != 0 || stats.Pages != 0 || stats.Bytes != 0) {
				t.Errorf("a 304 handed %d pages over (stats %+v); want none", pages, stats)
			}
			if !tt.wantNotModified && pages != 1 {
				t.Errorf("handled %d pages; want 1", pages)
			}
			kept := stats.Validators == source.Validators{ETag: testETag, LastModified: testLastModified}
			if kept != tt.wantValidatorsOf || (!tt.wantValidatorsOf && !stats.Validators.IsZero()) {
				t.Errorf("validators %+v; want kept: %v", stats.Validators, tt.wantValidatorsOf)
			}
			// A 304 is the origin's success, not a failure.
			if s := onlyOrigin(reg); s.State != breaker.StateClosed || s.Counts.Successes != 1 || s.Counts.Failures != 0 {
				t.Errorf("breaker %+v after the fetch; want closed with one success", s)
			}
		})
	}
}
