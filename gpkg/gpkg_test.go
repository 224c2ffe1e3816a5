package gpkg_test

import (
	"database/sql"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/gpkg"
	"github.com/ingestd/ingestd/internal/gdaltest"
	"github.com/ingestd/ingestd/internal/interoptest"
)

// twoLayers writes nc.gpkg's counties into a GeoPackage of two layers:
// all of them, and those west of -80° (ogr2ogr -update -nln).
func twoLayers(t *testing.T) string {
	t.Helper()
	nc := interoptest.NCGpkg(t)
	path := filepath.Join(t.TempDir(), "two.gpkg")
	gdaltest.OGR2OGR(t, "-f", "GPKG", path, nc, "-nln", "counties")
	gdaltest.OGR2OGR(t, "-update", path, nc, "-nln", "west", "-spat", "-85", "33", "-80", "37")
	return path
}

func TestMatchesGDAL(t *testing.T) {
	path := twoLayers(t)
	layers, err := gpkg.Layers(path)
	if err != nil || !slices.Equal(layers, []string{"counties", "west"}) {
		t.Fatalf("Layers: %v, %v; want [counties west]", layers, err)
	}
	if _, err := gpkg.Open(path, gpkg.Options{}); err == nil || !strings.Contains(err.Error(), `"counties", "west"`) {
		t.Errorf("Open without a layer: %v; want an error listing both", err)
	}
	if _, err := gpkg.Open(path, gpkg.Options{Layer: "east"}); err == nil || !strings.Contains(err.Error(), `no layer "east"`) {
		t.Errorf("Open of a missing layer: %v", err)
	}
	counts := map[string]int{}
	for _, layer := range layers {
		r, err := gpkg.Open(path, gpkg.Options{Layer: layer})
		if err != nil {
			t.Fatal(err)
		}
		if r.SRID() != 4267 {
			t.Errorf("%s: SRID %d, want 4267 (NAD27)", layer, r.SRID())
		}
		gdaltest.CheckDeclared(t, r.Declared(), path, layer)
		if r.Declared().Geometry != "MultiPolygon" {
			t.Errorf("%s: declared geometry %q", layer, r.Declared().Geometry)
		}
		counts[layer] = gdaltest.Compare(t, r, path, layer, 4267)
		r.Close()
	}
	if counts["counties"] != 100 || counts["west"] == 0 || counts["west"] >= 100 {
		t.Errorf("features per layer %v; want 100 counties and fewer west", counts)
	}
}

