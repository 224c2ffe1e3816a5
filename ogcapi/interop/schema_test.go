package interop_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/ogcapi"
	"github.com/ingestd/ingestd/source"
)

// TestMapServerDeclaresNoSchema records a finding: MapServer 8.0's OGC API
// serves neither Part 3 queryables nor a Part 5 schema (404 "Invalid API
// path") and its collection documents link none, so an ogcapi feed on it
// asks for no schema and its typed view's types are inferred from the
// values. The adapter (ogcapi.FromJSONSchema) is tested against the
// fixture server. The test fails if a MapServer starts linking one: then
// it should be tested here too.
func TestMapServerDeclaresNoSchema(t *testing.T) {
	base := mapServer.URL(t)
	c := ogcapi.NewClient(nil, nil, nil)
	layer, _, err := c.Prepare(t.Context(), source.Layer{Kind: "ogcapi", URL: base + "/collections/nc_sql", PageSize: 10, DescribeSchema: true})
	if err != nil {
		t.Fatal(err)
	}
	if s := layer.Settings.(ogcapi.Settings); s.SchemaURL != "" {
		t.Errorf("MapServer links a schema now (%s: %s): test the adapter against it", s.SchemaOrigin, s.SchemaURL)
	}
	for _, doc := range []string{"queryables", "schema"} {
		resp, err := http.Get(base + "/collections/nc_sql/" + doc + "?f=json")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("/collections/nc_sql/%s: HTTP %d, want 404 from MapServer 8.0", doc, resp.StatusCode)
		}
	}
}

// TestMapServerSendsNoValidators records another finding: MapServer 8.0's
// OGC API (a CGI behind lighttpd) sends neither ETag nor Last-Modified with
// its items, so a one-page collection on it keeps no validators and every
// poll fetches it whole; conditional GET is tested against the fixture
// server and lighttpd. The test fails if MapServer starts sending them.
func TestMapServerSendsNoValidators(t *testing.T) {
	base := mapServer.URL(t)
	c := ogcapi.NewClient(nil, nil, nil)
	layer, _, err := c.Prepare(t.Context(), source.Layer{Kind: "ogcapi", URL: base + "/collections/nc_sql", PageSize: 500})
	if err != nil {
		t.Fatal(err)
	}
	features := 0
	stats, err := c.Fetch(t.Context(), layer, 0, func(_ context.Context, _ source.Page, r feature.FeatureReader) error {
		for {
			if _, err := r.Next(); err == io.EOF {
				return nil
			} else if err != nil {
				return fmt.Errorf("%w", err)
			}
			features++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if stats.Pages != 1 || features != 100 {
		t.Fatalf("%d pages, %d features: want the 100 counties on one page", stats.Pages, features)
	}
	if !stats.Validators.IsZero() {
		t.Errorf("MapServer sends validators now (%+v): test conditional GET against it", stats.Validators)
	}
}
