package main

import (
	"archive/zip"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/internal/gdaltest"
	"github.com/ingestd/ingestd/internal/interoptest"
	"github.com/ingestd/ingestd/migrations/pgtest"
)

// The real servers the test command starts (scripts/mapserver.sh,
// scripts/koop.sh); under CI=true a missing one fails the test.
var (
	discoverMapServerWFS = interoptest.Server{
		What:   "MapServer WFS",
		URLEnv: "INGESTD_MAPSERVER_URL", PortEnv: "INGESTD_MAPSERVER_PORT", DefaultPort: "18180", Path: "/wfs",
		Probe: "?SERVICE=WFS&REQUEST=GetCapabilities",
		Start: "start it with `export INGESTD_MAPSERVER_URL=$(scripts/mapserver.sh)` from the repo root",
	}
	discoverMapServerOGCAPI = interoptest.Server{
		What:   "MapServer OGC API",
		URLEnv: "INGESTD_OGCAPI_URL", PortEnv: "INGESTD_MAPSERVER_PORT", DefaultPort: "18180", Path: "/cgi-bin/mapserv/nc/ogcapi",
		Probe: "/conformance?f=json",
		Start: "start it with `scripts/mapserver.sh start` and export INGESTD_OGCAPI_URL=$(scripts/mapserver.sh ogcapi-url)",
	}
	discoverKoop = interoptest.Server{
		What:   "Koop",
		URLEnv: "INGESTD_KOOP_URL", PortEnv: "INGESTD_KOOP_PORT", DefaultPort: "18182", Path: "/file-geojson/rest/services",
		Probe: "/nc_points/FeatureServer/0?f=json",
		Start: "start it with scripts/koop.sh",
	}
)

