package file_test

import (
	"strings"
	"testing"

	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/file"
)

// TestSettings: the file kind's settings are read and checked by the
// config loader (ingestd validate), each error naming its field.
func TestSettings(t *testing.T) {
	t.Parallel()
	good := `
jurisdictions:
  - id: wake
    feeds:
      - {id: parcels, kind: file, url: "https://example.org/parcels.zip", layer: Parcels, crs: "EPSG:2264", encoding: windows-1252}
      - {id: points, kind: file, url: "https://example.org/p.csv", format: csv, x: lon, y: lat}
      - {id: korean, kind: file, url: "https://example.org/k.csv", separator: "|", encoding: EUCKR}
`
	cfg, err := config.Parse("good.yaml", []byte(good), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Jurisdictions[0].Feeds[0].Settings.(file.Settings)
	if s.Layer != "Parcels" || s.SRID != 2264 || s.Encoding != "windows-1252" || s.Format != "" {
		t.Errorf("settings %+v", s)
	}
	if p := cfg.Jurisdictions[0].Feeds[1].Settings.(file.Settings); p.X != "lon" || p.Y != "lat" || p.Format != "csv" {
		t.Errorf("settings %+v", p)
	}
	if k := cfg.Jurisdictions[0].Feeds[2].Settings.(file.Settings); k.Encoding != "EUCKR" || k.Separator != '|' {
		t.Errorf("settings %+v", k)
	}
	bad := `
jurisdictions:
  - id: wake
    feeds:
      - {id: a, kind: file, url: "https://example.org/a.zip", format: kml}
      - {id: b, kind: file, url: "https://example.org/b.csv", x: lon}
      - {id: c, kind: file, url: "https://example.org/c.csv", x: lon, y: lat, wkt: geom}
      - {id: d, kind: file, url: "https://example.org/d.zip", crs: "NAD27 please"}
      - {id: e, kind: file, url: "https://example.org/e.zip", encoding: klingon}
      - {id: f, kind: file, url: "https://example.org/f.zip", format: shapefile, wkt: geom}
      - {id: g, kind: file, url: "https://example.org/g.geojson", format: geojson, encoding: CP1251}
      - {id: h, kind: file, url: "https://example.org/h.csv", separator: "|", encoding: SHIFT_JISX0213}
`
	_, err = config.Parse("bad.yaml", []byte(bad), nil)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`feeds[0].format: unknown format "kml"`,
		`feeds[1].y: required with x`,
		`feeds[2].wkt: either x: and y: or wkt:, not both`,
		`feeds[3].crs: unsupported srsName`,
		`feeds[4].encoding: unknown encoding "klingon"`,
		`feeds[5].wkt: only a CSV has geometry columns (format is shapefile)`,
		`feeds[6].encoding: only a Shapefile's DBF or a CSV has an encoding setting (format is geojson`,
		`feeds[7].encoding: separator "|" can be the second byte of a Shift_JIS X 0213 character`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}
}

// oneLayerFake is a reader of one layer, as gpkg's and flatgeobuf's are.
type oneLayerFake struct{ file.FileReader }

func (oneLayerFake) Layer() string { return "parcels" }

// TestFromOneLayer: a one-layer reader's name is its FileReader's only
// layer.
func TestFromOneLayer(t *testing.T) {
	t.Parallel()
	if got := file.FromOneLayer(oneLayerFake{}).Layers(); len(got) != 1 || got[0] != "parcels" {
		t.Errorf("Layers() = %v", got)
	}
}
