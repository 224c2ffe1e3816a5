package main

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/migrations/pgtest"
	"github.com/ingestd/ingestd/ogcapi/ogcapitest"
)

// `ingestd poll` of kind ogcapi through the command's own wiring: a good
// collection lands (exit 0), one whose server ignores offset fails naming
// the repeated page (exit 1).
func TestPollOGCAPI(t *testing.T) {
	t.Parallel()
	api := ogcapitest.New()
	api.Add("zoning", ogcapitest.Collection{Layer: layertest.Parcels{N: 25}})
	api.Add("broken", ogcapitest.Collection{Layer: layertest.Parcels{N: 25}, Pitfall: ogcapitest.OffsetIgnored})
	ts := httptest.NewServer(api)
	t.Cleanup(ts.Close)
	dbURL := pgtest.URLFor(t, ingestdConns)
	cfg := filepath.Join(t.TempDir(), "j.yaml")
	yaml := fmt.Sprintf(`
jurisdictions:
  - id: town
    feeds:
      - id: zoning
        kind: ogcapi
        url: %[1]s/collections/zoning
        page_size: 10
      - id: broken
        kind: ogcapi
        url: %[1]s
        collection: broken
        page_size: 10
`, ts.URL)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	common := []string{"poll", "-config", cfg, "-database-url", dbURL}
	code, stdout, stderr := runCLI(t, append(common, "town/zoning")...)
	if code != 0 || !strings.Contains(stdout, "town/zoning: poll 1 ok: 25 features (25 added") {
		t.Fatalf("poll town/zoning: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	code, _, stderr = runCLI(t, append(common, "town/broken")...)
	if code != 1 || !strings.Contains(stderr, "town/broken") || !strings.Contains(stderr, "page 1 repeats page 0") {
		t.Fatalf("poll town/broken: exit %d, want 1 naming the repeated page\nstderr: %s", code, stderr)
	}
}
