package filegdb_test

import (
	"archive/zip"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/filegdb"
)

// TestGDALAutotest reads GDAL's own File Geodatabase test files (its
// autotest/ogr/data/filegdb folder, not committed here) when
// INGESTD_GDAL_AUTOTEST_FILEGDB names a copy of it: each layer of each
// *.gdb folder and *.gdb.zip either equals GDAL's reading of it
// (compareWithGDAL) or is refused by name (curves ingestd does not
// densify, multipatches). It logs which; a layer read wrong, or refused
// with another error, fails.
func TestGDALAutotest(t *testing.T) {
	root := os.Getenv("INGESTD_GDAL_AUTOTEST_FILEGDB")
	if root == "" {
		t.Skip("INGESTD_GDAL_AUTOTEST_FILEGDB is not set (a copy of GDAL's autotest/ogr/data/filegdb)")
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		p := filepath.Join(root, name)
		var fsys fs.FS
		gdalPath := p
		switch {
		case e.IsDir() && strings.HasSuffix(name, ".gdb"):
			fsys = os.DirFS(p)
		case !e.IsDir() && strings.HasSuffix(name, ".gdb.zip"):
			zr, err := zip.OpenReader(p)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			defer zr.Close()
			fsys, gdalPath = zr, "/vsizip/"+p
		default:
			continue
		}
		t.Run(name, func(t *testing.T) {
			g, err := filegdb.Open(fsys, filegdb.Options{})
			if err != nil {
				t.Logf("REFUSED %s: %v", name, err)
				return
			}
			for _, l := range g.Layers() {
				r, err := g.Reader(filegdb.Options{Layer: l.Name})
				if err != nil {
					t.Logf("REFUSED %s %s: %v", name, l.Name, err)
					continue
				}
				func() {
					defer r.Close()
					// A refusal by name happens at its row: read once to
					// see, then compare from a fresh reader.
					for {
						_, err := r.Next()
						if err == nil {
							continue
						}
						if errors.Is(err, filegdb.ErrCurves) || errors.Is(err, filegdb.ErrMultiPatch) {
							t.Logf("REFUSED BY NAME %s %s: %v", name, l.Name, err)
							return
						}
						if !errors.Is(err, io.EOF) {
							t.Errorf("%s %s: %v", name, l.Name, err)
							return
						}
						break
					}
					r2, err := g.Reader(filegdb.Options{Layer: l.Name})
					if err != nil {
						t.Fatal(err)
					}
					defer r2.Close()
					n := compareWithGDAL(t, r2, gdalPath, l.Name, r2.SRID())
					t.Logf("PASS %s %s: %d features equal to GDAL's", name, l.Name, n)
				}()
			}
		})
	}
}
