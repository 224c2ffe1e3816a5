package file_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twpayne/go-geom"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/file"
	"github.com/ingestd/ingestd/source"
)

// collect keeps the features' geometries and properties.
type collect struct {
	geoms []geom.T
	props []string
}

func (c *collect) handle(_ context.Context, _ source.Page, r feature.FeatureReader) error {
	for {
		f, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("handler: %w", err)
		}
		c.geoms = append(c.geoms, f.Geometry)
		c.props = append(c.props, string(f.Properties))
	}
}

// serveFiles serves name → body with net/http's ServeContent (which sends
// Last-Modified and answers If-Modified-Since with a 304).
func serveFiles(t *testing.T, files map[string]string) *httptest.Server {
	modTime := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := files[strings.TrimPrefix(r.URL.Path, "/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		http.ServeContent(w, r, r.URL.Path, modTime, strings.NewReader(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func layer(url string, s file.Settings) source.Layer {
	return source.Layer{Kind: file.Kind, URL: url, Settings: s}
}

// noDownloadsLeft fails t when dir holds a download.
func noDownloadsLeft(t *testing.T, dir string) {
	t.Helper()
	left, _ := os.ReadDir(dir)
	if len(left) > 0 {
		t.Errorf("%d files left in the temporary folder: %v", len(left), left)
	}
}

// TestConditional: the file's Last-Modified goes back with the next
// fetch, whose 304 hands nothing over.
func TestConditional(t *testing.T) {
	t.Parallel()
	doc := `{"type":"FeatureCollection","features":[{"type":"Feature","geometry":{"type":"Point","coordinates":[1,2]},"properties":{"a":1}}]}`
	srv := serveFiles(t, map[string]string{"x.geojson": doc})
	dir := t.TempDir()
	c := file.NewClient(srv.Client(), nil, nil, file.WithTempDir(dir))
	var col collect
	l := layer(srv.URL+"/x.geojson", file.Settings{})
	stats, err := c.Fetch(t.Context(), l, 0, col.handle)
	if err != nil || stats.Features != 1 || stats.Validators.LastModified == "" {
		t.Fatalf("first fetch: %+v, %v", stats, err)
	}
	l.Validators = stats.Validators
	stats, err = c.Fetch(t.Context(), l, 0, col.handle)
	if err != nil || !stats.NotModified || len(col.props) != 1 {
		t.Errorf("second fetch: %+v, %v, %d features; want not modified", stats, err, len(col.props))
	}
	noDownloadsLeft(t, dir)
}

// TestCSV: points from x:/y: in the feed's crs:, typed cells (a number
// JSON would write, else a string; empty is null), and a WKT column found
// by its name.
func TestCSV(t *testing.T) {
	t.Parallel()
	srv := serveFiles(t, map[string]string{
		"pts.csv": "id,east,north,zip,n,note\n1,1000.5,2000,02134,7,\"a, b\"\n2,1001,2001,,-1.5e3,\n",
		"wkt.csv": "WKT,name\n\"POINT (1 2)\",x\n,y\n",
	})
	c := file.NewClient(srv.Client(), nil, nil, file.WithTempDir(t.TempDir()))
	var col collect
	if _, err := c.Fetch(t.Context(), layer(srv.URL+"/pts.csv", file.Settings{X: "east", Y: "north", SRID: 2264}), 0, col.handle); err != nil {
		t.Fatal(err)
	}
	want := []string{`{"id":1,"zip":"02134","n":7,"note":"a, b"}`, `{"id":2,"zip":null,"n":-1.5e3,"note":null}`}
	if strings.Join(col.props, "\n") != strings.Join(want, "\n") {
		t.Errorf("properties\n%s\nwant\n%s", strings.Join(col.props, "\n"), strings.Join(want, "\n"))
	}
	if p, ok := col.geoms[0].(*geom.Point); !ok || p.X() != 1000.5 || p.SRID() != 2264 {
		t.Errorf("geometry %#v", col.geoms[0])
	}
	col = collect{}
	if _, err := c.Fetch(t.Context(), layer(srv.URL+"/wkt.csv", file.Settings{}), 0, col.handle); err != nil {
		t.Fatal(err)
	}
	if len(col.geoms) != 2 || col.geoms[1] != nil || col.geoms[0].(*geom.Point).SRID() != 4326 {
		t.Errorf("geometries %v", col.geoms)
	}
}

// TestRefused: a body that is no file, a body shorter than its
// Content-Length, a GeoPackage that is not one, a file whose format cannot be
// told and a CSV without a geometry column each fail naming the kind and
// the cause, and leave no download behind.
func TestRefused(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/html", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<!DOCTYPE html><html><head><title>Portal maintenance</title></head></html>")
	})
	mux.HandleFunc("/short.zip", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		io.WriteString(w, "PK\x03\x04 and then nothing")
	})
	mux.HandleFunc("/x.gpkg", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "SQLite format 3\x00"+strings.Repeat("\x00", 100))
	})
	mux.HandleFunc("/x.bin", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "\x01\x02\x03 binary") })
	mux.HandleFunc("/nogeom.csv", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "a,b\n1,2\n") })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	c := file.NewClient(srv.Client(), nil, nil, file.WithTempDir(dir))
	for path, want := range map[string]string{
		"/html":       "HTML page instead of a file",
		"/short.zip":  "unexpected EOF",
		"/x.gpkg":     "gpkg: ",
		"/x.bin":      "cannot tell the format",
		"/nogeom.csv": "no geometry column",
	} {
		_, err := c.Fetch(t.Context(), layer(srv.URL+path, file.Settings{}), 0, (&collect{}).handle)
		if err == nil || !strings.HasPrefix(err.Error(), "file: ") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want %q", path, err, want)
		}
	}
	noDownloadsLeft(t, dir)
}

