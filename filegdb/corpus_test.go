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

// TestFileGDBCorpus reads the geodatabases ArcGIS wrote that
// scripts/fgdb-fixtures.sh fetches (not committed here) when
// INGESTD_FILEGDB_CORPUS names their folder: each layer of each *.gdb
// folder and *.zip either equals GDAL's reading of it (compareWithGDAL)
// or is refused by name (curves ingestd does not densify, multipatches).
// It logs PASS or REFUSED per layer; a layer read wrong, or refused with
// another error, fails. Under CI=true a missing corpus fails.
func TestFileGDBCorpus(t *testing.T) {
	root := os.Getenv("INGESTD_FILEGDB_CORPUS")
	if root == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("INGESTD_FILEGDB_CORPUS is not set: scripts/test.sh sets it from scripts/fgdb-fixtures.sh")
		}
		t.Skip("INGESTD_FILEGDB_CORPUS is not set (the folder scripts/fgdb-fixtures.sh prints)")
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	read := 0
	for _, e := range entries {
		name := e.Name()
		p := filepath.Join(root, name)
		var fsys fs.FS
		gdalPath := p
		switch {
		case e.IsDir() && strings.HasSuffix(name, ".gdb"):
			fsys = os.DirFS(p)
		case !e.IsDir() && strings.HasSuffix(name, ".zip"):
			zr, err := zip.OpenReader(p)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			defer zr.Close()
			fsys = zr
			if !strings.HasSuffix(name, ".gdb.zip") {
				// GDAL 3.6 opens a zip of a geodatabase's tables (no
				// .gdb folder inside) only by a name ending .gdb.zip.
				gdalPath = filepath.Join(t.TempDir(), strings.TrimSuffix(name, ".zip")+".gdb.zip")
				if err := os.Symlink(p, gdalPath); err != nil {
					t.Fatal(err)
				}
			}
			gdalPath = "/vsizip/" + gdalPath
		default:
			continue
		}
		read++
		t.Run(name, func(t *testing.T) {
			g, err := filegdb.Open(fsys, filegdb.Options{})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for _, l := range g.Layers() {
				t.Run(l.Name, func(t *testing.T) { corpusLayer(t, g, gdalPath, name, l.Name) })
			}
		})
	}
	if read == 0 {
		t.Fatalf("%s holds no *.gdb folder and no *.zip", root)
	}
}

// corpusLayer compares one layer with GDAL's reading of it, or logs its
// refusal by name.
func corpusLayer(t *testing.T, g *filegdb.GDB, gdalPath, name, layer string) {
	r, err := g.Reader(filegdb.Options{Layer: layer})
	if err != nil {
		t.Fatalf("%s %s: %v", name, layer, err)
	}
	defer r.Close()
	// A refusal by name happens at its row: read once to see, then
	// compare from a fresh reader.
	for {
		_, err := r.Next()
		if err == nil {
			continue
		}
		if errors.Is(err, filegdb.ErrCurves) || errors.Is(err, filegdb.ErrMultiPatch) {
			t.Logf("REFUSED %s %s: %v", name, layer, err)
			return
		}
		if !errors.Is(err, io.EOF) {
			t.Fatalf("%s %s: %v", name, layer, err)
		}
		break
	}
	r2, err := g.Reader(filegdb.Options{Layer: layer})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	n := compareWithGDAL(t, r2, gdalPath, layer, r2.SRID())
	if !t.Failed() {
		t.Logf("PASS %s %s: %d features equal to GDAL's", name, layer, n)
	}
}
