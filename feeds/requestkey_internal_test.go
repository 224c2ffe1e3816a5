package feeds

import (
	"strings"
	"testing"

	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/source"
	"github.com/ingestd/ingestd/wfs"
)

// requestKey is stored as feed_status.validators_for: a layer whose key
// changes loses its validators, and its next poll fetches unconditionally.
// These keys are pinned so that moving a setting between packages cannot
// change them unnoticed.
func TestRequestKeyPinned(t *testing.T) {
	t.Parallel()
	direct := source.Layer{Kind: wfs.Kind, URL: "https://gis.example.org/geoserver/wfs", PageSize: 500, SRID: 2277, IDProperty: "prop_id",
		Settings: wfs.Settings{Version: "2.0.0", OutputFormat: "application/json", TypeName: "tcad:parcels", SortBy: "prop_id"}}
	if got, want := requestKey(direct), "7b141c88a5dcb05e81dd448fae246b4b87eb730db7a4254e16e1f5dce9e07208"; got != want {
		t.Errorf("requestKey(wfs layer) = %s, want %s", got, want)
	}
	cfg, err := config.Parse("pin.yaml", []byte(`jurisdictions:
  - id: travis
    feeds:
      - {id: parcels, kind: wfs, url: "https://gis.example.org/geoserver/wfs", type_name: "tcad:parcels", page_size: 500, id_property: prop_id, sort_by: prop_id, version: "1.1.0"}
      - {id: parks, kind: geojson, url: "https://data.example.org/parks.geojson", id_property: park_id}
      - {id: parks2, kind: geojson, url: "https://data.example.org/parks.geojson", id_property: park_id, sort_by: park_id}
      - {id: roads, kind: arcgis, url: "https://gis.example.org/arcgis/rest/services/Roads/FeatureServer/0", sort_by: oid}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	// A geojson feed reads its document as it is: sort_by, a wfs key, is
	// ignored with a warning and is not part of what the key identifies.
	want := map[string]string{
		"travis/parcels": "b9d5220772ab1f9ce50841b8c30bd14e270de1a033aca7bc8c3f194fadd74137",
		"travis/parks":   "08a24b45772b6d38bd31892b1deeb6e0f9f1ce3f0c98ad617959371e46d2b6b8",
		"travis/parks2":  "08a24b45772b6d38bd31892b1deeb6e0f9f1ce3f0c98ad617959371e46d2b6b8",
		"travis/roads":   "cd0739ff6a08e6a599df22dd28b6253163aeefcd6377ca50271e9f1a90a63ca4",
	}
	for _, f := range cfg.Feeds() {
		if got := requestKey(f.Layer()); got != want[f.Key()] {
			t.Errorf("requestKey(%s) = %s, want %s", f.Key(), got, want[f.Key()])
		}
	}
	if len(cfg.Feeds()) != len(want) {
		t.Errorf("%d feeds, want %d", len(cfg.Feeds()), len(want))
	}
	var warns []string
	for _, w := range cfg.Warnings {
		warns = append(warns, w.Error())
	}
	for _, w := range []string{"feeds[2].sort_by: ignored for a geojson feed (a wfs setting)", "feeds[3].sort_by: ignored for an arcgis feed (a wfs setting)"} {
		if !strings.Contains(strings.Join(warns, "\n"), w) {
			t.Errorf("warnings %q do not say %q", warns, w)
		}
	}
}