// TestRemovedOnPanic: a handler that panics still leaves no download.
func TestRemovedOnPanic(t *testing.T) {
	t.Parallel()
	srv := serveFiles(t, map[string]string{"x.csv": "x,y\n1,2\n"})
	dir := t.TempDir()
	c := file.NewClient(srv.Client(), nil, nil, file.WithTempDir(dir))
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the handler's panic did not come through")
			}
		}()
		c.Fetch(t.Context(), layer(srv.URL+"/x.csv", file.Settings{}), 0, func(context.Context, source.Page, feature.FeatureReader) error {
			panic("handler")
		})
	}()
	noDownloadsLeft(t, dir)
}

// TestZipOfOneFile: a zip holding one CSV (no Shapefile) is that CSV.
func TestZipOfOneFile(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	writeZip(t, &buf, "data/points.csv", "lon,lat,name\n1,2,a\n3,4,b\n")
	srv := serveFiles(t, map[string]string{"p.zip": buf.String()})
	dir := t.TempDir()
	c := file.NewClient(srv.Client(), nil, nil, file.WithTempDir(dir))
	var col collect
	if _, err := c.Fetch(t.Context(), layer(srv.URL+"/p.zip", file.Settings{}), 0, col.handle); err != nil {
		t.Fatal(err)
	}
	if len(col.props) != 2 || col.props[1] != `{"name":"b"}` {
		t.Errorf("features %v", col.props)
	}
	noDownloadsLeft(t, dir)
}

