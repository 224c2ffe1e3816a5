package interop_test

import (
	"net/http"
	"testing"

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
	if layer.SchemaURL != "" {
		t.Errorf("MapServer links a schema now (%s: %s): test the adapter against it", layer.SchemaOrigin, layer.SchemaURL)
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
