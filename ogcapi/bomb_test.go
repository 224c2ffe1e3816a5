package ogcapi_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/ogcapi"
	"github.com/ingestd/ingestd/ogcapi/ogcapitest"
	"github.com/ingestd/ingestd/source"
)

// maxBombRSS is the peak RSS (KB) a poll may reach on any document the
// fixture inflates from a few KB of gzip, with default limits.
const maxBombRSS = 256 << 10

// bombEnv hands the child process the fixture's URL.
const bombEnv = "INGESTD_OGCAPI_BOMB_URL"

// bombResult is what the child reports of its Prepare and Fetch.
type bombResult struct {
	Warnings []string `json:"warnings"`
	Error    string   `json:"error"`
	Features int      `json:"features"`
}

// TestDocumentBombsPeakRSS: each document around the items (OpenAPI,
// collection, landing page, conformance, schema, an items page's links),
// served as a gzip body of about 20 KB that inflates to 15–20 MB of JSON
// shaped to cost most when kept whole, is read within its own bound or
// refused by name, and the poll (Prepare and Fetch, in a process of its
// own so that its peak RSS is its own) stays under 256 MB. A 15 MB OpenAPI
// document decoded whole into maps took 766 MB.
//
// Run with -v to see each case's peak RSS.
func TestDocumentBombsPeakRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a process per case")
	}
	const items = `{"href":"/collections/parcels/items?f=json","rel":"items","type":"application/geo+json"}`
	cases := []struct {
		name, path, head, unit, tail string
		size                         int
		// want is in the child's error, or else in its warnings; features
		// is how many it fetched (-1: it failed).
		want     string
		features int
	}{
		{"openapi", "/openapi", `{"openapi":"3.0.2","paths":{"/collections/{collectionId}/items":{"get":{"parameters":[`, `{"a":0},`,
			`{"name":"limit","in":"query","schema":{"type":"integer","maximum":77}}]}}}}`, 15 << 20,
			"page_size 100 is above the server's maximum limit 77", 250},
		{"openapi over its bound", "/openapi", `{"openapi":"3.0.2","x":[`, `{"a":0},`, `{}]}`, 20 << 20,
			"no OpenAPI document (the OpenAPI document at http://", 250},
		{"openapi nested", "/openapi", `{"openapi":"3.0.2","x":`, `[`, ``, 15 << 20,
			"the OpenAPI document at http://", 250},
		{"collection", "/collections/parcels", `{"id":"parcels","itemType":"feature","links":[`, `{},`, items + `]}`, 15 << 20,
			"the collection document at http://", -1},
		{"collection within its bound", "/collections/parcels", `{"id":"parcels","itemType":"feature","links":[`, `{},`, items + `]}`, 3 << 20,
			"", 250},
		{"collection crs", "/collections/parcels", `{"id":"parcels","itemType":"feature","links":[` + items + `],"crs":[`, `"",`, `""]}`, 15 << 20,
			"the collection document at http://", -1},
		{"landing page", "/", `{"links":[`, `{},`, `{"href":"/openapi","rel":"service-desc"}]}`, 15 << 20,
			"no landing page (the landing page at http://", 250},
		{"conformance", "/conformance", `{"conformsTo":[`, `"",`, `""]}`, 15 << 20,
			"ogcapi: reading the conformance classes: the conformance document at http://", -1},
		{"schema", "/collections/parcels/schema", `{"type":"object","properties":{"a":{"type":"string"},"x":[`, `{},`, `{}]}}`, 15 << 20,
			"the collection's schema could not be read", 250},
		{"items links", "/collections/parcels/items", `{"type":"FeatureCollection","features":[],"links":[`, `{},`,
			`{"href":"/x","rel":"self"}],"numberMatched":0,"numberReturned":0}`, 15 << 20,
			"", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := ogcapitest.New()
			s.Add("parcels", ogcapitest.Collection{Layer: layertest.Parcels{N: 250},
				Schema: ogcapitest.JSONSchema(nil, "geometry-polygon")})
			s.Bomb(c.path, c.head, c.unit, c.tail, c.size)
			srv := httptest.NewServer(s)
			defer srv.Close()
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestBombChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), bombEnv+"="+srv.URL)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KB on Linux
			_, line, ok := strings.Cut(string(out), "BOMB-RESULT: ")
			var res bombResult
			if !ok || json.Unmarshal([]byte(strings.SplitN(line, "\n", 2)[0]), &res) != nil {
				t.Fatalf("child said:\n%s", out)
			}
			t.Logf("%s: %.1f MB decoded from %d KB of gzip: peak RSS %d MB; error %q; %d features", c.name,
				float64(c.size)/(1<<20), s.BombBytes(c.path)>>10, rss>>10, res.Error, res.Features)
			if rss > maxBombRSS {
				t.Errorf("peak RSS %d MB, want at most %d MB", rss>>10, maxBombRSS>>10)
			}
			got := res.Error
			if c.features >= 0 {
				if res.Error != "" || res.Features != c.features {
					t.Fatalf("error %q, %d features; want %d features", res.Error, res.Features, c.features)
				}
				got = strings.Join(res.Warnings, "\n")
			}
			if !strings.Contains(got, c.want) {
				t.Errorf("got %q, want it to contain %q", got, c.want)
			}
		})
	}
}

// TestBombChild is TestDocumentBombsPeakRSS's child: a poll of the
// fixture its parent started, reported on stdout.
func TestBombChild(t *testing.T) {
	base := os.Getenv(bombEnv)
	if base == "" {
		t.Skip("run by TestDocumentBombsPeakRSS")
	}
	var res bombResult
	c := ogcapi.NewClient(nil, nil, nil)
	layer, warnings, err := c.Prepare(t.Context(), source.Layer{Kind: "ogcapi", URL: base + "/collections/parcels", PageSize: 100, DescribeSchema: true})
	res.Warnings = warnings
	if err == nil {
		col := &collect{}
		var stats source.FetchStats
		stats, err = c.Fetch(t.Context(), layer, 0, col.handle)
		res.Warnings = append(res.Warnings, stats.Warnings...)
		res.Features = col.total()
	}
	if err != nil {
		res.Error, res.Features = err.Error(), -1
	}
	out, _ := json.Marshal(res)
	fmt.Printf("BOMB-RESULT: %s\n", out)
}