// TestZippedCSVWithFormat: format: csv on a zip (OpenAddresses'
// compression: zip) reads the CSV it holds, in the feed's encoding.
func TestZippedCSVWithFormat(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	// "서울,양천구" in EUC-KR.
	writeZip(t, &buf, "seoul.csv", "x,y,city,district\n1,2,\xbc\xad\xbf\xef,\xbe\xe7\xc3\xb5\xb1\xb8\n")
	srv := serveFiles(t, map[string]string{"k.zip": buf.String()})
	dir := t.TempDir()
	c := file.NewClient(srv.Client(), nil, nil, file.WithTempDir(dir))
	var col collect
	if _, err := c.Fetch(t.Context(), layer(srv.URL+"/k.zip", file.Settings{Format: file.FormatCSV, Encoding: "EUCKR", X: "x", Y: "y"}), 0, col.handle); err != nil {
		t.Fatal(err)
	}
	if len(col.props) != 1 || col.props[0] != `{"city":"서울","district":"양천구"}` {
		t.Errorf("features %v", col.props)
	}
	noDownloadsLeft(t, dir)
}

// TestGML: a GML file as GDAL writes one (gml:coordinates, no srsName:
// the feed's crs, else EPSG:4326, longitude first), found by its first
// byte or by format: gml, alone or zipped; its properties as text.
func TestGML(t *testing.T) {
	t.Parallel()
	doc := `<?xml version="1.0" encoding="utf-8" ?>
<ogr:FeatureCollection xmlns:ogr="http://ogr.maptools.org/" xmlns:gml="http://www.opengis.net/gml">
  <gml:featureMember>
    <ogr:lake_man fid="lake_man.0">
      <ogr:geometryProperty><gml:Point><gml:coordinates>-122.259249687194824,37.802612637607439</gml:coordinates></gml:Point></ogr:geometryProperty>
      <ogr:NUMBER>5115</ogr:NUMBER>
      <ogr:STRNAME>FRUITED PLAINS LN</ogr:STRNAME>
    </ogr:lake_man>
  </gml:featureMember>
</ogr:FeatureCollection>
`
	var zipped bytes.Buffer
	writeZip(t, &zipped, "lake-man.gml", doc)
	srv := serveFiles(t, map[string]string{"lake-man": doc, "lake-man.zip": zipped.String()})
	dir := t.TempDir()
	c := file.NewClient(srv.Client(), nil, nil, file.WithTempDir(dir))
	for _, tc := range []struct {
		name string
		s    file.Settings
	}{{"lake-man", file.Settings{}}, {"lake-man.zip", file.Settings{Format: file.FormatGML}}, {"lake-man.zip", file.Settings{}}} {
		var col collect
		if _, err := c.Fetch(t.Context(), layer(srv.URL+"/"+tc.name, tc.s), 0, col.handle); err != nil {
			t.Fatalf("%s %+v: %v", tc.name, tc.s, err)
		}
		if len(col.props) != 1 || col.props[0] != `{"NUMBER":"5115","STRNAME":"FRUITED PLAINS LN"}` {
			t.Errorf("%s: features %v", tc.name, col.props)
		}
		if p, ok := col.geoms[0].(*geom.Point); !ok || math.Abs(p.X()+122.2592497) > 1e-7 || p.SRID() != 4326 {
			t.Errorf("%s: geometry %#v", tc.name, col.geoms[0])
		}
	}
	noDownloadsLeft(t, dir)
}

// TestBOMWithContentLength: a CSV and a GeoJSON file that begin with a
// UTF-8 BOM and are served with their Content-Length (which counts the
// BOM) load; a body really cut short still fails.
func TestBOMWithContentLength(t *testing.T) {
	t.Parallel()
	const bom = "\xef\xbb\xbf"
	srv := serveFiles(t, map[string]string{
		"pts.csv":     bom + "WKT,name\n\"POINT (1 2)\",a\n\"POINT (3 4)\",b\n",
		"pts.geojson": bom + `{"type":"FeatureCollection","features":[{"type":"Feature","geometry":{"type":"Point","coordinates":[1,2]},"properties":{"a":1}}]}`,
	})
	c := file.NewClient(srv.Client(), nil, nil, file.WithTempDir(t.TempDir()))
	for name, n := range map[string]int{"pts.csv": 2, "pts.geojson": 1} {
		var col collect
		if _, err := c.Fetch(t.Context(), layer(srv.URL+"/"+name, file.Settings{}), 0, col.handle); err != nil {
			t.Errorf("%s: %v", name, err)
		} else if len(col.props) != n {
			t.Errorf("%s: %d features, want %d", name, len(col.props), n)
		}
	}
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		io.WriteString(w, bom+"WKT,name\n\"POINT (1 2)\",a\n")
	}))
	t.Cleanup(cut.Close)
	_, err := c.Fetch(t.Context(), layer(cut.URL+"/pts.csv", file.Settings{}), 0, (&collect{}).handle)
	if err == nil || !strings.Contains(err.Error(), "unexpected EOF") && !strings.Contains(err.Error(), "shorter than its Content-Length") {
		t.Errorf("a body cut short: %v", err)
	}
}

