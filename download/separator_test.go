package download_test

import (
	"strings"
	"testing"

	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/download"
)

// TestCSVSeparator: separator: splits a CSV on another character (a quoted
// field may hold it, or a line break), a gzip one included; a separator
// of several characters, a quote, or on a Shapefile is refused.
func TestCSVSeparator(t *testing.T) {
	t.Parallel()
	semi := "id;lon;lat;voie\n1;2,35;48,85;\"rue de la Paix; bis\"\n2;2.36;48.86;\"quai\nhaut\"\n"
	srv := serveFiles(t, map[string]string{"a.csv": semi, "a.csv.gz": gzipped(t, semi)})
	c := download.NewClient(srv.Client(), nil, nil, download.WithTempDir(t.TempDir()))
	for _, name := range []string{"a.csv", "a.csv.gz"} {
		var col collect
		if _, err := c.Fetch(t.Context(), layer(srv.URL+"/"+name, download.Settings{Separator: ';', X: "id", Y: "id"}), 0, col.handle); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := `{"lon":"2,35","lat":"48,85","voie":"rue de la Paix; bis"}` + "\n" + `{"lon":2.36,"lat":48.86,"voie":"quai\u000ahaut"}`
		if got := strings.Join(col.props, "\n"); got != want {
			t.Errorf("%s: properties\n%s\nwant\n%s", name, got, want)
		}
	}

	doc := `
jurisdictions:
  - id: fr
    feeds:
      - {id: a, kind: file, url: "https://example.org/a.csv.gz", separator: ";"}
      - {id: b, kind: file, url: "https://example.org/b.tsv", format: csv, separator: tab}
`
	cfg, err := config.Parse("s.yaml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := cfg.Jurisdictions[0].Feeds[0].Settings.(download.Settings); s.Separator != ';' {
		t.Errorf("separator %q", s.Separator)
	}
	if s := cfg.Jurisdictions[0].Feeds[1].Settings.(download.Settings); s.Separator != '\t' {
		t.Errorf("separator %q", s.Separator)
	}
	bad := `
jurisdictions:
  - id: fr
    feeds:
      - {id: a, kind: file, url: "https://example.org/a.csv", separator: ";;"}
      - {id: b, kind: file, url: "https://example.org/b.csv", separator: '"'}
      - {id: c, kind: file, url: "https://example.org/c.zip", format: shapefile, separator: ";"}
`
	_, err = config.Parse("bad.yaml", []byte(bad), nil)
	for _, want := range []string{
		`feeds[0].separator: a CSV's separator is one character`,
		`feeds[1].separator: a CSV's separator is one character`,
		`feeds[2].separator: only a CSV has a separator (format is shapefile)`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}
}