// TestIDs: the fid is the id unless a column is named for it.
func TestIDs(t *testing.T) {
	path := twoLayers(t)
	r, err := gpkg.Open(path, gpkg.Options{Layer: "counties"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := r.Next()
	if err != nil || f.ID != "1" {
		t.Fatalf("first feature's id %q, %v; want the fid 1", f.ID, err)
	}
	r.Close()
	r, err = gpkg.Open(path, gpkg.Options{Layer: "counties", IDProperty: "FIPS"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if f, err := r.Next(); err != nil || len(f.ID) != 5 || !strings.HasPrefix(f.ID, "37") {
		t.Fatalf("id by FIPS: %q, %v", f.ID, err)
	}
	fid, err := gpkg.Open(path, gpkg.Options{Layer: "counties", IDProperty: "fid"})
	if err != nil {
		t.Fatalf("the fid named as the id column: %v", err)
	}
	if f, err := fid.Next(); err != nil || f.ID != "1" {
		t.Errorf("id by fid: %q, %v", f.ID, err)
	}
	fid.Close()
	if _, err := gpkg.Open(path, gpkg.Options{Layer: "counties", IDProperty: "nope"}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("id column missing: %v", err)
	}
}

// exec runs statements on a copy of the GeoPackage (written as a plain
// SQLite database) and returns the copy's path.
func exec(t *testing.T, src string, stmts ...string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "edited.gpkg")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// GDAL's R-tree triggers call SpatiaLite's functions, which this
	// SQLite lacks; the edits need no index.
	var triggers []string
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'trigger'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		rows.Scan(&name)
		triggers = append(triggers, `DROP TRIGGER "`+name+`"`)
	}
	rows.Close()
	for _, s := range append(triggers, stmts...) {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return path
}

// readAll reads every feature and returns the first error.
func readAll(path string, opts gpkg.Options) error {
	return gdaltest.ReadAll(gpkg.Open(path, opts))
}

// open opens path with the default options (its one layer).
func open(path string) (gdaltest.Reader, error) { return gpkg.Open(path, gpkg.Options{}) }

// TestHostile: each bad file fails, naming what is wrong.
func TestHostile(t *testing.T) {
	good := twoLayers(t)
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.gpkg")
	os.WriteFile(text, []byte("county parcels, see the attached zip\n"), 0o600)
	garbage := filepath.Join(dir, "garbage.gpkg")
	os.WriteFile(garbage, append([]byte("SQLite format 3\x00"), []byte(strings.Repeat("not a database ", 300))...), 0o600)
	whole, _ := os.ReadFile(good)
	truncated := filepath.Join(dir, "cut.gpkg")
	os.WriteFile(truncated, whole[:len(whole)/2], 0o600)
	plain := filepath.Join(dir, "plain.sqlite")
	db, _ := sql.Open("sqlite", plain)
	if _, err := db.Exec(`CREATE TABLE parcels (id INTEGER PRIMARY KEY, geom BLOB)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	// A blob whose header announces a 64-byte envelope it does not hold.
	lying := exec(t, good, `UPDATE counties SET geom = X'47500009E6100000000000000000F03F' WHERE fid = 3`)
	esri := exec(t, good, `UPDATE gpkg_spatial_ref_sys SET organization = 'ESRI', organization_coordsys_id = 102719 WHERE srs_id = 4267`)
	otherSRS := exec(t, good, `UPDATE counties SET geom = CAST(substr(geom, 1, 4) || X'E8030000' || substr(geom, 9) AS BLOB) WHERE fid = 2`)
	// A CRS of another organization is read from its WKT (here GDAL's, with
	// its EPSG code).
	if r, err := gpkg.Open(esri, gpkg.Options{Layer: "counties"}); err != nil || r.SRID() != 4267 || r.CRS().By != "authority" {
		t.Errorf("an ESRI code whose WKT says EPSG:4267: %v", err)
	} else {
		r.Close()
	}
	// One that WKT does not identify.
	unknown := exec(t, good, `UPDATE gpkg_spatial_ref_sys SET organization = 'NONE', definition = 'PROJCS["Local grid",GEOGCS["GCS_North_American_1927",DATUM["D_North_American_1927",SPHEROID["Clarke_1866",6378206.4,294.978698213898]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Transverse_Mercator"],PARAMETER["False_Easting",1234.5],PARAMETER["Central_Meridian",-79.1],UNIT["Meter",1.0]]' WHERE srs_id = 4267`)
	// The feed's crs: reads a file whose CRS is not identified.
	if r, err := gpkg.Open(unknown, gpkg.Options{Layer: "counties", SRID: 2264}); err != nil || r.SRID() != 2264 || r.CRS().By != "setting" {
		t.Errorf("crs override: %v", err)
	} else {
		if f, err := r.Next(); err != nil || f.Geometry.SRID() != 2264 {
			t.Errorf("crs override: first feature %v", err)
		}
		r.Close()
	}
	for _, c := range []struct {
		name, path string
		opts       gpkg.Options
		want       string
	}{
		{"text file", text, gpkg.Options{}, "not a GeoPackage: the file does not start with an SQLite header"},
		{"SQLite header, then garbage", garbage, gpkg.Options{}, "not a GeoPackage: the file starts with an SQLite header but SQLite cannot read it"},
		{"SQLite without gpkg tables", plain, gpkg.Options{}, "an SQLite database but not a GeoPackage"},
		{"truncated", truncated, gpkg.Options{Layer: "counties"}, "the file is cut short"},
		{"lying blob header", lying, gpkg.Options{Layer: "counties"}, "gpkg: feature 2: fid 3: geometry blob header declares a 64-byte envelope but 8 bytes follow it"},
		{"blob srs_id", otherSRS, gpkg.Options{Layer: "counties"}, "geometry blob header says srs_id 1000, the layer's is 4267"},
		{"CRS not identified", unknown, gpkg.Options{Layer: "counties"}, `gpkg: layer "counties": srs_id 4267 ("NONE":4267 in gpkg_spatial_ref_sys): the projected CRS "Local grid" (projection "Transverse_Mercator", datum "D_North_American_1927", unit "Meter" = 1 m) matches no EPSG or ESRI CRS`},
		{"value_bytes", good, gpkg.Options{Layer: "counties", Limits: feature.Limits{ValueBytes: 4}}, "limits.value_bytes exceeded (4 bytes): gpkg feature 0 (fid 1), column \"FIPS\""},
		{"feature_bytes", good, gpkg.Options{Layer: "counties", Limits: feature.Limits{FeatureBytes: 500}}, "limits.feature_bytes exceeded (500 bytes): gpkg feature 0 (fid 1)"},
		{"properties", good, gpkg.Options{Layer: "counties", Limits: feature.Limits{Properties: 3}}, "limits.properties exceeded (3)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := readAll(c.path, c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v\nwant an error containing %q", err, c.want)
			}
			var le *feature.LimitError
			if strings.HasPrefix(c.want, "limits.") != errors.As(err, &le) {
				t.Errorf("%T: a limit must be a *feature.LimitError, nothing else", err)
			}
		})
	}
}

// blob builds a GeoPackage blob: flags, srs_id 4326, envelope, WKB.
func blob(flags byte, env []float64, wkb []byte) []byte {
	b := []byte{'G', 'P', 0, flags | 1}
	b = binary.LittleEndian.AppendUint32(b, 4326)
	for _, v := range env {
		b = binary.LittleEndian.AppendUint64(b, uint64FromFloat(v))
	}
	return append(b, wkb...)
}

// TestMixedMatchesGDAL: every geometry and property type GDAL writes to a
// GeoPackage reads as GDAL reads it.
func TestMixedMatchesGDAL(t *testing.T) {
	gdaltest.MixedMatchesGDAL(t, "GPKG", "mixed.gpkg", open, 8)
}

// TestViewLayers: a layer that is a view (registered in gpkg_contents and
// gpkg_geometry_columns, as GDAL reads it) is read as GDAL reads it: its
// column called fid is the feature id, and without one the rows are
// numbered from 0, as GDAL numbers them; a view has no rowid to read.
func TestViewLayers(t *testing.T) {
	register := func(view string) []string {
		return []string{
			`INSERT INTO gpkg_contents (table_name, data_type, identifier, srs_id) VALUES ('` + view + `', 'features', '` + view + `', 4267)`,
			`INSERT INTO gpkg_geometry_columns VALUES ('` + view + `', 'geom', 'MULTIPOLYGON', 4267, 0, 0)`,
		}
	}
	stmts := []string{`CREATE VIEW with_fid AS SELECT fid, geom, NAME, FIPS FROM counties`,
		`CREATE VIEW without_fid AS SELECT geom, NAME, FIPS FROM counties ORDER BY fid`}
	stmts = append(append(stmts, register("with_fid")...), register("without_fid")...)
	path := exec(t, twoLayers(t), stmts...)
	for view, firstID := range map[string]string{"with_fid": "1", "without_fid": "0"} {
		r, err := gpkg.Open(path, gpkg.Options{Layer: view})
		if err != nil {
			t.Fatalf("%s: %v", view, err)
		}
		if n := gdaltest.Compare(t, r, path, view, 4267); n != 100 {
			t.Errorf("%s: %d features, want 100", view, n)
		}
		r.Close()
		r, _ = gpkg.Open(path, gpkg.Options{Layer: view})
		f, err := r.Next()
		if err != nil || f.ID != firstID || strings.Contains(string(f.Properties), `"fid"`) {
			t.Errorf("%s: first feature id %q (want %s), properties %s, %v", view, f.ID, firstID, f.Properties, err)
		}
		r.Close()
	}
}

// TestCRSFromWKT: a layer whose SRS GDAL could not name (organization
// NONE, the WKT alone) is read in the CRS its WKT's parameters identify.
func TestCRSFromWKT(t *testing.T) {
	r, err := gpkg.Open(gdaltest.RenamedCRSFile(t, "GPKG", "renamed.gpkg"), gpkg.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if c := r.CRS(); c.SRID != 6396 || c.Code != "EPSG:6396" || c.By != "parameters" {
		t.Errorf("CRS %+v, want EPSG:6396 by parameters", c)
	}
	if f, err := r.Next(); err != nil || f.Geometry.SRID() != 6396 {
		t.Errorf("first feature: %v", err)
	}
}

// TestLayerNameCase: a layer registered under another case than its
// table's name (SQLite's names are case-insensitive, and so is GDAL's
// reading of them) is read, not refused as a layer without a table.
func TestLayerNameCase(t *testing.T) {
	path := exec(t, twoLayers(t),
		`UPDATE gpkg_contents SET table_name = 'COUNTIES' WHERE table_name = 'counties'`,
		`UPDATE gpkg_geometry_columns SET table_name = 'COUNTIES' WHERE table_name = 'counties'`)
	r, err := gpkg.Open(path, gpkg.Options{Layer: "COUNTIES"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n := gdaltest.Compare(t, r, path, "COUNTIES", 4267); n != 100 {
		t.Errorf("%d features, want 100", n)
	}
}
