package main

import (
	"archive/zip"
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/arcgis/arcgistest"
	"github.com/ingestd/ingestd/encoding/esrijson"
	"github.com/ingestd/ingestd/internal/interoptest"
)

// oaFixtures is batch-machine's folder of conform fixtures, copied with
// its licence (testdata/openaddresses/README.md).
const oaFixtures = "../../testdata/openaddresses/conforms"

// oaRow is one conformed address as batch-machine's TestConformCli checks
// it: number and street (unchecked: one it does not check), the point
// where it checks one (to four decimal places, its
// assertAlmostEqual(places=4)).
type oaRow struct {
	number, street string
	lon, lat       float64 // NaN: not checked
}

// unchecked is a number or street that batch-machine does not check.
const unchecked = "\x00unchecked"

// xy is a row whose point is checked.
func xy(number, street string, lon, lat float64) oaRow { return oaRow{number, street, lon, lat} }

// ns is a row whose point is not checked.
func ns(number, street string) oaRow { return oaRow{number, street, math.NaN(), math.NaN()} }

// lakeMan is the six rows batch-machine expects of the lake-man Shapefile,
// its File Geodatabase and its GeoPackage alike.
var lakeMan = []oaRow{
	xy("5115", "FRUITED PLAINS LN", -122.2592497, 37.8026126),
	ns("5121", "FRUITED PLAINS LN"), ns("5133", "FRUITED PLAINS LN"), ns("5126", "FRUITED PLAINS LN"),
	ns("5120", "FRUITED PLAINS LN"), ns("5115", "OLD MILL RD"),
}