// TestCSVDuplicateColumns: a header with a column name twice keeps both
// columns, the second as NAME2 (NAME3 when NAME2 is taken), as GDAL names
// them when it writes the layer.
func TestCSVDuplicateColumns(t *testing.T) {
	t.Parallel()
	srv := serveFiles(t, map[string]string{
		"dup.csv":   "WKT,NAME,NAME\n\"POINT (1 2)\",a,b\n",
		"taken.csv": "WKT,NAME,NAME2,NAME\n\"POINT (1 2)\",a,b,c\n",
	})
	c := file.NewClient(srv.Client(), nil, nil, file.WithTempDir(t.TempDir()))
	for name, want := range map[string]string{"dup.csv": `{"NAME":"a","NAME2":"b"}`, "taken.csv": `{"NAME":"a","NAME2":"b","NAME3":"c"}`} {
		var col collect
		if _, err := c.Fetch(t.Context(), layer(srv.URL+"/"+name, file.Settings{}), 0, col.handle); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(col.props) != 1 || col.props[0] != want {
			t.Errorf("%s: properties %q, want %s", name, col.props, want)
		}
	}
}

// TestCSVErrors: a CSV's faults name the line a record starts on (a
// quoted field may run over many), the column and what is wrong, in one
// line of ingestd's words: no "parse error", no WKT parser's caret and
// hint.
func TestCSVErrors(t *testing.T) {
	t.Parallel()
	long := "id,name,WKT\n1,a,POINT (1 2)\n2,\"a note\n" + strings.Repeat("that goes on\n", 20) + "and \"ends\" badly\",POINT (1 2)\n"
	srv := serveFiles(t, map[string]string{
		"wkt.csv":    "id,WKT\n1,POINT (1 2)\n2,POINT (1\n",
		"ring.csv":   "id,WKT\n1,\"POLYGON ((0 0, 1 0, 1 1))\"\n",
		"long.csv":   long,
		"ragged.csv": "id,name,WKT\n1,a,POINT (1 2)\n2,POINT (1 2)\n",
		"later.csv":  "id,name,WKT\n1,\"two\nlines\",POINT (1 2)\n2,b,POINT (1\n",
	})
	c := file.NewClient(srv.Client(), nil, nil, file.WithTempDir(t.TempDir()))
	for name, want := range map[string]string{
		"wkt.csv":    "line 3, column WKT: not a WKT geometry (not enough coordinates, at character 8): \"POINT (1\"",
		"ring.csv":   "line 2, column WKT: not a WKT geometry (polygon ring doesn't have enough points",
		"long.csv":   "the record starting on line 3: its quoted field runs on to line 24, column 5",
		"ragged.csv": "line 3: 2 fields where the header has 3",
		"later.csv":  "line 4, column WKT",
	} {
		_, err := c.Fetch(t.Context(), layer(srv.URL+"/"+name, file.Settings{}), 0, (&collect{}).handle)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v\nwant %q", name, err, want)
			continue
		}
		for _, leak := range []string{"\n", "parse error", "HINT", "syntax error"} {
			if strings.Contains(err.Error(), leak) {
				t.Errorf("%s: %q in %q", name, leak, err)
			}
		}
	}
}
