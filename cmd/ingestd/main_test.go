package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/migrations/pgtest"
)

func TestValidateBrokenConfigNamesFileLineAndField(t *testing.T) {
	code, _, stderr := runCLI(t, "validate", "../../testdata/configs/broken.yaml")
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{
		"testdata/configs/broken.yaml:20:19: jurisdictions[0].feeds[1].schedule: bad cron spec",
		"testdata/configs/broken.yaml:15:9: jurisdictions[0].feeds[0].typename: unknown key",
		"testdata/configs/broken.yaml:10:15: jurisdictions[0].timezone: unknown time zone",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func TestValidateDemoConfig(t *testing.T) {
	code, stdout, stderr := runCLI(t, "validate", "../../jurisdictions.yaml")
	if code != 0 || !strings.Contains(stdout, "ok, 4 jurisdictions, 6 feeds") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if stderr != "" {
		t.Errorf("the demo config has warnings:\n%s", stderr)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{}, {"frobnicate"}, {"poll"}, {"validate", "a", "b"}} {
		if code, _, _ := runCLI(t, args...); code != 2 {
			t.Errorf("ingestd %v: exit %d, want 2", args, code)
		}
	}
}

// poll is one shot: 0 when the feed landed, 1 when it did not, and the
// failure is in the database either way.
func TestPollExitStatus(t *testing.T) {
	t.Parallel()
	_, ts := fixtureOrigin(t, 25, "zoning")
	dbURL := pgtest.URLFor(t, ingestdConns)

	cfg := filepath.Join(t.TempDir(), "j.yaml")
	yaml := fmt.Sprintf(`
jurisdictions:
  - id: town
    feeds:
      - id: zoning
        kind: wfs
        url: %s/wfs
        type_name: zoning
        page_size: 10
        sort_by: pin
      - id: missing
        kind: wfs
        url: %s/wfs
        type_name: no_such_layer
        page_size: 10
        sort_by: pin
`, ts.URL, ts.URL)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	common := []string{"-config", cfg, "-database-url", dbURL}

	code, stdout, stderr := runCLI(t, append(append([]string{"poll"}, common...), "town/zoning")...)
	if code != 0 || !strings.Contains(stdout, "town/zoning: poll 1 ok: 25 features (25 added") {
		t.Fatalf("poll town/zoning: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}

	code, _, stderr = runCLI(t, append(append([]string{"poll"}, common...), "town/missing")...)
	if code != 1 {
		t.Fatalf("poll of an unknown layer: exit %d, want 1\nstderr: %s", code, stderr)
	}
	if !strings.Contains(stderr, "town/missing") || !strings.Contains(stderr, "no_such_layer") {
		t.Errorf("the error does not name the feed and the layer:\n%s", stderr)
	}

	code, _, stderr = runCLI(t, append(append([]string{"poll"}, common...), "town/nope")...)
	if code != 2 || !strings.Contains(stderr, `no feed "town/nope"`) {
		t.Errorf("poll of an unconfigured feed: exit %d\n%s", code, stderr)
	}

	// status shows the failing feed with its error, and the origin's breaker.
	code, stdout, stderr = runCLI(t, "status", "-database-url", dbURL)
	if code != 0 {
		t.Fatalf("status: exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"town/missing  failing", "no_such_layer", "feeds: 1 failing 1 fresh", ts.URL + "  closed"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("status output lacks %q:\n%s", want, stdout)
		}
	}
}
