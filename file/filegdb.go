package file

import (
	"archive/zip"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/ingestd/ingestd/crs"
	"github.com/ingestd/ingestd/filegdb"
)

// gdbCatalog is the table every File Geodatabase holds: its system
// catalog, the file that marks a folder as one.
const gdbCatalog = "a00000001.gdbtable"

// sniffFileGDB: a zip named as counties name a zipped File Geodatabase
// (Parcels.gdb.zip). A zip of another name is read by openZip, which
// finds a File Geodatabase inside by its entries.
func sniffFileGDB(head []byte, name string) bool {
	return len(head) >= 4 && string(head[:4]) == "PK\x03\x04" && strings.HasSuffix(strings.ToLower(name), ".gdb.zip")
}

// zipHoldsGDB reports whether the zip's entries hold a File Geodatabase:
// its catalog at the zip's root, or in a folder named *.gdb at any depth
// (Parcels.gdb/, County/Data/Parcels.gdb/).
func zipHoldsGDB(files []*zip.File) bool {
	for _, f := range files {
		if ignored(f) || !strings.EqualFold(path.Base(f.Name), gdbCatalog) {
			continue
		}
		dir := path.Dir(f.Name)
		if dir == "." || strings.HasSuffix(strings.ToLower(dir), ".gdb") {
			return true
		}
	}
	return false
}

// openFileGDB reads a layer of the File Geodatabase zipped at p (package
// filegdb), its entries bounded together by limits.body_bytes.
func openFileGDB(p string, o OpenOptions) (FileReader, error) {
	zr, err := zip.OpenReader(p)
	if err != nil {
		return nil, fmt.Errorf("a File Geodatabase comes zipped; this zip is damaged or cut short (its central directory cannot be read): %w", err)
	}
	if err := checkBomb(zr.File, o.Limits.WithDefaults().BodyBytes); err != nil {
		zr.Close()
		return nil, err
	}
	fr, err := openZippedGDB(zr, o)
	if err != nil {
		zr.Close()
		return nil, err
	}
	return fr, nil
}

// openZippedGDB reads a layer of the File Geodatabase in zr, whose
// bound the caller has checked; the reader closes zr.
func openZippedGDB(zr *zip.ReadCloser, o OpenOptions) (FileReader, error) {
	r, err := filegdb.OpenReader(zr, gdbOptions(o))
	if err != nil {
		return nil, err
	}
	return gdbReader{FromOneLayer(r), r, zr}, nil
}

func gdbOptions(o OpenOptions) filegdb.Options {
	return filegdb.Options{Layer: o.Layer, IDProperty: o.IDProperty, SRID: o.CRS, Limits: o.Limits, TempDir: o.TempDir}
}

// gdbLayerNames lists the layers of the File Geodatabase in zr.
func gdbLayerNames(zr *zip.Reader, o OpenOptions) ([]string, error) {
	g, err := filegdb.Open(zr, gdbOptions(o))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, l := range g.Layers() {
		names = append(names, l.Name)
	}
	return names, nil
}

// openShapefileOrGDB reads a zip that holds both Shapefiles (layers) and
// a File Geodatabase, read as format: auto: the one of them whose layer
// the feed's layer: names (a Shapefile first), else an error listing
// both so that a person chooses.
func openShapefileOrGDB(zr *zip.ReadCloser, layers []shpLayer, o OpenOptions) (FileReader, error) {
	shp := make([]string, len(layers))
	for i, l := range layers {
		shp[i] = l.name
	}
	if i := slices.IndexFunc(layers, func(l shpLayer) bool { return strings.EqualFold(l.name, o.Layer) }); o.Layer != "" && i >= 0 {
		return openShapefile(zr, layers[i], shp, o)
	}
	gdb, err := gdbLayerNames(&zr.Reader, o)
	if err != nil {
		return nil, fmt.Errorf("the zip holds Shapefiles (%s) and a File Geodatabase that cannot be read: %w", strings.Join(shp, ", "), err)
	}
	if o.Layer != "" && slices.ContainsFunc(gdb, func(n string) bool { return strings.EqualFold(n, o.Layer) }) {
		return openZippedGDB(zr, o)
	}
	what := "choose one with format: (shapefile or filegdb) and layer:"
	if o.Layer != "" {
		what = fmt.Sprintf("none is called %q: choose one with layer: (and format: shapefile or filegdb)", o.Layer)
	}
	return nil, fmt.Errorf("the zip holds Shapefiles (%s) and a File Geodatabase (layers %s): %s",
		strings.Join(shp, ", "), strings.Join(gdb, ", "), what)
}

// gdbReader closes the zip after the layer's files.
type gdbReader struct {
	FileReader
	r   *filegdb.Reader
	zip *zip.ReadCloser
}

// CRS is the layer's CRS and how it was identified.
func (g gdbReader) CRS() crs.Result { return g.r.CRS() }

func (g gdbReader) Close() error { return errors.Join(g.FileReader.Close(), g.zip.Close()) }
