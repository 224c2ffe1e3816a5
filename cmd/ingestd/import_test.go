package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestImportOpenAddressesValidates: `import openaddresses -o FILE` over
// real catalog files writes a config that `validate` accepts, its
// acceptance tests passing, and prints the tally.
func TestImportOpenAddressesValidates(t *testing.T) {
	out := filepath.Join(t.TempDir(), "oa.yaml")
	code, stdout, stderr := runCLI(t, "import", "openaddresses", "-o", out, "../../oaimport/testdata/sources")
	if code != 0 || stdout != "" {
		t.Fatalf("import: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "total: 11 files, 9 jurisdictions; 11 layers expressed, 1 skip: true, 1 not expressed") {
		t.Errorf("tally:\n%s", stderr)
	}
	code, stdout, stderr = runCLI(t, "validate", out)
	if code != 0 || !strings.Contains(stdout, "acceptance tests: 6 passed, 0 failed (2 feeds)") || !strings.Contains(stdout, "ok, 9 jurisdictions, 11 feeds") {
		t.Errorf("validate: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	for _, args := range [][]string{{"import"}, {"import", "openaddresses"}, {"import", "osm", "x"}} {
		if code, _, _ := runCLI(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
