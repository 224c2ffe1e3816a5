package socrata_test

import (
	"strings"
	"testing"

	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/socrata"
)

// parse parses one socrata feed with the given keys, TOKEN set in the
// environment.
func parse(keys string) (*config.Config, error) {
	return config.Parse("t.yaml", []byte(`
jurisdictions:
  - id: city
    feeds:
      - id: d
        kind: socrata
`+keys), func(k string) (string, bool) { return "zqTok", k == "TOKEN" })
}

// The url is a dataset in any of the forms a portal shows it, or the
// portal with dataset:; each becomes the dataset's resource. page_size
// defaults to 1000; the app token becomes the X-App-Token header.
func TestSettings(t *testing.T) {
	t.Parallel()
	for _, url := range []string{
		"url: https://data.city.gov/resource/abcd-1234.json",
		"url: https://data.city.gov/resource/abcd-1234.geojson",
		"url: https://data.city.gov/resource/abcd-1234",
		"url: https://data.city.gov/d/abcd-1234",
		"url: https://data.city.gov/Public-Safety/Inspections/abcd-1234",
		"url: https://data.city.gov/api/views/abcd-1234.json",
		"url: https://data.city.gov\n        dataset: abcd-1234",
	} {
		cfg, err := parse("        " + url + "\n        app_token: ${TOKEN}\n        geometry_column: the_geom\n")
		if err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		f := cfg.Feeds()[0]
		if f.URL != "https://data.city.gov/resource/abcd-1234.json" || f.PageSize != socrata.DefaultPageSize ||
			f.Headers[socrata.TokenHeader] != "zqTok" || f.Settings != (socrata.Settings{Dataset: "abcd-1234", GeometryColumn: "the_geom"}) {
			t.Errorf("%s: url %s, page size %d, headers %v, settings %+v", url, f.URL, f.PageSize, f.Headers, f.Settings)
		}
	}
}

// Bad settings are refused naming the field and what is wrong.
func TestSettingsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ keys, want string }{
		{"url: https://data.city.gov/resource/parcels.json", "feeds[0].url: a socrata url is a dataset, ending with its 4x4"},
		{"url: https://data.city.gov/resource/abcd-1234.json?$$app_token=zq", "feeds[0].url: the url has an app token"},
		{"url: https://data.city.gov/x\n        dataset: abcd-1234", "with dataset:, the url is the portal"},
		{"url: https://data.city.gov\n        dataset: parcels", `feeds[0].dataset: a dataset identifier is its 4x4, like abcd-1234; got "parcels"`},
		{"url: https://data.city.gov/d/abcd-1234\n        app_token: zqLiteral", "feeds[0].app_token: write the app token as ${VARIABLE}"},
		{"url: https://data.city.gov/d/abcd-1234\n        page_size: 60000", "feeds[0].page_size: a socrata dataset is read in pages of 1 to 50000 rows"},
		{"url: https://data.city.gov/d/abcd-1234\n        page_size: 0", "feeds[0].page_size: a socrata dataset is read in pages of 1 to 50000 rows"},
		{"url: https://data.city.gov/d/abcd-1234\n        geometry_column: ' '", "feeds[0].geometry_column: empty"},
	} {
		_, err := parse("        " + tc.keys + "\n")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.keys, err, tc.want)
		}
	}
	// An app token on a feed of another kind is refused, not dropped.
	_, err := config.Parse("t.yaml", []byte(`
jurisdictions:
  - id: city
    feeds:
      - id: d
        kind: geojson
        url: https://data.city.gov/a.geojson
        app_token: ${TOKEN}
`), func(string) (string, bool) { return "zq", true })
	if err == nil || !strings.Contains(err.Error(), "app_token") {
		t.Errorf("app_token on a geojson feed: %v; want it refused", err)
	}
}