// TestOpenAddressesFixtures: batch-machine's own conform fixtures, each
// source imported by `ingestd import openaddresses` (its data URL pointed
// at lighttpd, which serves the fixture file), polled by `ingestd poll`
// into common.addresses on the real PostGIS. Every row is what
// batch-machine's TestConformCli expects of it: number, street and, where
// it checks one, the point to four decimal places; and every record of
// the file is a row.
//
// Where it differs from batch-machine, and why:
//   - lake-man-gml's point: batch-machine expects latitude and longitude
//     swapped (GDAL 3 reads srs: EPSG:4326 in its authority's axis order,
//     latitude first, where the file's gml:coordinates are longitude
//     first); ingestd keeps the point where the file puts it, which is
//     where the same address lies in every other lake-man fixture.
//   - lake-man-split2 is an ESRI source whose file is batch-machine's CSV
//     cache of the ArcGIS layer; its rows are served here as that layer
//     (package arcgistest on loopback, the CSV's OA:x and OA:y its points
//     in EPSG:4326), so that the import makes the kind arcgis feed it
//     makes of an ESRI source.
func TestOpenAddressesFixtures(t *testing.T) {
	t.Parallel()
	part := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(oaFixtures, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	shp := func(stem string, exts ...string) []byte {
		var entries []any
		for _, ext := range exts {
			entries = append(entries, stem+ext, part(stem+ext))
		}
		return zipEntries(t, entries...)
	}
	gdb := func() []byte {
		var entries []any
		des, err := os.ReadDir(filepath.Join(oaFixtures, "lake-man-gdb.gdb"))
		if err != nil {
			t.Fatal(err)
		}
		for _, de := range des {
			entries = append(entries, "lake-man-gdb.gdb/"+de.Name(), part("lake-man-gdb.gdb/"+de.Name()))
		}
		return zipEntries(t, entries...)
	}
	esri := arcgistest.New()
	esri.AddLayer("lake-man-split2", esriLayer(t, part("lake-man-split2.csv")))
	esriSrv := httptest.NewServer(esri) // loopback only
	t.Cleanup(esriSrv.Close)
	cases := []struct {
		source string // the fixture's source JSON, without .json
		data   string // its data URL in the JSON, pointed at served
		served string // the file lighttpd serves for it ("": an ESRI layer)
		body   []byte
		rows   []oaRow
		count  int // the rows the file holds
	}{
		{"lake-man", "http://fake-web/lake-man.zip", "lake-man.zip", part("lake-man.zip"), lakeMan, 6},
		{"lake-man-gdb", "http://fake-web/lake-man.gdb.zip", "lake-man.gdb.zip", gdb(), lakeMan, 6},
		{"lake-man-gpkg", "http://fake-web/lake-man.gpkg", "lake-man.gpkg", part("lake-man.gpkg"), lakeMan, 6},
		{"lake-man-split", "http://fake-web/lake-man-split.zip", "lake-man-split.zip", shp("lake-man-split", ".shp", ".shx", ".dbf", ".prj"), []oaRow{
			ns("915", "EDWARD AVE"), ns("3273", "PETER ST"), ns("976", "FORD BLVD"),
			ns("7055", "ST ROSE AVE"), ns("534", "WALLACE AVE"), ns("531", "SCOFIELD AVE"),
		}, 6},
		{"lake-man-merge-postcode", "http://fake-web/lake-man-merge-postcode.zip", "lake-man-merge-postcode.zip", shp("lake-man-merge-postcode", ".shp", ".shx", ".dbf", ".prj"), []oaRow{
			ns("35845", "EKLUTNA LAKE RD"), ns("35850", "EKLUTNA LAKE RD"), ns("35900", "EKLUTNA LAKE RD"),
			ns("35870", "EKLUTNA LAKE RD"), ns("32551", "EKLUTNA LAKE RD"), ns("31401", "EKLUTNA LAKE RD"),
		}, 6},
		{"lake-man-merge-postcode2", "http://fake-web/lake-man-merge-postcode2.zip", "lake-man-merge-postcode2.zip", shp("lake-man-merge-postcode2", ".shp", ".shx", ".dbf", ".prj"), []oaRow{
			ns("85", "MAITLAND DR"), ns("81", "MAITLAND DR"), ns("92", "MAITLAND DR"),
			ns("92", "MAITLAND DR"), ns("92", "MAITLAND DR"), ns("92", "MAITLAND DR"),
		}, 6},
		// batch-machine checks the street of the first row only.
		{"lake-man-utf8", "http://fake-web/lake-man-utf8", "lake-man-utf8", shp("lake-man-utf8", ".shp", ".shx", ".dbf", ".prj"), []oaRow{
			ns(unchecked, "PZ ESPAÑA"),
		}, 6},
		// The same points in EPSG:26943, with the .prj and without it
		// (srs: in the source); the point of the first row only.
		{"lake-man-epsg26943", "http://fake-web/lake-man-epsg26943.zip", "lake-man-epsg26943.zip", shp("lake-man-epsg26943", ".shp", ".shx", ".dbf", ".prj"), []oaRow{
			xy(unchecked, unchecked, -122.2592497, 37.8026126),
		}, 6},
		{"lake-man-epsg26943-noprj", "http://fake-web/lake-man-epsg26943.zip", "lake-man-epsg26943-noprj.zip", shp("lake-man-epsg26943-noprj", ".shp", ".shx", ".dbf"), []oaRow{
			xy(unchecked, unchecked, -122.2592497, 37.8026126),
		}, 6},
		// A CSV in EPSG:3740, named without an extension.
		{"lake-man-3740", "http://fake-web/lake-man-3740", "lake-man-3740", part("lake-man-3740.csv"), []oaRow{
			xy("5", "PZ ESPAÑA", -122.2592495, 37.8026123),
		}, 6},
		// GML (format xml), zipped as its source says; batch-machine's
		// point with its axes put back (above).
		{"lake-man-gml", "http://fake-web/lake-man.zip", "lake-man-gml.zip", zipEntries(t, "lake-man-gml.gml", part("lake-man-gml.gml")), []oaRow{
			xy("5115", "FRUITED PLAINS LN", -122.2592497, 37.8026126),
		}, 6},
		// A zipped CSV in Shift_JIS (the catalog's SHIFT_JISX0213) in
		// JGD2000 (EPSG:4612): batch-machine checks two rows; the five
		// are those of jp-nara-node-output.csv, OpenAddresses' earlier
		// machine's output, whose points are the CSV's own (JGD2000 is
		// WGS 84 to well within four decimal places).
		{"jp-nara", "https://data.openaddresses.io/cache/jp-nara.zip", "jp-nara.zip", zipEntries(t, "jp-nara.csv", part("jp-nara.csv")), []oaRow{
			xy("2543-6", "針町", 135.955104, 34.607832),
			xy("202-6", "法華寺町", 135.806741, 34.688534), xy("203-6", "法華寺町", 135.806741, 34.688534),
			xy("205-6", "法華寺町", 135.806741, 34.688534), xy("208-6", "法華寺町", 135.806741, 34.688534),
		}, 5},
		// An ESRI source, served as an ArcGIS layer (above).
		{"lake-man-split2", "http://fake-web/lake-man-split2", "", nil, []oaRow{
			xy("1", "Spectrum Pointe Dr #320", -122.25925, 37.802613), ns("", ""), ns("300", "E Chapman Ave"),
			ns("1", "Spectrum Pointe Dr #320"), ns("1", "Spectrum Pointe Dr #320"), ns("1", "Spectrum Pointe Dr #320"),
		}, 6},
	}
	files := map[string][]byte{}
	for _, c := range cases {
		if c.served != "" {
			files[c.served] = c.body
		}
	}
	base := interoptest.Served(t, "openaddresses-", files)

	// The sources as the catalog has them, but for the data URL.
	src := filepath.Join(t.TempDir(), "sources")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		js := part(c.source + ".json")
		quoted := fmt.Sprintf("%q", c.data)
		if bytes.Count(js, []byte(quoted)) != 1 {
			t.Fatalf("%s.json: data %s not found once", c.source, quoted)
		}
		u := base + "/" + c.served
		if c.served == "" {
			u = arcgistest.URL(esriSrv.URL, c.source)
		}
		js = bytes.Replace(js, []byte(quoted), []byte(fmt.Sprintf("%q", u)), 1)
		if err := os.WriteFile(filepath.Join(src, c.source+".json"), js, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfgPath := filepath.Join(t.TempDir(), "oa.yaml")
	code, stdout, stderr := runCLI(t, "import", "openaddresses", "-o", cfgPath, src)
	if code != 0 {
		t.Fatalf("import: exit %d\n%s%s", code, stdout, stderr)
	}
	t.Logf("import tally:\n%s", stderr)
	if code, stdout, stderr := runCLI(t, "validate", "-config", cfgPath); code != 0 {
		t.Fatalf("validate: exit %d\n%s%s", code, stdout, stderr)
	}

	dbURL, pool := testDBFor(t, ingestdConns)
	for _, c := range cases {
		t.Run(c.source, func(t *testing.T) {
			feed := c.source + "/addresses-default"
			if code, stdout, stderr := runCLI(t, "poll", "-config", cfgPath, "-database-url", dbURL, feed); code != 0 {
				t.Fatalf("poll %s: exit %d\nstdout: %s\nstderr: %s", feed, code, stdout, stderr)
			}
			rows, err := pool.Query(t.Context(), `SELECT coalesce(number, ''), coalesce(street, ''), ST_X(geom), ST_Y(geom), ST_SRID(geom)
				FROM common.addresses WHERE jurisdiction = $1 AND feed = 'addresses-default'`, c.source)
			if err != nil {
				t.Fatal(err)
			}
			var got []oaRow
			for rows.Next() {
				var r oaRow
				var srid int
				if err := rows.Scan(&r.number, &r.street, &r.lon, &r.lat, &srid); err != nil {
					t.Fatal(err)
				}
				if srid != 4326 {
					t.Errorf("a row in SRID %d", srid)
				}
				got = append(got, r)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if len(got) != c.count {
				t.Errorf("%d rows in common.addresses, want %d", len(got), c.count)
			}
			// A feature of a file without id_property is identified by
			// its content, not its place in the file, so each expected row
			// takes a row of its own that matches it, the fullest
			// expectations first.
			want := slices.Clone(c.rows)
			slices.SortStableFunc(want, func(a, b oaRow) int { return b.checks() - a.checks() })
			used := make([]bool, len(got))
			for _, w := range want {
				i := slices.IndexFunc(got, func(g oaRow) bool { return w.matches(g) })
				for i >= 0 && used[i] {
					j := slices.IndexFunc(got[i+1:], func(g oaRow) bool { return w.matches(g) })
					if j < 0 {
						i = -1
						break
					}
					i += 1 + j
				}
				if i < 0 {
					t.Errorf("no row %s among\n%s", w, oaRows(got))
					continue
				}
				used[i] = true
			}
		})
	}
}

// checks counts what batch-machine checks of a row.
func (r oaRow) checks() int {
	n := 0
	if r.number != unchecked {
		n++
	}
	if r.street != unchecked {
		n++
	}
	if !math.IsNaN(r.lon) {
		n++
	}
	return n
}

// matches reports whether g is the row r expects: the same number and
// street where checked, the point within batch-machine's four decimal
// places where checked.
func (r oaRow) matches(g oaRow) bool {
	return (r.number == unchecked || g.number == r.number) && (r.street == unchecked || g.street == r.street) &&
		(math.IsNaN(r.lon) || math.Abs(g.lon-r.lon) < 5e-5 && math.Abs(g.lat-r.lat) < 5e-5)
}

func (r oaRow) String() string {
	s := fmt.Sprintf("number %q street %q", r.number, r.street)
	if !math.IsNaN(r.lon) {
		s += fmt.Sprintf(" POINT (%.7f %.7f)", r.lon, r.lat)
	}
	return strings.ReplaceAll(s, fmt.Sprintf("%q", unchecked), "(any)")
}

func oaRows(rows []oaRow) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "\t%s\n", r)
	}
	return b.String()
}