// discoverAndPoll runs the built ingestd: discover with args, validate
// what it wrote (-config), then poll every feed into a fresh database;
// wantFeeds must be among them (the servers may publish more). It returns
// discover's output.
func discoverAndPoll(t *testing.T, wantFeeds []string, args ...string) string {
	t.Helper()
	heavy(t, 1)
	bin := buildIngestd(t)
	cmd := exec.Command(bin, append([]string{"discover", "-check", "-jurisdiction", "county"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ingestd discover: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	cfgPath := filepath.Join(t.TempDir(), "discovered.yaml")
	if err := os.WriteFile(cfgPath, out, 0o600); err != nil {
		t.Fatal(err)
	}
	if v, err := exec.Command(bin, "validate", "-config", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("ingestd validate -config refuses what discover wrote: %v\n%s\n%s", err, v, out)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, f := range cfg.Feeds() {
		ids[f.ID] = true
	}
	for _, id := range wantFeeds {
		if !ids[id] {
			t.Fatalf("no feed %s:\n%s", id, out)
		}
	}
	dbURL := pgtest.URLFor(t, ingestdConns)
	for _, f := range cfg.Feeds() {
		name := f.Jurisdiction + "/" + f.ID
		p, err := exec.Command(bin, "poll", "-config", cfgPath, "-database-url", dbURL, name).CombinedOutput()
		if err != nil || !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(name)+`: poll \d+ ok: \d+ features`).Match(p) {
			t.Errorf("ingestd poll %s: %v\n%s\nconfig:\n%s", name, err, p, out)
		}
	}
	return string(out)
}

// discover against MapServer's WFS 2.0: its feature types, each polled.
func TestDiscoverMapServerWFS(t *testing.T) {
	t.Parallel()
	out := discoverAndPoll(t, []string{"nc", "nc_sql"}, discoverMapServerWFS.URL(t))
	for _, want := range []string{"ms:nc: any geometry", "100 features (resultType=hits)", "type_name: ms:nc_sql", "version: 2.0.0"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// discover against MapServer's OGC API landing page: its collections,
// counted by numberMatched, each polled (MapServer 8.0 ignores the offset
// of nc's next links (MapServer#6613, an upstream bug): -check warns of it, so nc's feed is written
// commented out, though one page holds it).
func TestDiscoverMapServerOGCAPI(t *testing.T) {
	t.Parallel()
	out := discoverAndPoll(t, []string{"nc_sql"}, discoverMapServerOGCAPI.URL(t))
	for _, want := range []string{"nc: Polygon, 100 features (numberMatched)", "/collections/nc_sql", "id: the feature id (GeoJSON id)",
		"check paging: WARNING: its next link serves page 1 again", "#      - id: nc\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// discover against Koop: its file-geojson provider serves no services
// directory (…/rest/services answers 404), which discover reports by name
// and exit status; its services, given one by one, are walked to their
// layers and each layer polled.
func TestDiscoverKoop(t *testing.T) {
	t.Parallel()
	root := discoverKoop.URL(t)
	code, stdout, stderr := runCLI(t, "discover", root)
	if code != 1 || !strings.Contains(stderr, "not a services directory?") || strings.Contains(stdout, "jurisdictions:") {
		t.Errorf("discover %s: exit %d, want 1 naming a missing directory\nstdout:\n%s\nstderr:\n%s", root, code, stdout, stderr)
	}
	var services []string
	for _, s := range []string{"nc_points", "nc_counties", "nc_boundaries"} {
		services = append(services, fmt.Sprintf("%s/%s/FeatureServer", root, s))
	}
	out := discoverAndPoll(t, []string{"nc_points", "nc_counties", "nc_boundaries"}, services...)
	for _, want := range []string{"nc_points/FeatureServer/nc_points: Point, 100 features (returnCountOnly)", "id: OBJECTID (the layer's objectIdField)",
		"url: " + root + "/nc_counties/FeatureServer/0"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// validate takes -config like every other command; the positional form
// still works, and both at once is a usage error.
func TestValidateConfigFlag(t *testing.T) {
	code, stdout, stderr := runCLI(t, "validate", "-config", "../../jurisdictions.yaml")
	if code != 0 || !strings.Contains(stdout, "../../jurisdictions.yaml: ok, 4 jurisdictions") {
		t.Errorf("validate -config: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	code, _, stderr = runCLI(t, "validate", "-config", "../../testdata/configs/broken.yaml")
	if code != 1 || !strings.Contains(stderr, "testdata/configs/broken.yaml:20:19: jurisdictions[0].feeds[1].schedule: bad cron spec") {
		t.Errorf("validate -config broken.yaml: exit %d, want 1 naming the error\nstderr: %s", code, stderr)
	}
	for _, args := range [][]string{
		{"validate", "-config", "../../jurisdictions.yaml", "../../jurisdictions.yaml"},
		{"discover"}, {"discover", "-filter", "(", "http://127.0.0.1:1/wfs"}, {"discover", "-kind", "wms", "http://127.0.0.1:1/wfs"},
	} {
		if code, _, stderr := runCLI(t, args...); code != 2 {
			t.Errorf("ingestd %v: exit %d, want 2\nstderr: %s", args, code, stderr)
		}
	}
}

// discover of downloadable files: a GeoPackage's two tables and a zip's two
// Shapefiles (in a folder) become kind: file feeds with their layer:, and
// each polls, so the names discover writes are those a poll reads.
func TestDiscoverFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := gdaltest.Parcels(t, dir, 7, "GeoJSON", "parcels.geojson")
	gdaltest.OGR2OGR(t, "-f", "GPKG", filepath.Join(dir, "county.gpkg"), src, "-nln", "roads")
	gdaltest.OGR2OGR(t, "-update", filepath.Join(dir, "county.gpkg"), src, "-nln", "zoning")
	zipDir := filepath.Join(dir, "zip")
	if err := os.MkdirAll(filepath.Join(zipDir, "county"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"hydrants", "parks"} {
		gdaltest.OGR2OGR(t, "-f", "ESRI Shapefile", filepath.Join(zipDir, "county", name+".shp"), src, "-nln", name)
	}
	zipFolder(t, filepath.Join(dir, "county.zip"), zipDir)
	ts := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(ts.Close)
	out := discoverAndPoll(t, []string{"roads", "zoning", "hydrants", "parks"}, ts.URL+"/county.gpkg", ts.URL+"/county.zip")
	for _, want := range []string{"layer: roads", "layer: parks"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// zipFolder zips the files under root into path, named by their path under root.
func zipFolder(t *testing.T, path, root string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	err = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		w, err := zw.Create(filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	})
	if err := errors.Join(err, zw.Close(), f.Close()); err != nil {
		t.Fatal(err)
	}
}
