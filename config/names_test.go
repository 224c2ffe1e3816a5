package config

import (
	"strings"
	"testing"
)

// namesConfig is a config of two jurisdictions with the given extra lines
// (indented under each: jur1, feed1, jur2, feed2).
func namesConfig(jur1, feed1, jur2, feed2 string) string {
	return `jurisdictions:
  - id: raleigh
` + jur1 + `    feeds:
      - id: zoning
        kind: geojson
        url: https://example.com/zoning.geojson
` + feed1 + `      - id: parks
        kind: geojson
        url: https://example.com/parks.geojson
  - id: wake-county
` + jur2 + `    feeds:
      - id: tax-parcels
        kind: geojson
        url: https://example.com/parcels.geojson
` + feed2
}

// Each feed's layer is <schema>.<name>: the ids with '-' made '_' by
// default, a jurisdiction's schema: and a feed's name: over them.
func TestLayerNames(t *testing.T) {
	cfg, err := parseString(t, namesConfig("", "", "    schema: wake\n", "        name: parcels\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range cfg.Feeds() {
		got = append(got, f.LayerSchema+"."+f.LayerName)
	}
	if want := "raleigh.zoning raleigh.parks wake.parcels"; strings.Join(got, " ") != want {
		t.Errorf("layers %v, want %s", got, want)
	}
	cfg, err = parseString(t, namesConfig("", "", "", ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := cfg.Feed("wake-county/tax-parcels"); f.LayerSchema+"."+f.LayerName != "wake_county.tax_parcels" {
		t.Errorf("default layer %s.%s, want wake_county.tax_parcels", f.LayerSchema, f.LayerName)
	}
}

// A name that would shadow another layer, need quoting, or be truncated
// is a config error naming the setting; nothing is rewritten.
func TestLayerNameErrors(t *testing.T) {
	long := strings.Repeat("a", 64)
	for _, c := range []struct {
		name, jur1, feed1, jur2, feed2, want string
	}{
		{"same schema", "", "", "    schema: raleigh\n", "", `jurisdictions "raleigh" and "wake-county" have the same schema "raleigh"`},
		{"same layer", "", "        name: parks\n", "", "", `feeds raleigh/zoning and raleigh/parks have the same layer raleigh.parks`},
		{"reserved word", "", "        name: order\n", "", "", `name "order" is a reserved SQL word`},
		{"reserved schema", "    schema: public\n", "", "", "", `schema "public" is reserved for PostgreSQL, PostGIS or ingestd`},
		{"ingestd's table", "", "        name: ingestd_history\n", "", "", `name "ingestd_history" begins with ingestd_, which names ingestd's own tables`},
		{"ingestd's table by default", "", "", "", "      - {id: ingestd-history, kind: geojson, url: \"https://example.com/h.geojson\"}\n", `the default name "ingestd_history" (from id "ingestd-history") begins with ingestd_`},
		{"pg_ schema", "    schema: pg_zoning\n", "", "", "", `schema "pg_zoning" is reserved`},
		{"too long", "", "        name: " + long + "\n", "", "", `is 64 bytes long; PostgreSQL's limit is 63`},
		{"not an identifier", "", "        name: Zoning\n", "", "", `name "Zoning" is not a plain SQL identifier`},
		{"leading digit", "", "", "    schema: 2wake\n", "", `schema "2wake" is not a plain SQL identifier`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseString(t, namesConfig(c.jur1, c.feed1, c.jur2, c.feed2), nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %s", err, c.want)
			}
		})
	}
	// A default that breaks the rule asks for the setting.
	src := strings.Replace(namesConfig("", "", "", ""), "id: raleigh", "id: user", 1)
	if _, err := parseString(t, src, nil); err == nil || !strings.Contains(err.Error(), `the default schema "user" (from id "user") is a reserved SQL word`) ||
		!strings.Contains(err.Error(), "set schema:") {
		t.Fatalf("error %v, want the default schema refused", err)
	}
}
