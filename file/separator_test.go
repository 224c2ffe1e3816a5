package file_test

import (
	"strings"
	"testing"

	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/file"
)

// TestCSVSeparator: separator: splits a CSV on another character (a quoted
// field may hold it, or a line break), a gzip one included; a separator
// of several characters, a quote, or on a Shapefile is refused.
func TestCSVSeparator(t *testing.T) {
	t.Parallel()
	semi := "id;lon;lat;voie\n1;2,35;48,85;\"rue de la Paix; bis\"\n2;2.36;48.86;\"quai\nhaut\"\n"
	srv := serveFiles(t, map[string]string{"a.csv": semi, "a.csv.gz": gzipped(t, semi)})
	c := file.NewClient(srv.Client(), nil, nil, file.WithTempDir(t.TempDir()))
	for _, name := range []string{"a.csv", "a.csv.gz"} {
		var col collect
		if _, err := c.Fetch(t.Context(), layer(srv.URL+"/"+name, file.Settings{Separator: ';', X: "id", Y: "id"}), 0, col.handle); err != nil {
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
	if s := cfg.Jurisdictions[0].Feeds[0].Settings.(file.Settings); s.Separator != ';' {
		t.Errorf("separator %q", s.Separator)
	}
	if s := cfg.Jurisdictions[0].Feeds[1].Settings.(file.Settings); s.Separator != '\t' {
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

// TestCSVHeaderLine: header_line: N skips the lines above the header and
// counts error lines from the file's first; header_line: none names the
// columns COLUMN1, COLUMN2, … and reads the first line as a record.
func TestCSVHeaderLine(t *testing.T) {
	t.Parallel()
	srv := serveFiles(t, map[string]string{
		"title.csv":    "Address points of the county, 2026\nx,y,num\n1,2,12\n3,4,14\n",
		"bad.csv":      "title\nx,y,num\n1,2,12\n3,4\n",
		"noheader.csv": "1,2,12\n3,4,14\n",
	})
	c := file.NewClient(srv.Client(), nil, nil, file.WithTempDir(t.TempDir()))
	for _, tc := range []struct {
		file string
		s    file.Settings
		want string
	}{
		{"title.csv", file.Settings{HeaderLine: 2}, `{"num":12}` + "\n" + `{"num":14}`},
		{"noheader.csv", file.Settings{NoHeader: true, X: "COLUMN1", Y: "COLUMN2"}, `{"COLUMN3":12}` + "\n" + `{"COLUMN3":14}`},
	} {
		var col collect
		if _, err := c.Fetch(t.Context(), layer(srv.URL+"/"+tc.file, tc.s), 0, col.handle); err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if got := strings.Join(col.props, "\n"); got != tc.want || col.geoms[0] == nil {
			t.Errorf("%s: properties\n%s\nwant\n%s", tc.file, got, tc.want)
		}
	}
	var col collect
	_, err := c.Fetch(t.Context(), layer(srv.URL+"/bad.csv", file.Settings{HeaderLine: 2}), 0, col.handle)
	if err == nil || !strings.Contains(err.Error(), "line 4: 2 fields where the header has 3") {
		t.Errorf("bad.csv: %v", err)
	}
	_, err = c.Fetch(t.Context(), layer(srv.URL+"/noheader.csv", file.Settings{HeaderLine: 5}), 0, col.handle)
	if err == nil || !strings.Contains(err.Error(), "header_line 5: the file ends on line 3") {
		t.Errorf("too few lines: %v", err)
	}

	doc := "jurisdictions:\n  - id: kr\n    feeds:\n" +
		"      - {id: a, kind: file, url: \"https://example.org/a.csv\", header_line: 2}\n" +
		"      - {id: b, kind: file, url: \"https://example.org/b.csv\", header_line: none}\n"
	cfg, err := config.Parse("h.yaml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := cfg.Jurisdictions[0].Feeds[0].Settings.(file.Settings); s.HeaderLine != 2 || s.NoHeader {
		t.Errorf("settings %+v", s)
	}
	if s := cfg.Jurisdictions[0].Feeds[1].Settings.(file.Settings); !s.NoHeader {
		t.Errorf("settings %+v", s)
	}
	bad := "jurisdictions:\n  - id: kr\n    feeds:\n" +
		"      - {id: a, kind: file, url: \"https://example.org/a.csv\", header_line: 0}\n" +
		"      - {id: b, kind: file, url: \"https://example.org/b.zip\", format: shapefile, header_line: 2}\n"
	_, err = config.Parse("bad.yaml", []byte(bad), nil)
	for _, want := range []string{`feeds[0].header_line: the line of the CSV's header, from 1, or none; not "0"`, `feeds[1].header_line: only a CSV has a header line`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}
}
