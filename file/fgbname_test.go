package file_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/file"
	"github.com/ingestd/ingestd/internal/gdaltest"
)

// TestFlatGeobufWithoutName: a FlatGeobuf whose header names no layer
// (GDAL writes one so with -nln "") takes the downloaded file's name, as
// a CSV or GeoJSON file does: layer: parcels reads it, and a layer: it
// does not have is refused naming that name, never the kind's temporary
// file.
func TestFlatGeobufWithoutName(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "p.geojson")
	if err := os.WriteFile(src, []byte(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"n":1},"geometry":{"type":"Point","coordinates":[-78.6,35.7]}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fgb := filepath.Join(dir, "noname.fgb")
	gdaltest.OGR2OGR(t, "-f", "FlatGeobuf", fgb, src, "-nln", "")
	body, err := os.ReadFile(fgb)
	if err != nil {
		t.Fatal(err)
	}
	srv := serveFiles(t, map[string]string{"parcels.fgb": string(body)})
	tmp := t.TempDir()
	c := file.NewClient(srv.Client(), nil, nil, file.WithTempDir(tmp))
	var col collect
	if _, err := c.Fetch(t.Context(), layer(srv.URL+"/parcels.fgb", file.Settings{Layer: "parcels"}), 0, col.handle); err != nil || len(col.props) != 1 {
		t.Errorf("layer parcels: %d features, %v; want 1", len(col.props), err)
	}
	_, err = c.Fetch(t.Context(), layer(srv.URL+"/parcels.fgb", file.Settings{Layer: "roads"}), 0, (&collect{}).handle)
	if err == nil || strings.Contains(err.Error(), "ingestd-file-") || !strings.Contains(err.Error(), `"parcels"`) {
		t.Errorf("layer roads: %v; want refused naming the layer parcels, not a temporary file", err)
	}
	noDownloadsLeft(t, tmp)
}
