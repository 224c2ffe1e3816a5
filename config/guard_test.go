package config

import (
	"strings"
	"testing"
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
	cfg, err := Parse("j.yaml", []byte(guardYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	type guard struct {
		maxShrink float64
		bbox      *BBox
	}
	want := map[string]guard{
		"wake/parcels": {0.2, &BBox{-79.0, 35.5, -78.2, 36.1}},
		"wake/permits": {0.9, &BBox{-79.0, 35.5, -78.2, 36.1}},
		"durham/roads": {0.3, nil},
	}
	for key, w := range want {
		f, ok := cfg.Feed(key)
		if !ok {
			t.Fatalf("no feed %s", key)
		}
		if f.MaxShrink != w.maxShrink || (f.BBox == nil) != (w.bbox == nil) || (f.BBox != nil && *f.BBox != *w.bbox) {
			t.Errorf("%s: max_shrink %v, bbox %v; want %v, %v", key, f.MaxShrink, f.BBox, w.maxShrink, w.bbox)
		}
	}
}

func TestGuardConfigDefault(t *testing.T) {
	cfg, err := Parse("j.yaml", []byte(`
jurisdictions:
  - id: x
    feeds:
      - {id: y, kind: geojson, url: "https://data.example.org/y.geojson"}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := cfg.Feed("x/y")
	if f.MaxShrink != 0 || f.BBox != nil {
		t.Errorf("default guard: max_shrink %v, bbox %v; want neither set", f.MaxShrink, f.BBox)
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
			_, err := Parse("j.yaml", []byte(c.src), nil)
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
	cfg, err := Parse("g.yaml", []byte(`
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
	if f, _ := cfg.Feed("a/f"); f.InvalidGeometry != InvalidSkip {
		t.Errorf("a/f: %q from defaults, want skip", f.InvalidGeometry)
	}
	if g, _ := cfg.Feed("a/g"); g.InvalidGeometry != InvalidRepair {
		t.Errorf("a/g: %q, want repair", g.InvalidGeometry)
	}
	_, err = Parse("g.yaml", []byte("defaults: {invalid_geometry: drop}\n"+minimalJurisdictions), nil)
	if err == nil || !strings.Contains(err.Error(), `g.yaml:1:30: defaults.invalid_geometry: expected repair or skip, found "drop"`) {
		t.Errorf("bad invalid_geometry: %v", err)
	}
}

// schema_change resolves feed, else jurisdiction, else defaults (evolve).
func TestSchemaChangeConfig(t *testing.T) {
	cfg, err := Parse("j.yaml", []byte(`
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
		if got := f.SchemaChange; got != want {
			t.Errorf("%s: schema_change %q, want %q", key, got, want)
		}
	}
	cfg, err = Parse("j.yaml", []byte(`
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
	_, err = Parse("j.yaml", []byte(`
jurisdictions:
  - id: x
    feeds:
      - {id: y, kind: geojson, url: "https://data.example.org/y.geojson", schema_change: freeze}
`), nil)
	if err == nil || !strings.Contains(err.Error(), "schema_change") || !strings.Contains(err.Error(), "evolve or hold") {
		t.Errorf("schema_change: freeze: %v", err)
	}
}
