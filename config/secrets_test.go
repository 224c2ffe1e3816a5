package config

import (
	"slices"
	"testing"
)

// Every credential of the configuration is a secret, whatever carries it;
// what says what is asked for (layer names, harmless parameters, Accept)
// is not.
func TestConfigSecrets(t *testing.T) {
	t.Parallel()
	const y = `
jurisdictions:
  - id: wake
    headers:
      X-County-Key: ${COUNTY_KEY}
      Accept: application/geo+json
    feeds:
      - id: parcels
        kind: arcgis
        url: https://maps.example.org/arcgis/rest/services/Parcels/FeatureServer/3
        token: ${WAKE_TOKEN}
      - id: zoning
        kind: ogcapi
        url: https://gisuser:gispassword@api.example.org/collections/zoning?apikey=ogc-api-key-1&limit=100
      - id: roads
        kind: wfs
        url: https://wfs.example.org/wfs?service=WFS&SIG=wfs-signature-1
        type_name: roads
`
	cfg := mustParse(t, y, map[string]string{"WAKE_TOKEN": "arcgis-token-1", "COUNTY_KEY": "county-key-1"})
	got := cfg.Secrets()
	for _, want := range []string{"arcgis-token-1", "Bearer arcgis-token-1", "county-key-1", "gisuser", "gispassword",
		"ogc-api-key-1", "wfs-signature-1"} {
		if !slices.Contains(got, want) {
			t.Errorf("Secrets() lacks %q: %q", want, got)
		}
	}
	for _, not := range []string{"application/geo+json", "100", "WFS", "roads"} {
		if slices.Contains(got, not) {
			t.Errorf("Secrets() holds %q, which is no credential: %q", not, got)
		}
	}
}
