package feeds

import (
	"strings"
	"testing"
	"time"
)

const guardYAML = `
defaults:
  max_shrink: 0.3
jurisdictions:
  - id: wake
    bbox: [-79.0, 35.5, -78.2, 36.1]
    max_shrink: 0.2
    feeds:
      - {id: parcels, kind: geojson, url: "https://data.example.org/parcels.geojson"}
      - {id: permits, kind: geojson, url: "https://data.example.org/permits.geojson", max_shrink: 0.9}
  - id: durham
    feeds:
      - {id: roads, kind: geojson, url: "https://data.example.org/roads.geojson"}
`

func TestGuardConfigResolves(t *testing.T) {
	cfg, err := ParseConfig("j.yaml", []byte(guardYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Guard{
		"wake/parcels": {MaxShrink: 0.2, BBox: &BBox{-79.0, 35.5, -78.2, 36.1}},
		"wake/permits": {MaxShrink: 0.9, BBox: &BBox{-79.0, 35.5, -78.2, 36.1}},
		"durham/roads": {MaxShrink: 0.3},
	}
	for key, w := range want {
		f, ok := cfg.Feed(key)
		if !ok {
			t.Fatalf("no feed %s", key)
		}
		g := f.Guard()
		if g.MaxShrink != w.MaxShrink || (g.BBox == nil) != (w.BBox == nil) || (g.BBox != nil && *g.BBox != *w.BBox) {
			t.Errorf("%s: Guard() = %+v (bbox %v), want %+v", key, g, g.BBox, w)
		}
		if got := feedInfo(f, time.Now()).Guard; got != g {
			t.Errorf("%s: FeedInfo.Guard = %+v, want %+v", key, got, g)
		}
	}
}

func TestGuardConfigDefault(t *testing.T) {
	cfg, err := ParseConfig("j.yaml", []byte(`
jurisdictions:
  - id: x
    feeds:
      - {id: y, kind: geojson, url: "https://data.example.org/y.geojson"}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := cfg.Feed("x/y")
	if f.MaxShrink != 0 || f.BBox != nil || f.Guard().EffectiveMaxShrink() != 0.5 {
		t.Errorf("default guard: %+v", f.Guard())
	}
	if (Guard{}).EffectiveMaxShrink() != DefaultMaxShrink {
		t.Errorf("zero Guard is not the default policy")
	}
}

func TestGuardConfigErrors(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"shrink zero", "defaults: {max_shrink: 0}\n" + minimalJurisdictions, "defaults.max_shrink: expected a fraction above 0"},
		{"shrink above one", "defaults: {max_shrink: 1.5}\n" + minimalJurisdictions, "defaults.max_shrink: expected a fraction"},
		{"feed shrink text", strings.Replace(minimalJurisdictions, "kind: geojson", "kind: geojson, max_shrink: half", 1), "jurisdictions[0].feeds[0].max_shrink: expected a fraction"},
		{"bbox three numbers", strings.Replace(minimalJurisdictions, "- id: x", "- id: x\n    bbox: [1, 2, 3]", 1), "jurisdictions[0].bbox: expected [minx, miny, maxx, maxy]"},
		{"bbox not a number", strings.Replace(minimalJurisdictions, "- id: x", "- id: x\n    bbox: [a, 2, 3, 4]", 1), "jurisdictions[0].bbox: expected a number"},
		{"bbox projected", strings.Replace(minimalJurisdictions, "- id: x", "- id: x\n    bbox: [2000000, 600000, 2200000, 800000]", 1), "is not in EPSG:4326"},
		{"bbox swapped", strings.Replace(minimalJurisdictions, "- id: x", "- id: x\n    bbox: [-78.2, 35.5, -79.0, 36.1]", 1), "is empty"},
		{"typo", strings.Replace(minimalJurisdictions, "- id: x", "- id: x\n    max_shrnk: 0.5", 1), "max_shrnk"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseConfig("j.yaml", []byte(c.src), nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
			if !strings.HasPrefix(err.Error(), "j.yaml:") {
				t.Errorf("error not positioned: %v", err)
			}
		})
	}
}

const minimalJurisdictions = `jurisdictions:
  - id: x
    feeds:
      - {id: y, kind: geojson, url: "https://data.example.org/y.geojson"}
`

func TestInvalidGeometryConfig(t *testing.T) {
	cfg, err := ParseConfig("g.yaml", []byte(`
defaults: {invalid_geometry: skip}
jurisdictions:
  - id: a
    feeds:
      - {id: f, kind: geojson, url: "https://a.example.org/f.geojson"}
      - {id: g, kind: geojson, url: "https://a.example.org/g.geojson", invalid_geometry: repair}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := cfg.Feed("a/f"); !f.Guard().SkipInvalid {
		t.Errorf("a/f: %q from defaults, want skip", f.InvalidGeometry)
	}
	if g, _ := cfg.Feed("a/g"); g.Guard().SkipInvalid {
		t.Errorf("a/g: %q, want repair", g.InvalidGeometry)
	}
	_, err = ParseConfig("g.yaml", []byte("defaults: {invalid_geometry: drop}\n"+minimalJurisdictions), nil)
	if err == nil || !strings.Contains(err.Error(), `g.yaml:1:30: defaults.invalid_geometry: expected repair or skip, found "drop"`) {
		t.Errorf("bad invalid_geometry: %v", err)
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
		cfg, err := ParseConfig("f.yaml", []byte(c.yaml), nil)
		if err != nil {
			t.Fatal(err)
		}
		checkSkipInvalidFeature(t, cfg, c.want)
	}
}

func checkSkipInvalidFeature(t *testing.T, cfg *Config, want map[string]bool) {
	t.Helper()
	for key, skip := range want {
		f, _ := cfg.Feed(key)
		if got := feedInfo(f, time.Now()).Guard.SkipInvalidFeature; got != skip {
			t.Errorf("%s: invalid_feature %q gives SkipInvalidFeature %v, want %v", key, f.InvalidFeature, got, skip)
		}
	}
}

// schema_change resolves feed, else jurisdiction, else defaults (evolve).
func TestSchemaChangeConfig(t *testing.T) {
	cfg, err := ParseConfig("j.yaml", []byte(`
defaults:
  schema_change: hold
jurisdictions:
  - id: wake
    schema_change: evolve
    feeds:
      - {id: a, kind: geojson, url: "https://data.example.org/a.geojson"}
      - {id: b, kind: geojson, url: "https://data.example.org/b.geojson", schema_change: hold}
  - id: durham
    feeds:
      - {id: c, kind: geojson, url: "https://data.example.org/c.geojson"}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"wake/a": SchemaEvolve, "wake/b": SchemaHold, "durham/c": SchemaHold} {
		f, _ := cfg.Feed(key)
		if got := feedInfo(f, time.Now()).Guard.SchemaChange; got != want {
			t.Errorf("%s: schema_change %q, want %q", key, got, want)
		}
	}
	cfg, err = ParseConfig("j.yaml", []byte(`
jurisdictions:
  - id: x
    feeds:
      - {id: y, kind: geojson, url: "https://data.example.org/y.geojson"}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := cfg.Feed("x/y"); f.SchemaChange != SchemaEvolve {
		t.Errorf("default schema_change %q", f.SchemaChange)
	}
	_, err = ParseConfig("j.yaml", []byte(`
jurisdictions:
  - id: x
    feeds:
      - {id: y, kind: geojson, url: "https://data.example.org/y.geojson", schema_change: freeze}
`), nil)
	if err == nil || !strings.Contains(err.Error(), "schema_change") || !strings.Contains(err.Error(), "evolve or hold") {
		t.Errorf("schema_change: freeze: %v", err)
	}
}
