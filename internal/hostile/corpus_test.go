package hostile

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd/config"
)

// TestCorpusShape checks the corpus as data: at least 100 cases with
// feed-safe names and an expectation each, each group's cases of its
// class, at least ten cases of every kind (a failing case names its cause), every static file of
// testdata/hostile served by some case, generated bodies cut at
// MaxGenerated, the good phase a valid two-feature layer, and the rendered
// configuration accepted by ingestd's config loader.
func TestCorpusShape(t *testing.T) {
	cases := Cases()
	if len(cases) < 100 {
		t.Fatalf("%d cases, want at least 100", len(cases))
	}
	kinds := map[string]int{}
	for _, g := range Groups {
		for _, c := range g.Cases() {
			kind := c.Kind
			if kind == "" {
				kind = GeoJSON
			}
			kinds[kind]++
			if c.Class != g.Name {
				t.Errorf("case %s of group %q has class %q", c.Name, g.Name, c.Class)
			}
		}
	}
	for _, k := range []string{GeoJSON, WFS, GML, ArcGIS, OGCAPI, Socrata, File} {
		if kinds[k] < 10 {
			t.Errorf("%d cases of kind %q, want at least 10", kinds[k], k)
		}
	}
	name := regexp.MustCompile(`^[a-z0-9_-]+$`)
	for _, c := range cases {
		if !name.MatchString(c.Name) || c.Respond == nil || c.Class == "" {
			t.Errorf("case %q: bad name, no responder or no class", c.Name)
		}
		if !c.Load && len(c.Errors) == 0 {
			t.Errorf("case %s fails but names no expected cause", c.Name)
		}
		if c.Load && c.Features <= 0 {
			t.Errorf("case %s loads but says how many features it leaves: %d", c.Name, c.Features)
		}
		var obj map[string]any
		if c.Contains != "" && (!c.Load || json.Unmarshal([]byte(c.Contains), &obj) != nil) {
			t.Errorf("case %s: Contains %q is not a JSON object a loading case's features can hold", c.Name, c.Contains)
		}
	}
	const dir = "../../testdata/hostile"
	h, err := NewServer(dir, cases)
	if err != nil {
		t.Fatal(err)
	}
	h.MaxGenerated = 1 << 20
	ts := httptest.NewServer(h)
	defer ts.Close()
	h.SetPeer(ts.URL)

	// The good phase: every case serves the same valid layer.
	// (A minute only ends a hang: the answer is whole, however slow.)
	body := get(t, ts.URL+"/hostile/"+cases[0].Name, time.Minute)
	var fc struct{ Features []json.RawMessage }
	if err := json.Unmarshal(body, &fc); err != nil || len(fc.Features) != GoodFeatures {
		t.Fatalf("good phase: %d features, %v\n%s", len(fc.Features), err, body)
	}

	// The hostile phase: every case answers (or hangs, or resets) without
	// taking the server down, and no generated body exceeds MaxGenerated.
	h.SetHostile(true)
	for _, c := range cases {
		// A case may hang: 300ms ends it. A slow machine reads less in
		// that time, which the size check below cannot mistake for more.
		b := get(t, ts.URL+"/hostile/"+c.Name+c.urlPath()+featuresQuery[c.Kind], 300*time.Millisecond)
		// arcgistest's bombs have their own sizes (at most 100 MiB),
		// which MaxGenerated does not bound.
		if int64(len(b)) > h.MaxGenerated+64<<10 && c.Kind != ArcGIS {
			t.Errorf("case %s: %d bytes, over MaxGenerated", c.Name, len(b))
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, e := range entries {
		if !h.used[e.Name()] {
			t.Errorf("testdata/hostile/%s is served by no case", e.Name())
		}
		if info, err := e.Info(); err == nil {
			total += info.Size()
		}
	}
	if total > 1<<20 {
		t.Errorf("testdata/hostile holds %d bytes; generate large bodies instead", total)
	}

	origins := map[string]string{}
	for _, o := range Origins(cases) {
		origins[o] = ts.URL
	}
	yaml, err := Config(cases, ConfigOptions{Origins: origins})
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	path := filepath.Join(t.TempDir(), "hostile.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("the corpus config does not load: %v", err)
	}
	if n := len(cfg.Feeds()); n != len(cases) {
		t.Errorf("config has %d feeds, want %d", n, len(cases))
	}
}

// featuresQuery is the path and query, below a case's feed URL, of a
// request for its features.
var featuresQuery = map[string]string{
	ArcGIS: "/query?f=json&objectIds=1,2,3,4,5&outFields=*",
	OGCAPI: "/items?f=json&limit=2",
	// The first page, as socrata.Client asks for it.
	Socrata: "?%24select=%3Aid%2C+%3Acreated_at%2C+%3Aupdated_at%2C+%2A&%24order=%3Aid&%24limit=10&%24offset=0",
}

// get reads url's body until the server ends it or within passes; errors
// are part of the corpus (resets, malformed responses) and ignored.
func get(t *testing.T, url string, within time.Duration) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return b
}
