package file

import (
	"archive/zip"
	"fmt"
	"strings"

	"github.com/ingestd/ingestd/crs"
	"github.com/ingestd/ingestd/gpkg"
)

// FileLayers names the layers of the local file at p, which its URL calls
// name, read as format (the format: setting; "" or "auto" sniffs it as a
// poll does): a zip's Shapefiles, a File Geodatabase's layers (after the
// zip's Shapefiles when it holds both) or a GeoPackage's feature tables,
// as the feed's layer: names them; none for a format of one layer
// (FlatGeobuf, GeoJSON, CSV, a zip holding one such file). It reads a
// zip's directory, a File Geodatabase's catalog and a GeoPackage's
// contents, no feature, and returns the format it read the file as. It is
// what `ingestd discover` lists for a kind: file URL.
func FileLayers(p, name, format string) (string, []string, error) {
	f, ok := lookup(format)
	if format == "" || format == "auto" {
		head, err := readHead(p)
		if err != nil {
			return "", nil, err
		}
		if f, err = sniff(head, name); err != nil {
			return "", nil, err
		}
	} else if !ok {
		return "", nil, fmt.Errorf("unknown format %q (want one of %s)", format, strings.Join(FormatNames(), ", "))
	}
	switch f.Name {
	case FormatShapefile:
		zr, err := zip.OpenReader(p)
		if err != nil {
			return f.Name, nil, fmt.Errorf("the zip is damaged or cut short (its central directory cannot be read): %w", err)
		}
		defer zr.Close()
		var names []string
		for _, l := range shapefileLayers(zr.File) {
			names = append(names, l.name)
		}
		if !zipHoldsGDB(zr.File) || (format == FormatShapefile && len(names) > 0) {
			return f.Name, names, nil
		}
		gdb, err := gdbLayerNames(&zr.Reader, OpenOptions{})
		if len(names) == 0 {
			return FormatFileGDB, gdb, err
		}
		return f.Name, append(names, gdb...), err
	case FormatFileGDB:
		zr, err := zip.OpenReader(p)
		if err != nil {
			return f.Name, nil, fmt.Errorf("a File Geodatabase comes zipped; this zip is damaged or cut short (its central directory cannot be read): %w", err)
		}
		defer zr.Close()
		names, err := gdbLayerNames(&zr.Reader, OpenOptions{})
		return f.Name, names, err
	case FormatGPKG:
		names, err := gpkg.Layers(p)
		return f.Name, names, err
	}
	return f.Name, nil, nil
}

// LayerCRS is the CRS the layer of the local file at p (its URL calls it
// name; layer "" for a file's only layer) would be read in, and how it was
// identified, as a poll without a crs: setting identifies it (package
// crs). Its error is the poll's: a .prj or layer WKT that matches no CRS
// (a *crs.UnknownError), or a file that does not open. A text file in its
// default CRS gives the zero Result.
func LayerCRS(p, name, layer string) (crs.Result, error) {
	fr, err := openLocal(p, "auto", OpenOptions{Name: name, Layer: layer})
	if err != nil {
		return crs.Result{}, err
	}
	defer fr.Close()
	return identified(fr, 0), nil
}
