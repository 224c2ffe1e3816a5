package feeds

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd/arcgis"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/geojson"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/ogcapi"
	"github.com/ingestd/ingestd/source"
)

// TestErrorsNameTheirKindOnce: a poll error names the feed's
// kind once, at its start, and no other kind: the shared layers (httpcall,
// the decoders, the limits) name none. An ArcGIS 404, an OGC API page cut
// short and a plain GeoJSON feed past its poll's deadline (and an ArcGIS
// error object, one of the kind's own errors), each through the registry
// of kinds as a poll fetches them.
func TestErrorsNameTheirKindOnce(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	page := `{"type":"FeatureCollection","numberMatched":1,"features":[{"type":"Feature","id":"a","geometry":{"type":"Point","coordinates":[1,2]},"properties":{}}]}`
	mux := http.NewServeMux()
	mux.HandleFunc("/rest/services/parcels/FeatureServer/0", http.NotFound)
	mux.HandleFunc("/rest/services/zoning/FeatureServer/0", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"error":{"code":400,"message":"Invalid or missing input parameters.","details":[]}}`)
	})
	mux.HandleFunc("/collections/parcels/items", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/geo+json")
		io.WriteString(w, page[:90]) // cut inside the first feature
	})
	mux.HandleFunc("/parcels.json", func(w http.ResponseWriter, r *http.Request) {
		// Hangs until the poll's deadline ends the request (the release
		// only bounds a hang should the client not give up).
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	for _, c := range []struct {
		kind   string
		layer  source.Layer
		ctx    func() (context.Context, context.CancelFunc)
		want   string // a substring past the kind's name
		wantAs func(error) bool
	}{
		{"arcgis", source.Layer{Kind: arcgis.Kind, URL: srv.URL + "/rest/services/parcels/FeatureServer/0"}, nil,
			"GET " + srv.URL + "/rest/services/parcels/FeatureServer/0?f=json: HTTP 404 Not Found",
			func(err error) bool { var se *httpcall.HTTPStatusError; return errors.As(err, &se) && se.Status == 404 }},
		// The kind's own typed errors under its own wrapping: still once.
		{"arcgis", source.Layer{Kind: arcgis.Kind, URL: srv.URL + "/rest/services/zoning/FeatureServer/0"}, nil,
			"server answered error 400: Invalid or missing input parameters.",
			func(err error) bool { var se *arcgis.ServerError; return errors.As(err, &se) }},
		{"ogcapi", source.Layer{Kind: ogcapi.Kind, URL: srv.URL + "/collections/parcels", Settings: ogcapi.Settings{ItemsURL: srv.URL + "/collections/parcels/items"}, PageSize: 10}, nil,
			"geojson: feature 0: unexpected EOF",
			func(err error) bool {
				var be *httpcall.BodyError
				return errors.As(err, &be) && errors.Is(err, io.ErrUnexpectedEOF)
			}},
		{"geojson", source.Layer{Kind: geojson.Kind, URL: srv.URL + "/parcels.json"},
			func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(t.Context(), 100*time.Millisecond)
			},
			"poll timeout after 0 pages (0 features), at page 0 (" + srv.URL + "/parcels.json)",
			func(err error) bool { var te *source.TimeoutError; return errors.As(err, &te) }},
	} {
		ctx, cancel := t.Context(), context.CancelFunc(func() {})
		if c.ctx != nil {
			ctx, cancel = c.ctx()
		}
		_, err := NewFetchers(kindconf.FetcherDeps{}).Fetch(ctx, c.layer, 0, drain)
		cancel()
		if err == nil {
			t.Errorf("%s: no error", c.kind)
			continue
		}
		msg := err.Error()
		t.Logf("%s: %s", c.kind, msg)
		if !strings.HasPrefix(msg, c.kind+": ") || strings.Count(msg, c.kind) != 1 || !strings.Contains(msg, c.want) || !c.wantAs(err) {
			t.Errorf("%s: %q (%T); want it to start with %q, name %s once, contain %q, and keep its type", c.kind, msg, err, c.kind+": ", c.kind, c.want)
		}
		for _, other := range []string{"wfs", "arcgis", "ogcapi"} {
			if other != c.kind && strings.Contains(msg, other) {
				t.Errorf("%s: %q names %s", c.kind, msg, other)
			}
		}
	}
}

// drain reads a page to its end, wrapping the reader's errors as a
// handler must (see httpcall.BodyError).
func drain(_ context.Context, p source.Page, r feature.FeatureReader) error {
	for {
		_, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("page %d: %w", p.Index, err)
		}
	}
}
