package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHeldAcceptConformsCommonRows: `ingestd held accept` reads the feed's
// conform from -config and its common rows follow the accepted snapshot at
// once; with a configuration that does not load it says so and the rows
// catch up at the next poll.
func TestHeldAcceptConformsCommonRows(t *testing.T) {
	t.Parallel()
	bin := buildIngestd(t)
	dbURL, pool := testDB(t)
	server, ts := fixtureOrigin(t, 0)
	server.AddLayer("parcels", parcelsWithValue(6, func(i int) any { return i }))
	cfg := filepath.Join(t.TempDir(), "j.yaml")
	yaml := fmt.Sprintf(`
jurisdictions:
  - id: wake
    feeds:
      - {id: parcels, kind: wfs, url: %q, type_name: parcels, page_size: 0, id_property: pin,
         conform: {layer: addresses, number: value}}
`, ts.URL+"/wfs")
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	poll := func(want int) {
		t.Helper()
		if code, out := runBin(t, bin, "poll", "-config", cfg, "-database-url", dbURL, "wake/parcels"); code != want {
			t.Fatalf("poll: exit %d, want %d:\n%s", code, want, out)
		}
	}
	// rows is the feed's common rows, "id=number" in id order.
	rows := func() string {
		t.Helper()
		var s string
		if err := pool.QueryRow(t.Context(), `SELECT coalesce(string_agg(feature_id || '=' || number, ',' ORDER BY feature_id), '')
			FROM common.addresses WHERE jurisdiction = 'wake' AND feed = 'parcels'`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	poll(0)

	// Five of six gone, one modified: held as a shrink, accepted with the
	// configuration at hand.
	shrunk := parcelsWithValue(6, func(i int) any { return 10 * i })
	server.AddLayer("parcels", shrunk[1:2])
	poll(1)
	if code, out := runBin(t, bin, "held", "accept", "-config", cfg, "-database-url", dbURL, "wake/parcels"); code != 0 {
		t.Fatalf("held accept: exit %d:\n%s", code, out)
	}
	if got := rows(); got != "0001=10" {
		t.Errorf("after the accept with -config: common rows %q, want 0001=10", got)
	}

	// Again without a configuration that loads: the rows are stale until
	// the next poll, and the command says so.
	server.AddLayer("parcels", parcelsWithValue(6, func(i int) any { return 100 * i }))
	poll(0)
	server.AddLayer("parcels", parcelsWithValue(6, func(i int) any { return 7 })[2:3])
	poll(1)
	code, out := runBin(t, bin, "held", "accept", "-config", filepath.Join(t.TempDir(), "missing.yaml"), "-database-url", dbURL, "wake/parcels")
	if code != 0 || !strings.Contains(out, "wake/parcels's common-layer rows are conformed again at its next applied poll") {
		t.Fatalf("held accept without a configuration: exit %d:\n%s", code, out)
	}
	if got := rows(); got != "0002=200" {
		t.Errorf("after the accept without a configuration: common rows %q, want 0002's stale 0002=200", got)
	}
	poll(0)
	if got := rows(); got != "0002=7" {
		t.Errorf("after the next poll: common rows %q, want 0002=7", got)
	}
}
