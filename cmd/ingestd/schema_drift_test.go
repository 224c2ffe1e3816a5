package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/internal/layertest"
)

// parcelsWithValue is a layer of n parcels whose "value" is value(i).
func parcelsWithValue(n int, value func(i int) any) layertest.Features {
	var fs layertest.Features
	for i := range n {
		g := json.RawMessage(fmt.Sprintf(`{"type":"Point","coordinates":[-78.6%d,35.7]}`, i))
		fs = append(fs, layertest.MarshalFeature(fmt.Sprintf("p%d", i), g, map[string]any{"pin": fmt.Sprintf("%04d", i), "value": value(i)}))
	}
	return fs
}

// TestSchemaDriftHeldUntilAccepted: under schema_change: hold, a poll
// whose layer retyped a column ends held, naming the column; `held list`
// shows it; the typed view and the features stay as they were until
// `ingestd held accept`, after which the view has the new type and
// schema_changes says accepted.
func TestSchemaDriftHeldUntilAccepted(t *testing.T) {
	t.Parallel()
	bin := buildIngestd(t)
	dbURL, pool := testDB(t)
	server, ts := fixtureOrigin(t, 0)
	server.AddLayer("parcels", parcelsWithValue(10, func(i int) any { return 1000 * i }))
	cfg := filepath.Join(t.TempDir(), "j.yaml")
	yaml := fmt.Sprintf(`
defaults:
  schema_change: hold
jurisdictions:
  - id: wake
    feeds:
      - {id: parcels, kind: wfs, url: %q, type_name: parcels, page_size: 0, id_property: pin}
`, ts.URL+"/wfs")
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := runBin(t, bin, "poll", "-config", cfg, "-database-url", dbURL, "wake/parcels"); code != 0 {
		t.Fatalf("first poll: %s", out)
	}
	valueType := func() string {
		var s string
		if err := pool.QueryRow(t.Context(), `SELECT format_type(atttypid, atttypmod) FROM pg_attribute
			WHERE attrelid = ingestd_feed_view('wake', 'parcels')::regclass AND attname = 'value'`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if got := valueType(); got != "bigint" {
		t.Fatalf("value is %s, want bigint", got)
	}

	server.AddLayer("parcels", parcelsWithValue(10, func(i int) any { return fmt.Sprintf("$%d", 1000*i) }))
	code, out := runBin(t, bin, "poll", "-config", cfg, "-database-url", dbURL, "wake/parcels")
	if code == 0 || !strings.Contains(out, `schema: \"value\" retyped bigint → text`) {
		t.Fatalf("retyped poll: exit %d, want it held naming the column:\n%s", code, out)
	}
	if !strings.Contains(out, `"msg":"schema changed"`) {
		t.Errorf("no schema changed event in the log:\n%s", out)
	}
	if code, out := runBin(t, bin, "held", "list", "-database-url", dbURL); code != 0 || !strings.Contains(out, `"value" retyped`) {
		t.Errorf("held list: exit %d:\n%s", code, out)
	}
	if got := valueType(); got != "bigint" {
		t.Errorf("held snapshot changed the view: value is %s", got)
	}
	if n := queryInt(t, pool, `SELECT count(*)::int FROM features WHERE properties->>'value' LIKE '$%'`); n != 0 {
		t.Errorf("held snapshot wrote %d features", n)
	}

	if code, out := runBin(t, bin, "held", "accept", "-database-url", dbURL, "wake/parcels"); code != 0 {
		t.Fatalf("held accept: %s", out)
	}
	if got := valueType(); got != "text" {
		t.Errorf("after accept: value is %s, want text", got)
	}
	if n := queryInt(t, pool, `SELECT count(*)::int FROM schema_changes WHERE column_name = 'value' AND change = 'retyped'
		AND old_type = 'bigint' AND new_type = 'text' AND action = 'accepted'`); n != 1 {
		t.Errorf("schema_changes: %d accepted retypes of value", n)
	}
}
