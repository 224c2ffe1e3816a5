package oaimport_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/conform"
	"github.com/ingestd/ingestd/oaimport"
)

// TestImportWholeCatalog imports every source file of an OpenAddresses
// checkout named by INGESTD_OA_CATALOG and checks what an operator relies on: the
// config loads, every acceptance test carried passes, and at least 95 % of
// the layers not marked skip are feeds. It logs the tally:
//
//	INGESTD_OA_CATALOG=/path/to/openaddresses go test ./oaimport -run TestImportWholeCatalog -v
func TestImportWholeCatalog(t *testing.T) {
	root := os.Getenv("INGESTD_OA_CATALOG")
	if root == "" {
		t.Skip("set INGESTD_OA_CATALOG to a checkout of openaddresses/openaddresses")
	}
	srcs, err := oaimport.Files([]string{filepath.Join(root, "sources")})
	if err != nil {
		t.Fatal(err)
	}
	out, tally, err := oaimport.Import(srcs)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", tally)
	cfg, err := config.Parse("catalog.yaml", out, nil)
	if err != nil {
		t.Fatalf("the catalog's config does not validate:\n%v", err)
	}
	passed := 0
	for _, f := range cfg.Feeds() {
		fails := conform.RunTests(f.Conform.Conform, f.Conform.Tests)
		for _, fl := range fails {
			t.Errorf("%s: %s", f.Key(), fl)
		}
		passed += len(f.Conform.Tests) - len(fails)
	}
	t.Logf("%d acceptance tests pass", passed)
	e, _, n := tally.Totals()
	if share := float64(e) / float64(e+n); share < 0.95 {
		t.Errorf("only %.1f %% of the layers not skipped are feeds (goal 95 %%)", 100*share)
	}
}
