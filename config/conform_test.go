package config_test

import (
	"strings"
	"testing"

	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/conform"
)

const conformYAML = `
layers:
  - name: zoning
    geometry: multipolygon
    columns:
      code: text
      max_height: numeric
jurisdictions:
  - id: wake
    feeds:
      - id: addresses
        kind: geojson
        url: "http://127.0.0.1:1/a.geojson"
        conform:
          layer: addresses
          number: ST_NUM
          street: [DIR_PREFIX, ST_NAME, ST_TYPE]
          city: {function: regexp, field: POSTAL_CITY, pattern: "^(?!UNINC)(.*)$", replace: "$1"}
        tests:
          - description: a full address
            inputs: {ST_NUM: 12, DIR_PREFIX: N, ST_NAME: MAIN, ST_TYPE: ST, POSTAL_CITY: RALEIGH}
            expected: {number: "12", street: N MAIN ST, city: RALEIGH}
      - id: zoning
        kind: geojson
        url: "http://127.0.0.1:1/z.geojson"
        conform: {layer: zoning, code: ZONE_CODE, max_height: HT}
`

// TestConformConfig: a feed's conform: names a built-in or declared common
// layer and compiles, its tests: are kept with their lines, and layers:
// declares typed columns.
func TestConformConfig(t *testing.T) {
	cfg, err := config.Parse("c.yaml", []byte(conformYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := cfg.Feed("wake/addresses")
	if f.Conform == nil || f.Conform.Layer != "addresses" || len(f.Conform.Tests) != 1 || f.Conform.Tests[0].Line != 20 {
		t.Fatalf("wake/addresses conform %+v", f.Conform)
	}
	if fails := conform.RunTests(f.Conform.Conform, f.Conform.Tests); len(fails) != 0 {
		t.Errorf("acceptance test fails: %v", fails)
	}
	z, _ := cfg.Feed("wake/zoning")
	got, err := z.Conform.Conform.Apply(map[string]any{"ZONE_CODE": "R-4", "HT": 35})
	if err != nil || got["code"] != "R-4" || got["max_height"] != "35" {
		t.Errorf("zoning conform: %v %v", got, err)
	}
	l, ok := cfg.CommonLayer("zoning")
	if !ok || l.Geometry != "multipolygon" || len(l.Columns) != 2 || l.Columns[1] != (config.LayerColumn{Name: "max_height", Type: "numeric"}) {
		t.Errorf("declared layer %+v", l)
	}
	if a, ok := cfg.CommonLayer("addresses"); !ok || !a.Builtin || a.Geometry != "point" || a.Columns[0].Name != "number" {
		t.Errorf("built-in layer %+v", a)
	}
}

// TestConformConfigErrors: what cannot run is an error at its line naming
// the feed's path and what is wrong.
func TestConformConfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, feed, want string }{
		{"unknown function", `conform: {layer: addresses, street: {function: reverse, field: A}}`, `c.yaml:7: jurisdictions[0].feeds[0].conform.street: reverse: `},
		{"bad pattern", `conform: {layer: addresses, street: {function: regexp, field: A, pattern: "(a"}}`, `c.yaml:7: jurisdictions[0].feeds[0].conform.street: regexp: `},
		{"unknown layer", `conform: {layer: roads, name: A}`, `jurisdictions[0].feeds[0].conform.layer: unknown common layer "roads"`},
		{"no layer", `conform: {street: A}`, `jurisdictions[0].feeds[0].conform.layer: required`},
		{"tests without conform", `tests: [{inputs: {A: 1}, expected: {street: "1"}}]`, `jurisdictions[0].feeds[0].tests: tests need a conform`},
		{"column of another layer", `conform: {layer: parcels, pid: A, street: B}`, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "jurisdictions:\n  - id: wake\n    feeds:\n      - id: a\n        kind: geojson\n        url: \"http://127.0.0.1:1/a\"\n        " + tc.feed + "\n"
			cfg, err := config.Parse("c.yaml", []byte(doc), nil)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0].Error(), "street: not a column of parcels") {
					t.Errorf("warnings %v", cfg.Warnings)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	bad := "layers:\n  - {name: addresses, columns: {a: text}}\n  - {name: z, geometry: blob, columns: {geom: text, b: varchar}}\njurisdictions: []\n"
	_, err := config.Parse("l.yaml", []byte(bad), nil)
	for _, want := range []string{`layers[0].name: "addresses" is a built-in`, `layers[1].geometry: unknown geometry type "blob"`, `layers[1].columns.geom: every common layer has a geom column`, `layers[1].columns.b: unknown column type`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to contain %q", err, want)
		}
	}
}
