package breaker_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The breaker core, and every protocol package above it, imports no
// database client and no metrics client: those live in breaker/pgshare and
// breaker/breakermetrics, which main wires in.
func TestCoreImportsNoDatabaseOrMetricsClient(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	forbidden := []string{"github.com/jackc/pgx", "github.com/prometheus/client_golang"}
	pkgs := []string{".", "../httpcall", "../wfs", "../arcgis", "../ogcapi"}
	out, err := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 || !slices.Contains(deps, "github.com/ingestd/ingestd/breaker") {
		t.Fatalf("go list -deps listed no breaker package: %q", out)
	}
	for _, d := range deps {
		for _, f := range forbidden {
			if strings.HasPrefix(d, f) {
				t.Errorf("%s is among the dependencies of %v", d, pkgs)
			}
		}
	}
}
