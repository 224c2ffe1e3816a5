package download

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
	dir := t.TempDir()
	gdb := filepath.Join(dir, "Counties.gdb")
	gdaltest.OGR2OGR(t, "-f", "OpenFileGDB", "-t_srs", "EPSG:4267", gdb, "../testdata/arcgis/nc_counties.geojson", "-nln", "counties")
	p := filepath.Join(dir, name)
	out, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := zip.NewWriter(out)
	entries, _ := os.ReadDir(gdb)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(gdb, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		f, _ := w.Create("Counties.gdb/" + e.Name())
		f.Write(b)
	}
	if err := errors.Join(w.Close(), out.Close()); err != nil {
		t.Fatal(err)
	}
	return p
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
