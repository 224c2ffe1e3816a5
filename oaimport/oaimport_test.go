package oaimport_test

import (
	"strings"
	"testing"

	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/conform"
	"github.com/ingestd/ingestd/oaimport"
)

// importTestdata imports testdata/sources and parses the result as the
// daemon would.
func importTestdata(t *testing.T) (string, *oaimport.Tally, *config.Config) {
	t.Helper()
	srcs, err := oaimport.Files([]string{"testdata/sources"})
	if err != nil {
		t.Fatal(err)
	}
	out, tally, err := oaimport.Import(srcs)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("oa.yaml", out, nil)
	if err != nil {
		t.Fatalf("the import does not validate:\n%v\n%s", err, out)
	}
	return string(out), tally, cfg
}

// TestImportCatalogFiles: eleven real catalog files become a config that
// loads, each layer entry a feed of the right kind and settings or a
// comment naming why not, and the acceptance tests the reference passes
// pass while those it fails are left out with the reason.
func TestImportCatalogFiles(t *testing.T) {
	out, tally, cfg := importTestdata(t)
	if tally.Files != 11 || tally.Jurisdictions != 9 || tally.Tests != 6 || tally.LeftOut != 11 {
		t.Errorf("tally %+v", tally)
	}
	if e, s, n := tally.Totals(); e != 11 || s != 1 || n != 1 {
		t.Errorf("totals expressed %d, skip %d, not expressed %d", e, s, n)
	}
	wake, ok := cfg.Feed("us-nc-wake/addresses-county")
	if !ok || wake.Kind != "arcgis" || wake.Conform == nil || wake.Conform.Layer != "addresses" {
		t.Fatalf("us-nc-wake/addresses-county: %+v", wake)
	}
	got, err := wake.Conform.Conform.Apply(map[string]any{"ST_NUM": 12, "DIR_PREFIX": "N", "ST_NAME": "MAIN", "ST_TYPE": "ST", "DIR_SUFFIX": nil, "POSTAL_CITY": "RALEIGH"})
	if err != nil || got["street"] != "N MAIN ST" || got["city"] != "RALEIGH" {
		t.Errorf("wake's conform: %v %v", got, err)
	}
	if j := cfg.Jurisdictions[0]; j.ID != "at-city_of_vienna" {
		t.Errorf("first jurisdiction %q", j.ID)
	}
	for _, j := range cfg.Jurisdictions {
		if j.ID == "us-nc-wake" && j.Name != "Wake County, North Carolina" {
			t.Errorf("wake's name %q", j.Name)
		}
	}
	ran := 0
	for _, f := range cfg.Feeds() {
		if f.Conform == nil {
			t.Errorf("%s has no conform", f.Key())
			continue
		}
		if fails := conform.RunTests(f.Conform.Conform, f.Conform.Tests); len(fails) > 0 {
			t.Errorf("%s: %v", f.Key(), fails)
		}
		ran += len(f.Conform.Tests)
	}
	if ran != 6 {
		t.Errorf("%d acceptance tests in the config, want 6", ran)
	}
	for _, want := range []string{
		"separator: ;\n",
		"  # addresses/county: skip: true in the catalog (Geocortex server)\n",
		"  # addresses/county: not expressed: no conform\n",
		`  # addresses/county: acceptance test 1 "c50b293-1" left out: its inputs name field SITUS as situs, which the reference implementation fails too`,
		`  # addresses/county: acceptance test 11 "No zip" left out: its inputs lack field parcel_number, which the conform names, which the reference implementation fails too`,
		"kind: file\n        url: ",
		"format: filegdb",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the config lacks %q", want)
		}
	}
	if sioux, ok := cfg.Feed("us-ia-sioux/addresses-county"); !ok || sioux.Kind != "file" || sioux.URL != "ftp://ftp.igsb.uiowa.edu/gis_library/counties/Sioux/Address_84.zip" {
		t.Errorf("us-ia-sioux/addresses-county, an ftp:// download: %+v", sioux)
	}
	if !strings.Contains(tally.String(), "http csv+gzip          expressed     1\n") || !strings.Contains(tally.String(), "ftp shapefile+zip      expressed     1\n") {
		t.Errorf("tally:\n%s", tally)
	}
}

// TestImportFileSettings: a download's reading options become kind file's
// settings: lat/lon → y/x, srs → crs, a Shapefile's file → layer.
func TestImportFileSettings(t *testing.T) {
	out, _, _ := importTestdata(t)
	for _, want := range []string{
		"format: csv\n        x: ",
		"crs: EPSG:",
		"format: shapefile\n        layer: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the config lacks %q", want)
		}
	}
}

// TestImportDeterministic: the same files give the same config, schedules
// included (weekly, spread by a hash of the feed's key).
func TestImportDeterministic(t *testing.T) {
	a, _, cfg := importTestdata(t)
	b, _, _ := importTestdata(t)
	if a != b {
		t.Fatal("two imports of the same files differ")
	}
	seen := map[string]bool{}
	for _, f := range cfg.Feeds() {
		if !strings.HasSuffix(f.Schedule, "* * "+f.Schedule[len(f.Schedule)-1:]) || len(strings.Fields(f.Schedule)) != 5 {
			t.Errorf("%s: schedule %q is not weekly", f.Key(), f.Schedule)
		}
		seen[f.Schedule] = true
	}
	if len(seen) < len(cfg.Feeds())-1 {
		t.Errorf("schedules not spread: %d distinct of %d", len(seen), len(cfg.Feeds()))
	}
}

func TestSourceID(t *testing.T) {
	for in, want := range map[string]string{
		"/x/sources/us/nc/wake.json":             "us-nc-wake",
		"sources/us/ca/San Francisco.json":       "us-ca-san-francisco",
		"wake.json":                              "wake",
		"/x/sources/us/ny/city_of_new_york.json": "us-ny-city_of_new_york",
	} {
		if got := oaimport.SourceID(in); got != want {
			t.Errorf("SourceID(%q) = %q, want %q", in, got, want)
		}
	}
}
