// Package interop_test checks kind file against files GDAL writes at test
// time from real data, the North Carolina counties of r-cran-sf's nc.gpkg
// (100 multipolygons, NAD27), served by the lighttpd that
// scripts/mapserver.sh starts (the files are put in its document root):
// a zipped Shapefile in NAD27 (its .prj in Esri's dialect, in a folder
// inside the zip) and a CSV with a WKT column. Each must load complete,
// every county equal to GDAL's own reading of the same file loaded by
// ogr2ogr into the same database (relative area ≤ 1e-6, centroid ≤ 0.01 m
// in UTM 17N, GDAL's NAD27 taken to WGS 84 first as the store takes
// ingestd's: PROJ's direct NAD27 → UTM 17N pipeline differs from it by
// about 1 cm), its typed columns those
// ogrinfo reads (Integer and Integer64 are both bigint). A truncated zip, a
// zip bomb, a .shp without its .shx or .dbf and a zip of two layers
// without layer: each fail naming the cause with nothing applied; a DBF in
// Latin-1 with a .cpg loads with the right text; a second poll of the
// unchanged file changes nothing; no download is left on disk.
//
// Like the other interop tests, these skip when the server or GDAL is
// missing, except under CI=true, where they fail.
package interop_test

import (
	"archive/zip"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/internal/interoptest"
	"github.com/ingestd/ingestd/internal/interoptest/polltest"
	"github.com/ingestd/ingestd/migrations/pgtest"
)

const (
	maxAreaRel   = 1e-6
	maxCentroidM = 0.01
	wantCounties = 100
)

