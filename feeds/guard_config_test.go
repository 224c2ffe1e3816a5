package feeds

import (
	"testing"
	"time"

	"github.com/ingestd/ingestd/config"
)

// TestGuardOfConfig: the checks a poll hands the store are the feed's
// resolved settings (max_shrink from the feed, else its jurisdiction, else
// the defaults; the jurisdiction's bbox; invalid_geometry), and a feed that
// sets none gets the default policy.
func TestGuardOfConfig(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse("j.yaml", []byte(`
defaults:
  max_shrink: 0.3
  invalid_geometry: skip
jurisdictions:
  - id: wake
    bbox: [-79.0, 35.5, -78.2, 36.1]
    max_shrink: 0.2
    feeds:
      - {id: parcels, kind: geojson, url: "https://data.example.org/parcels.geojson", invalid_geometry: repair}
      - {id: permits, kind: geojson, url: "https://data.example.org/permits.geojson", max_shrink: 0.9}
  - id: durham
    feeds:
      - {id: roads, kind: geojson, url: "https://data.example.org/roads.geojson"}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	box := &config.BBox{MinX: -79.0, MinY: 35.5, MaxX: -78.2, MaxY: 36.1}
	want := map[string]Guard{
		"wake/parcels": {MaxShrink: 0.2, BBox: box, SchemaChange: config.SchemaEvolve},
		"wake/permits": {MaxShrink: 0.9, BBox: box, SkipInvalid: true, SchemaChange: config.SchemaEvolve},
		"durham/roads": {MaxShrink: 0.3, SkipInvalid: true, SchemaChange: config.SchemaEvolve},
	}
	for key, w := range want {
		f, ok := cfg.Feed(key)
		if !ok {
			t.Fatalf("no feed %s", key)
		}
		g := guardOf(f)
		if g.MaxShrink != w.MaxShrink || g.SkipInvalid != w.SkipInvalid || g.SchemaChange != w.SchemaChange ||
			(g.BBox == nil) != (w.BBox == nil) || (g.BBox != nil && *g.BBox != *w.BBox) {
			t.Errorf("%s: guardOf = %+v (bbox %v), want %+v", key, g, g.BBox, w)
		}
		if got := feedInfo(f, time.Now()).Guard; got != g {
			t.Errorf("%s: FeedInfo.Guard = %+v, want %+v", key, got, g)
		}
	}
	if (Guard{}).EffectiveMaxShrink() != DefaultMaxShrink {
		t.Errorf("zero Guard is not the default policy")
	}
}

// TestInvalidFeatureReachesTheGuard: invalid_feature resolves (feed, else
// defaults, else repair) into the Guard the store gets.
func TestInvalidFeatureReachesTheGuard(t *testing.T) {
	for _, c := range []struct {
		yaml string
		want map[string]bool
	}{{`
defaults: {invalid_feature: skip}
jurisdictions:
  - id: a
    feeds:
      - {id: f, kind: geojson, url: "https://a.example.org/f.geojson"}
      - {id: g, kind: geojson, url: "https://a.example.org/g.geojson", invalid_feature: repair}
`, map[string]bool{"a/f": true, "a/g": false}}, {`
jurisdictions:
  - id: a
    feeds:
      - {id: f, kind: geojson, url: "https://a.example.org/f.geojson"}
      - {id: g, kind: geojson, url: "https://a.example.org/g.geojson", invalid_feature: skip}
`, map[string]bool{"a/f": false, "a/g": true}}} {
		cfg, err := config.Parse("f.yaml", []byte(c.yaml), nil)
		if err != nil {
			t.Fatal(err)
		}
		checkSkipInvalidFeature(t, cfg, c.want)
	}
}

func checkSkipInvalidFeature(t *testing.T, cfg *config.Config, want map[string]bool) {
	t.Helper()
	for key, skip := range want {
		f, _ := cfg.Feed(key)
		if got := feedInfo(f, time.Now()).Guard.SkipInvalidFeature; got != skip {
			t.Errorf("%s: invalid_feature %q gives SkipInvalidFeature %v, want %v", key, f.InvalidFeature, got, skip)
		}
	}
}

// A claim's lease covers the poll's work, its time in line and a minute.
func TestLongestPoll(t *testing.T) {
	t.Parallel()
	f := &config.Feed{Timeout: config.Duration(2 * time.Minute), QueueTimeout: config.Duration(5 * time.Minute)}
	if got, want := longestPoll(f), 2*time.Minute+5*time.Minute+time.Minute; got != want {
		t.Errorf("longestPoll = %s, want %s", got, want)
	}
}
