package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestChangesCommand: `ingestd changes -since POLL` prints the changes of
// the polls after POLL as GeoJSON Features, one a line, with the change
// and both versions' properties; the config's history retention reaches
// feed_status. With -common, the changes of the feed's common-layer rows.
func TestChangesCommand(t *testing.T) {
	t.Parallel()
	bin := buildIngestd(t)
	dbURL, pool := testDB(t)
	server, ts := fixtureOrigin(t, 0)
	server.AddLayer("parcels", parcelsWithValue(5, func(i int) any { return i }))
	cfg := filepath.Join(t.TempDir(), "j.yaml")
	yaml := fmt.Sprintf(`
jurisdictions:
  - id: wake
    history: {keep: forever}
    feeds:
      - {id: parcels, kind: wfs, url: %q, type_name: parcels, page_size: 0, id_property: pin,
         conform: {layer: addresses, number: value}}
`, ts.URL+"/wfs")
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := runBin(t, bin, "poll", "-config", cfg, "-database-url", dbURL, "wake/parcels"); code != 0 {
		t.Fatalf("first poll: %s", out)
	}
	first := queryInt(t, pool, `SELECT max(id)::int FROM polls`)
	if n := queryInt(t, pool, `SELECT count(*)::int FROM feed_status WHERE history_keep IS NULL`); n != 1 {
		t.Fatalf("history: {keep: forever} did not reach feed_status (%d rows keep forever)", n)
	}
	// 0004 gets a new value; 0003 goes.
	next := parcelsWithValue(5, func(i int) any {
		if i == 4 {
			return 40
		}
		return i
	})
	server.AddLayer("parcels", append(next[:3:3], next[4]))
	if code, out := runBin(t, bin, "poll", "-config", cfg, "-database-url", dbURL, "wake/parcels"); code != 0 {
		t.Fatalf("second poll: %s", out)
	}
	code, out := runBin(t, bin, "changes", "-database-url", dbURL, "-since", strconv.Itoa(first), "wake/parcels")
	if code != 0 {
		t.Fatalf("changes: exit %d:\n%s", code, out)
	}
	type change struct {
		Type       string
		ID         string
		Geometry   json.RawMessage
		Properties struct {
			Change   string
			Old, New map[string]any
		}
	}
	var got []change
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var c change
		if json.Unmarshal([]byte(line), &c) == nil && c.Type == "Feature" {
			got = append(got, c)
		}
	}
	if len(got) != 2 {
		t.Fatalf("%d changes printed, want 2:\n%s", len(got), out)
	}
	if c := got[0]; c.ID != "0003" || c.Properties.Change != "removed" || c.Properties.Old["value"] != 3.0 || c.Properties.New != nil || len(c.Geometry) == 0 {
		t.Errorf("first change %+v, want 0003 removed with its old value 3", c)
	}
	if c := got[1]; c.ID != "0004" || c.Properties.Change != "modified" || c.Properties.Old["value"] != 4.0 || c.Properties.New["value"] != 40.0 {
		t.Errorf("second change %+v, want 0004 modified from 4 to 40", c)
	}
	code, out = runBin(t, bin, "changes", "-common", "-database-url", dbURL, "-since", strconv.Itoa(first), "wake/parcels")
	var common []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var c struct {
			Type, ID   string
			Properties struct {
				Change, Layer string
				Old, New      map[string]any
			}
		}
		if json.Unmarshal([]byte(line), &c) == nil && c.Type == "Feature" {
			common = append(common, fmt.Sprintf("%s %s %s %v→%v", c.ID, c.Properties.Change, c.Properties.Layer,
				c.Properties.Old["number"], c.Properties.New["number"]))
		}
	}
	if want := []string{"0003 removed addresses 3→<nil>", "0004 modified addresses 4→40"}; code != 0 || !slices.Equal(common, want) {
		t.Errorf("changes -common: exit %d, %q, want %q:\n%s", code, common, want, out)
	}
	if code, out := runBin(t, bin, "changes", "-database-url", dbURL, "wake/parcels"); code != 2 || !strings.Contains(out, "-since") {
		t.Errorf("changes without -since: exit %d, want 2 and a usage error naming -since:\n%s", code, out)
	}
}