// zipOf zips files (name in the zip → bytes) in the order given.
func zipOf(t *testing.T, entries ...any) []byte {
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

func read(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fixture is the served files, the database and a manager over them.
type fixture struct {
	gen  string // where GDAL wrote the files
	pool *pgxpool.Pool
	mgr  *feeds.Manager
	tmp  string // the downloads' temporary folder (TMPDIR)
}

// generate writes the test's files with GDAL: the counties as a Shapefile
// in NAD27 and as a CSV with WKT, and two Latin-1 places as a Shapefile
// with a .cpg.
func generate(t *testing.T, gpkg string) string {
	gen := t.TempDir()
	env := os.Environ()
	interoptest.GDAL(t, env, "ogr2ogr", "-f", "ESRI Shapefile", "-t_srs", "EPSG:4267", filepath.Join(gen, "nc.shp"), gpkg, "nc.gpkg")
	interoptest.GDAL(t, env, "ogr2ogr", "-f", "CSV", "-lco", "GEOMETRY=AS_WKT", filepath.Join(gen, "nc.csv"), gpkg, "nc.gpkg")
	// A GeoPackage of two layers (the counties in NAD27 and in WGS 84),
	// and a FlatGeobuf.
	two := filepath.Join(gen, "two.gpkg")
	interoptest.GDAL(t, env, "ogr2ogr", "-f", "GPKG", "-t_srs", "EPSG:4267", "-nln", "counties_nad27", two, gpkg, "nc.gpkg")
	interoptest.GDAL(t, env, "ogr2ogr", "-f", "GPKG", "-update", "-t_srs", "EPSG:4326", "-nln", "counties", two, gpkg, "nc.gpkg")
	interoptest.GDAL(t, env, "ogr2ogr", "-f", "FlatGeobuf", filepath.Join(gen, "nc.fgb"), gpkg, "nc.gpkg")
	places := `{"type":"FeatureCollection","features":[
{"type":"Feature","properties":{"NAME":"Peñasco","NOTE":"Zoë Müller"},"geometry":{"type":"Point","coordinates":[-105.7,36.2]}},
{"type":"Feature","properties":{"NAME":"Cañon","NOTE":"façade"},"geometry":{"type":"Point","coordinates":[-105.1,36.1]}}]}`
	if err := os.WriteFile(filepath.Join(gen, "places.geojson"), []byte(places), 0o644); err != nil {
		t.Fatal(err)
	}
	interoptest.GDAL(t, env, "ogr2ogr", "-f", "ESRI Shapefile", "-lco", "ENCODING=ISO-8859-1", filepath.Join(gen, "places.shp"), filepath.Join(gen, "places.geojson"))
	if cpg := string(read(t, filepath.Join(gen, "places.cpg"))); !strings.Contains(cpg, "8859-1") {
		t.Fatalf("GDAL wrote .cpg %q, want ISO-8859-1", cpg)
	}
	return gen
}

func setup(t *testing.T) *fixture {
	gpkg := interoptest.NCGpkg(t)
	gen := generate(t, gpkg)
	part := func(stem, ext string) []byte { return read(t, filepath.Join(gen, stem+ext)) }
	nc := func(dir string) []any {
		return []any{dir + "nc.shp", part("nc", ".shp"), dir + "nc.shx", part("nc", ".shx"), dir + "nc.dbf", part("nc", ".dbf"), dir + "nc.prj", part("nc", ".prj")}
	}
	ncZip := zipOf(t, nc("counties/")...)
	two := zipOf(t, append(nc(""), "nc_copy.shp", part("nc", ".shp"), "nc_copy.shx", part("nc", ".shx"), "nc_copy.dbf", part("nc", ".dbf"), "nc_copy.prj", part("nc", ".prj"))...)
	noSHX := zipOf(t, "nc.shp", part("nc", ".shp"), "nc.dbf", part("nc", ".dbf"), "nc.prj", part("nc", ".prj"))
	noDBF := zipOf(t, "nc.shp", part("nc", ".shp"), "nc.shx", part("nc", ".shx"), "nc.prj", part("nc", ".prj"))
	bomb := zipOf(t, "nc.shp", make([]byte, 64<<20), "nc.shx", part("nc", ".shx"), "nc.dbf", part("nc", ".dbf"))
	latin1 := zipOf(t, "places.shp", part("places", ".shp"), "places.shx", part("places", ".shx"), "places.dbf", part("places", ".dbf"),
		"places.prj", part("places", ".prj"), "places.cpg", part("places", ".cpg"))
	if err := os.WriteFile(filepath.Join(gen, "nc.zip"), ncZip, 0o644); err != nil {
		t.Fatal(err)
	}
	base := interoptest.Served(t, "filekind-", map[string][]byte{
		"nc.zip": ncZip, "nc.csv": part("nc", ".csv"), "two.zip": two, "truncated.zip": ncZip[:len(ncZip)*2/3],
		"noshx.zip": noSHX, "nodbf.zip": noDBF, "bomb.zip": bomb, "latin1.zip": latin1,
		"two.gpkg": part("two", ".gpkg"), "nc.fgb": part("nc", ".fgb"), "notgpkg.gpkg": []byte("SQLite format 3\x00 but no database"),
	})
	yaml := fmt.Sprintf(`
jurisdictions:
  - id: nc
    feeds:
      - {id: shp, kind: file, url: %[1]s/nc.zip, id_property: FIPS}
      - {id: csv, kind: file, url: %[1]s/nc.csv, crs: "EPSG:4267", id_property: FIPS}
      - {id: two, kind: file, url: %[1]s/two.zip}
      - {id: two_layer, kind: file, url: %[1]s/two.zip, layer: nc_copy, id_property: FIPS}
      - {id: truncated, kind: file, url: %[1]s/truncated.zip}
      - {id: noshx, kind: file, url: %[1]s/noshx.zip}
      - {id: nodbf, kind: file, url: %[1]s/nodbf.zip}
      - {id: bomb, kind: file, url: %[1]s/bomb.zip, limits: {body_bytes: 16000000}}
      - {id: latin1, kind: file, url: %[1]s/latin1.zip}
      - {id: gpkg, kind: file, url: %[1]s/two.gpkg, layer: counties_nad27, id_property: FIPS}
      - {id: gpkg_two, kind: file, url: %[1]s/two.gpkg}
      - {id: notgpkg, kind: file, url: %[1]s/notgpkg.gpkg}
      - {id: fgb, kind: file, url: %[1]s/nc.fgb, id_property: FIPS}
`, base)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where the downloads go (os.TempDir)
	pool := pgtest.Pool(t)
	mgr, _ := polltest.Manager(t, pool, "interop.yaml", yaml, nil)
	return &fixture{gen: gen, pool: pool, mgr: mgr, tmp: tmp}
}

// TestFileKindAgainstGDAL is the whole check; its subtests share the
// served files and the database.
func TestFileKindAgainstGDAL(t *testing.T) {
	f := setup(t)
	interoptest.OGR2OGR(t, f.pool, "/vsizip/"+filepath.Join(f.gen, "nc.zip")+"/counties/nc.shp", "-nln", "gdal_shp", "-lco", "GEOMETRY_NAME=geom", "-nlt", "GEOMETRY")
	interoptest.OGR2OGR(t, f.pool, filepath.Join(f.gen, "nc.csv"), "-nln", "gdal_csv", "-a_srs", "EPSG:4267", "-lco", "GEOMETRY_NAME=geom", "-nlt", "GEOMETRY")

	t.Run("zipped Shapefile in NAD27", func(t *testing.T) {
		f.loadsLikeGDAL(t, "shp", "gdal_shp")
		f.typesLikeOGRInfo(t, "shp", map[string]string{"Integer": "bigint", "Integer64": "bigint", "Real": "double precision", "String": "text", "Date": "date"},
			"/vsizip/"+filepath.Join(f.gen, "nc.zip")+"/counties/nc.shp")
		// A finding: Debian's lighttpd 1.4.69 sends neither ETag nor
		// Last-Modified for static files, so the second poll downloads
		// the file again and changes nothing; the 304 is tested against
		// net/http's file server (download's TestConditional).
		res, err := f.mgr.Poll(t.Context(), "nc/shp")
		if err != nil || res.Unchanged != wantCounties || res.Added+res.Modified+res.Removed != 0 {
			t.Errorf("second poll of the unchanged file: %+v, %v; want %d unchanged", res, err, wantCounties)
		}
	})
	t.Run("CSV with WKT", func(t *testing.T) {
		f.loadsLikeGDAL(t, "csv", "gdal_csv")
		// GDAL reads every CSV column as String unless asked to guess;
		// ingestd infers from the values: compare with GDAL's guess,
		// where Real is numeric (integers and decimals).
		f.typesLikeOGRInfo(t, "csv", map[string]string{"Integer": "bigint", "Integer64": "bigint", "Real": "numeric", "String": "text"},
			"-oo", "AUTODETECT_TYPE=YES", filepath.Join(f.gen, "nc.csv"))
	})
	interoptest.OGR2OGR(t, f.pool, filepath.Join(f.gen, "two.gpkg"), "counties_nad27", "-nln", "gdal_gpkg", "-lco", "GEOMETRY_NAME=geom", "-nlt", "GEOMETRY")
	interoptest.OGR2OGR(t, f.pool, filepath.Join(f.gen, "nc.fgb"), "-nln", "gdal_fgb", "-lco", "GEOMETRY_NAME=geom", "-nlt", "GEOMETRY")
	t.Run("GeoPackage layer in NAD27", func(t *testing.T) {
		f.loadsLikeGDAL(t, "gpkg", "gdal_gpkg")
		f.typesLikeOGRInfo(t, "gpkg", map[string]string{"Integer": "bigint", "Integer64": "bigint", "Real": "double precision", "String": "text", "Date": "date"},
			filepath.Join(f.gen, "two.gpkg"), "counties_nad27")
	})
	t.Run("FlatGeobuf", func(t *testing.T) {
		f.loadsLikeGDAL(t, "fgb", "gdal_fgb")
		f.typesLikeOGRInfo(t, "fgb", map[string]string{"Integer": "bigint", "Integer64": "bigint", "Real": "double precision", "String": "text", "Date": "date"},
			filepath.Join(f.gen, "nc.fgb"))
	})
	t.Run("layer: chooses among two", func(t *testing.T) {
		if _, err := f.mgr.Poll(t.Context(), "nc/two_layer"); err != nil {
			t.Fatal(err)
		}
		if n := f.count(t, "two_layer"); n != wantCounties {
			t.Errorf("%d features, want %d", n, wantCounties)
		}
	})
	for _, tc := range []struct{ feed, cause string }{
		{"two", "holds 2 Shapefiles (nc, nc_copy): choose one with layer:"},
		{"truncated", "the zip is damaged or cut short"},
		{"noshx", "has no .shx beside it"},
		{"nodbf", "has no .dbf beside it"},
		{"bomb", "zip bomb"},
		{"gpkg_two", "counties"},
		{"notgpkg", "gpkg: "},
	} {
		t.Run("refused: "+tc.feed, func(t *testing.T) {
			_, err := f.mgr.Poll(t.Context(), "nc/"+tc.feed)
			if err == nil || !strings.Contains(err.Error(), tc.cause) || !strings.Contains(err.Error(), "nc/"+tc.feed) {
				t.Fatalf("poll: %v; want it to name the feed and %q", err, tc.cause)
			}
			t.Logf("%v", err)
			if n := f.count(t, tc.feed); n != 0 {
				t.Errorf("%d features applied from a refused poll", n)
			}
		})
	}
	t.Run("Latin-1 DBF with a .cpg", func(t *testing.T) {
		if _, err := f.mgr.Poll(t.Context(), "nc/latin1"); err != nil {
			t.Fatal(err)
		}
		var names string
		if err := f.pool.QueryRow(t.Context(), `SELECT string_agg((properties->>'NAME') || '/' || (properties->>'NOTE'), ',' ORDER BY properties->>'NAME')
			FROM features WHERE jurisdiction = 'nc' AND feed = 'latin1'`).Scan(&names); err != nil {
			t.Fatal(err)
		}
		if names != "Cañon/façade,Peñasco/Zoë Müller" {
			t.Errorf("names %q, want them decoded from ISO-8859-1", names)
		}
	})
	left, _ := filepath.Glob(filepath.Join(f.tmp, "ingestd-file-*"))
	if len(left) > 0 {
		t.Errorf("downloads left on disk: %v", left)
	}
}

func (f *fixture) count(t *testing.T, feed string) int {
	t.Helper()
	var n int
	if err := f.pool.QueryRow(t.Context(), `SELECT count(*) FROM features WHERE jurisdiction = 'nc' AND feed = $1`, feed).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// loadsLikeGDAL polls feed and compares every county with GDAL's reading
// of the same file (table gdal), joined on FIPS.
func (f *fixture) loadsLikeGDAL(t *testing.T, feed, gdal string) {
	t.Helper()
	ctx := t.Context()
	if _, err := f.mgr.Poll(ctx, "nc/"+feed); err != nil {
		t.Fatal(err)
	}
	var rows, matched int
	var worstArea, worstCentroid float64
	err := f.pool.QueryRow(ctx, fmt.Sprintf(`
		SELECT (SELECT count(*) FROM features WHERE jurisdiction = 'nc' AND feed = $1), count(*),
			coalesce(max(abs(ST_Area(ST_Transform(f.geom, 32617)) - ST_Area(ST_Transform(g.geom, 32617))) / ST_Area(ST_Transform(g.geom, 32617))), 1),
			coalesce(max(ST_Distance(ST_Transform(ST_Centroid(f.geom), 32617), ST_Transform(ST_Centroid(ST_Transform(g.geom, 4326)), 32617))), 1e9)
		FROM features f JOIN %s g ON g.fips::text = f.feature_id
		WHERE f.jurisdiction = 'nc' AND f.feed = $1`, gdal), feed).Scan(&rows, &matched, &worstArea, &worstCentroid)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d features, %d matched GDAL's; worst relative area %.3g, worst centroid %.5f m", feed, rows, matched, worstArea, worstCentroid)
	if rows != wantCounties || matched != wantCounties {
		t.Errorf("%d features stored, %d matched GDAL's reading; want %d", rows, matched, wantCounties)
	}
	if worstArea > maxAreaRel || worstCentroid > maxCentroidM {
		t.Errorf("a county differs from GDAL's reading: relative area %.3g (max %g), centroid %.4f m (max %g)", worstArea, maxAreaRel, worstCentroid, maxCentroidM)
	}
}

// ogrField is a field line of ogrinfo -so: "NAME: String (80.0)".
var ogrField = regexp.MustCompile(`(?m)^([A-Za-z_][A-Za-z0-9_]*): (Integer64|Integer|Real|String|Date|DateTime)\b`)

// typesLikeOGRInfo compares feed's typed columns with the field types
// ogrinfo reads from the file (args), mapped by want; GDAL's WKT column
// of a CSV is the geometry, not a column.
func (f *fixture) typesLikeOGRInfo(t *testing.T, feed string, want map[string]string, args ...string) {
	t.Helper()
	out := interoptest.GDAL(t, os.Environ(), "ogrinfo", append([]string{"-so", "-al", "-ro"}, args...)...)
	rows, err := f.pool.Query(t.Context(), `SELECT name, type FROM feed_columns WHERE jurisdiction = 'nc' AND feed = $1 AND removed_at IS NULL`, feed)
	if err != nil {
		t.Fatal(err)
	}
	got := make(map[string]string)
	for rows.Next() {
		var n, ty string
		if err := rows.Scan(&n, &ty); err != nil {
			t.Fatal(err)
		}
		got[n] = ty
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	fields := ogrField.FindAllStringSubmatch(string(out), -1)
	compared := 0
	for _, m := range fields {
		name, ogr := m[1], m[2]
		if name == "WKT" {
			continue
		}
		compared++
		if got[name] != want[ogr] {
			t.Errorf("column %s: %q in the typed view, ogrinfo reads %s (want %q)", name, got[name], ogr, want[ogr])
		}
	}
	if compared == 0 || compared != len(got) {
		t.Errorf("compared %d of ogrinfo's fields with %d typed columns (%v)\n%s", compared, len(got), got, out)
	}
}
