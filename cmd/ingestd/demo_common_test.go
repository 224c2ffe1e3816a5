package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/wfs/wfstest"
)

// The demo's two address feeds (jurisdictions.yaml, its WFS servers swapped
// for one serving the same fixtures) conform into common.addresses: 150
// rows each, queryable as the README shows.
func TestDemoConformsAddresses(t *testing.T) {
	t.Parallel()
	server := wfstest.New()
	if err := server.LoadDir("../../testdata/feeds/raleigh"); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(server) // loopback only
	t.Cleanup(ts.Close)
	demo, err := os.ReadFile("../../jurisdictions.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.NewReplacer(
		"http://127.0.0.1:18081/geoserver/wfs", ts.URL+"/wfs",
		"http://127.0.0.1:18083/arcgis/services/wfs", ts.URL+"/wfs",
	).Replace(string(demo))
	path := filepath.Join(t.TempDir(), "jurisdictions.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	dbURL, pool := testDBFor(t, ingestdConns)
	for _, feed := range []string{"raleigh/addresses", "wake/addresses"} {
		if code, stdout, stderr := runCLI(t, "poll", "-config", path, "-database-url", dbURL, feed); code != 0 {
			t.Fatalf("poll %s: exit %d\nstdout: %s\nstderr: %s", feed, code, stdout, stderr)
		}
	}
	var n, jurisdictions, points int
	if err := pool.QueryRow(t.Context(), `SELECT count(*), count(DISTINCT jurisdiction),
		count(*) FILTER (WHERE GeometryType(geom) = 'POINT' AND ST_SRID(geom) = 4326) FROM common.addresses`).
		Scan(&n, &jurisdictions, &points); err != nil {
		t.Fatal(err)
	}
	if n != 300 || jurisdictions != 2 || points != 300 {
		t.Fatalf("common.addresses: %d rows of %d jurisdictions, %d of them points in EPSG:4326; want 300, 2, 300", n, jurisdictions, points)
	}
	// The README's query, and the first fixture feature conformed.
	rows, err := pool.Query(t.Context(), `SELECT jurisdiction, number, street, city FROM common.addresses LIMIT 5`)
	if err != nil {
		t.Fatal(err)
	}
	rows.Close()
	var number, street, unit, city, postcode string
	if err := pool.QueryRow(t.Context(), `SELECT number, street, unit, city, postcode FROM common.addresses
		WHERE jurisdiction = 'raleigh' AND feature_id = 'address.50000'`).Scan(&number, &street, &unit, &city, &postcode); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join([]string{number, street, unit, city, postcode}, "|"); got != "100|Fayetteville St|Apt 1|Raleigh|27601" {
		t.Errorf("address.50000 conformed to %q", got)
	}
}
