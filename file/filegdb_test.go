package file

import (
	"archive/zip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/crs"
	"github.com/ingestd/ingestd/internal/gdaltest"
)

// zippedGDB writes NC's counties with GDAL as a File Geodatabase in NAD27
// and zips its folder as counties do, at a file named name.
func zippedGDB(t *testing.T, name string) string {
	return zipFolders(t, name, map[string]string{"Counties.gdb/": countiesGDB(t)})
}

// countiesGDB writes NC's counties with GDAL as a File Geodatabase in
// NAD27, layer "counties", and returns its folder.
func countiesGDB(t *testing.T) string {
	gdb := filepath.Join(t.TempDir(), "Counties.gdb")
	gdaltest.OGR2OGR(t, "-f", "OpenFileGDB", "-t_srs", "EPSG:4267", gdb, "../testdata/arcgis/nc_counties.geojson", "-nln", "counties")
	return gdb
}

// zipFolders zips the files of each folder under its prefix in the zip
// ("" for the zip's root), deflated, at a new file named name.
func zipFolders(t *testing.T, name string, folders map[string]string) string {
	p := filepath.Join(t.TempDir(), name)
	out, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := zip.NewWriter(out)
	for prefix, dir := range folders {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			f, _ := w.Create(prefix + e.Name())
			f.Write(b)
		}
	}
	if err := errors.Join(w.Close(), out.Close()); err != nil {
		t.Fatal(err)
	}
	return p
}

// count reads fr to its end and returns how many features it gave.
func count(t *testing.T, fr FileReader) int {
	t.Helper()
	n := 0
	for ; ; n++ {
		_, err := fr.Next()
		if errors.Is(err, io.EOF) {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestAutoFindsFileGDB: format: auto reads a zip of any name holding a
// File Geodatabase, its *.gdb folder at the root or deeper, or its
// tables at the zip's root; FileLayers lists its layers.
func TestAutoFindsFileGDB(t *testing.T) {
	gdb := countiesGDB(t)
	for _, prefix := range []string{"Counties.gdb/", "Download/GIS/Counties.gdb/", ""} {
		t.Run(prefix, func(t *testing.T) {
			p := zipFolders(t, "download.zip", map[string]string{prefix: gdb})
			fr, err := openLocal(p, "auto", OpenOptions{Name: "download.zip"})
			if err != nil {
				t.Fatal(err)
			}
			defer fr.Close()
			if fr.SRID() != 4267 || fr.Layers()[0] != "counties" {
				t.Errorf("SRID %d, layers %v", fr.SRID(), fr.Layers())
			}
			if n := count(t, fr); n != 100 {
				t.Errorf("%d features, want 100", n)
			}
			format, layers, err := FileLayers(p, "download.zip", "auto")
			if err != nil || format != FormatFileGDB || strings.Join(layers, ",") != "counties" {
				t.Errorf("FileLayers: %s %v %v", format, layers, err)
			}
		})
	}
	// A folder named *.gdb without a catalog is no File Geodatabase.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a00000009.gdbtable"), []byte("not a table"), 0o600)
	p := zipFolders(t, "x.zip", map[string]string{"Broken.gdb/": dir})
	if _, err := openLocal(p, "auto", OpenOptions{Name: "x.zip"}); err == nil || !strings.HasPrefix(err.Error(), "zip: the zip holds no Shapefile") {
		t.Errorf("an empty .gdb folder: %v", err)
	}
}

// TestZipOfShapefileAndGDB: a zip holding both a Shapefile and a File
// Geodatabase, read as auto, asks for layer: and format: listing both;
// layer: alone picks either, format: settles it.
func TestZipOfShapefileAndGDB(t *testing.T) {
	gdb := countiesGDB(t)
	shp := filepath.Join(t.TempDir(), "shp")
	gdaltest.OGR2OGR(t, "-f", "ESRI Shapefile", shp, "../testdata/arcgis/nc_counties.geojson", "-nln", "nc")
	p := zipFolders(t, "both.zip", map[string]string{"Counties.gdb/": gdb, "": shp})

	_, err := openLocal(p, "auto", OpenOptions{Name: "both.zip"})
	want := "zip: the zip holds Shapefiles (nc) and a File Geodatabase (layers counties): choose one with format: (shapefile or filegdb) and layer:"
	if err == nil || err.Error() != want {
		t.Errorf("auto without layer:\n got %v\nwant %s", err, want)
	}
	_, err = openLocal(p, "auto", OpenOptions{Name: "both.zip", Layer: "roads"})
	if err == nil || !strings.Contains(err.Error(), `(nc) and a File Geodatabase (layers counties): none is called "roads"`) {
		t.Errorf("auto with a layer in neither: %v", err)
	}
	for _, tc := range []struct {
		format, layer string
		srid          int
	}{{"auto", "counties", 4267}, {"auto", "NC", 4326}, {FormatFileGDB, "", 4267}, {FormatShapefile, "", 4326}} {
		fr, err := openLocal(p, tc.format, OpenOptions{Name: "both.zip", Layer: tc.layer})
		if err != nil {
			t.Errorf("%s %q: %v", tc.format, tc.layer, err)
			continue
		}
		if fr.SRID() != tc.srid || count(t, fr) != 100 {
			t.Errorf("%s %q: SRID %d, want %d", tc.format, tc.layer, fr.SRID(), tc.srid)
		}
		fr.Close()
	}
	if _, layers, err := FileLayers(p, "both.zip", "auto"); err != nil || strings.Join(layers, ",") != "nc,counties" {
		t.Errorf("FileLayers: %v %v", layers, err)
	}
}

// TestFileGDB: a zipped File Geodatabase is read with format: filegdb,
// and by auto when named *.gdb.zip, with its CRS and declared fields.
func TestFileGDB(t *testing.T) {
	for _, tc := range []struct{ name, format string }{{"Counties.gdb.zip", "auto"}, {"download.zip", FormatFileGDB}} {
		t.Run(tc.name, func(t *testing.T) {
			p := zippedGDB(t, tc.name)
			fr, err := openLocal(p, tc.format, OpenOptions{Name: tc.name})
			if err != nil {
				t.Fatal(err)
			}
			defer fr.Close()
			if fr.SRID() != 4267 || len(fr.Declared().Columns) != 5 || fr.Layers()[0] != "counties" {
				t.Errorf("SRID %d, declared %+v, layers %v", fr.SRID(), fr.Declared(), fr.Layers())
			}
			if got := identified(fr, 0); got != (crs.Result{SRID: 4267, Code: "EPSG:4267", By: crs.ByAuthority}) {
				t.Errorf("identified as %+v, want EPSG:4267 by its WKID", got)
			}
			n := 0
			for ; ; n++ {
				_, err := fr.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if n != 100 {
				t.Errorf("%d features, want 100", n)
			}
		})
	}
	_, err := openLocal(zippedGDB(t, "x.zip"), FormatFileGDB, OpenOptions{Name: "x.zip", Layer: "parcels"})
	if err == nil || !strings.HasPrefix(err.Error(), `filegdb: no layer "parcels"`) {
		t.Errorf("a missing layer: %v", err)
	}
}
