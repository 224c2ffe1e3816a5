package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const conformTestsYAML = `jurisdictions:
  - id: wake
    feeds:
      - id: addresses
        kind: geojson
        url: "http://127.0.0.1:1/a.geojson"
        conform:
          layer: addresses
          number: ST_NUM
          street: [DIR_PREFIX, ST_NAME, ST_TYPE]
        tests:
          - description: with a prefix
            inputs: {ST_NUM: 12, DIR_PREFIX: N, ST_NAME: MAIN, ST_TYPE: ST}
            expected: {number: "12", street: N MAIN ST}
          - description: the prefix forgotten
            inputs: {ST_NUM: 7, ST_NAME: MAIN, ST_TYPE: ST}
            expected: {number: "7", street: N MAIN ST}
`

// TestValidateRunsConformTests: validate runs a feed's tests:, prints one
// line per failing column in the documented shape and a summary, and
// exits 1 on a failure, 0 once it passes.
func TestValidateRunsConformTests(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(conformTestsYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "validate", path)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	want := path + `:15: wake/addresses: test 2 "the prefix forgotten": street: got "MAIN ST", want "N MAIN ST"` + "\n"
	if stderr != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr, want)
	}
	if !strings.Contains(stdout, "acceptance tests: 1 passed, 1 failed (1 feeds)") || strings.Contains(stdout, ": ok,") {
		t.Errorf("stdout: %s", stdout)
	}

	fixed := strings.Replace(conformTestsYAML, "inputs: {ST_NUM: 7, ST_NAME", "inputs: {ST_NUM: 7, DIR_PREFIX: N, ST_NAME", 1)
	if err := os.WriteFile(path, []byte(fixed), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runCLI(t, "validate", path)
	if code != 0 || stderr != "" || !strings.Contains(stdout, "acceptance tests: 2 passed, 0 failed (1 feeds)") || !strings.Contains(stdout, "ok, 1 jurisdictions, 1 feeds") {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}