// esriLayer is batch-machine's CSV cache of an ArcGIS layer as that
// layer: its OBJECTID the object id, its point OA:x, OA:y in EPSG:4326
// (oa:geom, their WKT, left out), every other column a string field.
func esriLayer(t *testing.T, data []byte) *arcgistest.Layer {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	l := &arcgistest.Layer{GeometryType: "esriGeometryPoint", WKID: 4326}
	header := recs[0]
	x, y, oid := slices.Index(header, "OA:x"), slices.Index(header, "OA:y"), slices.Index(header, "OBJECTID")
	for i, h := range header {
		if i != x && i != y && i != oid && h != "oa:geom" {
			l.Fields = append(l.Fields, esrijson.Field{Name: h, Type: "esriFieldTypeString"})
		}
	}
	for n, rec := range recs[1:] {
		id, err := strconv.ParseInt(rec[oid], 10, 64)
		if err != nil {
			t.Fatalf("row %d: OBJECTID %q", n+1, rec[oid])
		}
		ft := arcgistest.Feature{OID: id, Attributes: map[string]any{}}
		for _, f := range l.Fields {
			ft.Attributes[f.Name] = rec[slices.Index(header, f.Name)]
		}
		lon, errX := strconv.ParseFloat(rec[x], 64)
		lat, errY := strconv.ParseFloat(rec[y], 64)
		if errX != nil || errY != nil {
			t.Fatalf("row %d: OA:x %q, OA:y %q", n+1, rec[x], rec[y])
		}
		ft.Geometry = map[string]float64{"x": lon, "y": lat}
		l.Features = append(l.Features, ft)
	}
	return l
}

// zipEntries zips entries (name, bytes, name, bytes, …) in that order.
func zipEntries(t *testing.T, entries ...any) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := 0; i < len(entries); i += 2 {
		w, err := zw.Create(entries[i].(string))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(entries[i+1].([]byte)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
