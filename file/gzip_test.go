package file_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/file"
)

func gzipped(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestGzipFile: a gzip-compressed CSV or GeoJSON served as it is (no
// Content-Encoding; OpenAddresses' compression: gzip) is read as the file
// it holds, a CSV known by its name without .gz, even when it
// uncompresses to fewer bytes than its Content-Length; a cut one and one
// that uncompresses past limits.body_bytes fail; no download is left.
func TestGzipFile(t *testing.T) {
	t.Parallel()
	csv := "id,lon,lat,addr\n1,-78.6,35.7,12 MAIN ST\n2,-78.7,35.8,\n"
	gj := `{"type":"FeatureCollection","features":[{"type":"Feature","id":1,"properties":{"a":"x"},"geometry":{"type":"Point","coordinates":[1,2]}}]}`
	whole := gzipped(t, csv)
	srv := serveFiles(t, map[string]string{
		"a.csv.gz":     whole,
		"b.geojson.gz": gzipped(t, gj),
		"cut.csv.gz":   whole[:len(whole)-6],
		"big.csv.gz":   gzipped(t, csv+strings.Repeat("3,1,2,x\n", 20000)),
	})
	if len(whole) <= len(csv) {
		t.Fatalf("the fixture must uncompress to fewer bytes than it has: %d, %d", len(whole), len(csv))
	}
	dir := t.TempDir()
	c := file.NewClient(srv.Client(), nil, nil, file.WithTempDir(dir))
	for _, tc := range []struct {
		file string
		s    file.Settings
		n    int
	}{
		{"a.csv.gz", file.Settings{X: "lon", Y: "lat"}, 2},
		{"a.csv.gz", file.Settings{Format: "csv", X: "lon", Y: "lat"}, 2},
		{"b.geojson.gz", file.Settings{}, 1},
	} {
		var col collect
		if _, err := c.Fetch(t.Context(), layer(srv.URL+"/"+tc.file, tc.s), 0, col.handle); err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if len(col.props) != tc.n || col.geoms[0] == nil {
			t.Errorf("%s: %d features %v", tc.file, len(col.props), col.props)
		}
	}
	var col collect
	if _, err := c.Fetch(t.Context(), layer(srv.URL+"/cut.csv.gz", file.Settings{X: "lon", Y: "lat"}), 0, col.handle); err == nil {
		t.Errorf("a cut gzip file read without error: %v", col.props)
	} else {
		t.Logf("cut: %v", err)
	}
	l := layer(srv.URL+"/big.csv.gz", file.Settings{X: "lon", Y: "lat"})
	l.Limits = feature.Limits{BodyBytes: 10000}.WithDefaults()
	_, err := c.Fetch(t.Context(), l, 0, col.handle)
	var le *feature.LimitError
	if !errors.As(err, &le) || le.Name != "body_bytes" {
		t.Errorf("big: %v", err)
	}
	noDownloadsLeft(t, dir)
}
