package download

import (
	"archive/zip"
	"errors"
	"fmt"
	"strings"

	"github.com/ingestd/ingestd/crs"
	"github.com/ingestd/ingestd/filegdb"
)

// sniffFileGDB: a zip named as counties name a zipped File Geodatabase
// (Parcels.gdb.zip). A zip of another name holding a .gdb folder needs
// format: filegdb.
func sniffFileGDB(head []byte, name string) bool {
	return len(head) >= 4 && string(head[:4]) == "PK\x03\x04" && strings.HasSuffix(strings.ToLower(name), ".gdb.zip")
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
	r, err := filegdb.OpenReader(zr, filegdb.Options{Layer: o.Layer, IDProperty: o.IDProperty, SRID: o.CRS, Limits: o.Limits, TempDir: o.TempDir})
	if err != nil {
		zr.Close()
		return nil, err
	}
	return gdbReader{FromOneLayer(r), r, zr}, nil
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
