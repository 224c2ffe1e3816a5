package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd/config"
)

const historyYAML = `
defaults:
  history: {keep: 30d}
jurisdictions:
  - id: wake
    history: {keep: forever}
    feeds:
      - {id: parcels, kind: geojson, url: "http://127.0.0.1:1/p.geojson"}
      - {id: zoning, kind: geojson, url: "http://127.0.0.1:1/z.geojson", history: {keep: off}}
  - id: durham
    feeds:
      - {id: parcels, kind: geojson, url: "http://127.0.0.1:1/d.geojson"}
      - {id: roads, kind: geojson, url: "http://127.0.0.1:1/r.geojson", history: {keep: 36h}}
  - id: orange
    feeds:
      - {id: parcels, kind: geojson, url: "http://127.0.0.1:1/o.geojson"}
`

// TestHistoryConfig: history: {keep: …} is inherited from the defaults and
// the jurisdiction, the nearest winning, and days, durations, forever and
// off are read.
func TestHistoryConfig(t *testing.T) {
	cfg, err := config.Parse("h.yaml", []byte(historyYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]config.History{
		"wake/parcels":   {Forever: true},
		"wake/zoning":    {Off: true},
		"durham/parcels": {Keep: 30 * 24 * time.Hour},
		"durham/roads":   {Keep: 36 * time.Hour},
		"orange/parcels": {Keep: 30 * 24 * time.Hour},
	} {
		f, ok := cfg.Feed(key)
		if !ok {
			t.Fatalf("no feed %s", key)
		}
		if f.History != want {
			t.Errorf("%s: history %+v, want %+v", key, f.History, want)
		}
	}
	none, err := config.Parse("n.yaml", []byte("jurisdictions:\n  - id: a\n    feeds:\n      - {id: b, kind: geojson, url: \"http://127.0.0.1:1/\"}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := none.Feed("a/b")
	if got := f.History.KeepMicros(); got != config.DefaultHistoryKeep.Microseconds() {
		t.Errorf("default retention %d µs, want %d", got, config.DefaultHistoryKeep.Microseconds())
	}
}

// TestHistoryConfigErrors: a bad history block names the field and what
// was wrong.
func TestHistoryConfigErrors(t *testing.T) {
	for _, tc := range []struct{ block, want string }{
		{`{keep: 0d}`, "positive number of days"},
		{`{keep: soon}`, "expected 90d, forever, off or a duration"},
		{`{keep: 30}`, "no unit"},
		{`{forever: true}`, "expected {keep: 90d}"},
		{`off`, "expected {keep: 90d}"},
	} {
		yaml := "jurisdictions:\n  - id: a\n    feeds:\n      - {id: b, kind: geojson, url: \"http://127.0.0.1:1/\", history: " + tc.block + "}\n"
		_, err := config.Parse("e.yaml", []byte(yaml), nil)
		if err == nil || !strings.Contains(err.Error(), "jurisdictions[0].feeds[0].history") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("history: %s: error %v, want one naming the field and saying %q", tc.block, err, tc.want)
		}
	}
}
