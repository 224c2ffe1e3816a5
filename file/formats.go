package file

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/ingestd/ingestd/crs"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/flatgeobuf"
	"github.com/ingestd/ingestd/gpkg"
	"github.com/ingestd/ingestd/schema"
)

// FileReader is what a format's Open returns: a stream of the chosen
// layer's features, with its declared schema (nil: the store infers one
// from the values) and the SRID of its geometries.
type FileReader interface {
	feature.FeatureReader
	// Declared is the layer's schema as the file declares it, or nil.
	Declared() *schema.Declared
	// SRID is the CRS of the layer's geometries.
	SRID() int
	// Layers lists the file's layers (one for a single-layer format).
	Layers() []string
	// Close releases the file.
	Close() error
}

// OpenOptions are a feed's settings as a format's Open reads them.
type OpenOptions struct {
	// Name is the file's name (the URL's last path segment, or the zip
	// entry's), for messages and the format's guess.
	Name string
	// Layer chooses among a file's layers ("" for its only one).
	Layer string
	// Encoding overrides the file's own text encoding ("" keeps it).
	Encoding string
	// X, Y or WKT name a CSV's geometry columns.
	X, Y, WKT string
	// Separator is a CSV's field separator (0: a comma).
	Separator rune
	// HeaderLine is the line of a CSV's header (0 or 1: the first; the
	// lines before it are skipped); NoHeader: it has none, its columns
	// are COLUMN1, COLUMN2, …
	HeaderLine int
	NoHeader   bool
	// SRID is the feed's crs: (0: the file's own; 4326 where it has none).
	SRID int
	// CRS is the feed's crs: alone (0 when the feed sets none): a
	// GeoPackage or FlatGeobuf declares its own CRS, which only an
	// explicit setting overrides.
	CRS int
	// IDProperty names the property that identifies a feature.
	IDProperty string
	// Limits bound the features and, for a zip, its uncompressed size
	// (BodyBytes).
	Limits feature.Limits
	// TempDir is where a zip's single file is copied out ("": the
	// system's).
	TempDir string
	// format is the format: the feed set ("" for auto), which settles
	// a zip holding both Shapefiles and a File Geodatabase.
	format string
}

// Format is one file format of the table: its name (the format: setting),
// a sniff of its first bytes and name, and its reader over a local file.
type Format struct {
	Name string
	// Sniff reports whether a file starting with head and called name is
	// of this format.
	Sniff func(head []byte, name string) bool
	// Open reads the file at path as this format.
	Open func(path string, o OpenOptions) (FileReader, error)
}

// Format names, as the format: setting spells them.
const (
	FormatShapefile  = "shapefile"
	FormatGPKG       = "gpkg"
	FormatFlatGeobuf = "flatgeobuf"
	FormatGeoJSON    = "geojson"
	FormatCSV        = "csv"
	FormatFileGDB    = "filegdb"
	FormatGML        = "gml"
)

// openGPKG reads a GeoPackage layer (package gpkg).
func openGPKG(p string, o OpenOptions) (FileReader, error) {
	r, err := gpkg.Open(p, gpkg.Options{Layer: o.Layer, IDProperty: o.IDProperty, SRID: o.CRS, Limits: o.Limits})
	if err != nil {
		return nil, err
	}
	return FromOneLayer(r), nil
}

// openFlatGeobuf reads a FlatGeobuf file (package flatgeobuf).
func openFlatGeobuf(p string, o OpenOptions) (FileReader, error) {
	r, err := flatgeobuf.Open(p, flatgeobuf.Options{Layer: o.Layer, IDProperty: o.IDProperty, SRID: o.CRS, Limits: o.Limits,
		Name: layerName(o.Name)})
	if err != nil {
		return nil, err
	}
	return FromOneLayer(r), nil
}

// Formats is the table of formats in the order they are sniffed: binary
// magic numbers first, then text by its first byte and the file's name.
func Formats() []Format {
	return []Format{
		{Name: FormatFileGDB, Sniff: sniffFileGDB, Open: openFileGDB},
		// A zip: its first entry's local header, or the end of an empty
		// zip's directory (which openZip reports as empty).
		{Name: FormatShapefile, Sniff: func(h []byte, _ string) bool {
			return bytes.HasPrefix(h, []byte("PK\x03\x04")) || bytes.HasPrefix(h, []byte("PK\x05\x06"))
		}, Open: openZip},
		{Name: FormatGPKG, Sniff: func(h []byte, _ string) bool { return bytes.HasPrefix(h, []byte("SQLite format 3\x00")) }, Open: openGPKG},
		{Name: FormatFlatGeobuf, Sniff: func(h []byte, _ string) bool { return bytes.HasPrefix(h, []byte("fgb\x03")) }, Open: openFlatGeobuf},
		{Name: FormatGeoJSON, Sniff: sniffGeoJSON, Open: openGeoJSON},
		{Name: FormatGML, Sniff: sniffGML, Open: openGML},
		{Name: FormatCSV, Sniff: func(_ []byte, name string) bool { return hasExt(name, ".csv", ".txt") }, Open: openCSV},
	}
}

// FormatNames lists the format: values, "auto" first.
func FormatNames() []string {
	names := []string{"auto"}
	for _, f := range Formats() {
		names = append(names, f.Name)
	}
	return names
}

// lookup returns the format called name.
func lookup(name string) (Format, bool) {
	for _, f := range Formats() {
		if f.Name == name {
			return f, true
		}
	}
	return Format{}, false
}

// sniff picks the format of a file from its first bytes and its name.
func sniff(head []byte, name string) (Format, error) {
	for _, f := range Formats() {
		if f.Sniff(head, name) {
			return f, nil
		}
	}
	return Format{}, fmt.Errorf("cannot tell the format of %q (it starts %s): set format: (one of %s)",
		name, feature.Snippet(string(head[:min(len(head), 16)])), strings.Join(FormatNames()[1:], ", "))
}

// sniffGeoJSON: a JSON object, or a file named .geojson or .json.
func sniffGeoJSON(head []byte, name string) bool {
	h := bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n")
	return bytes.HasPrefix(h, []byte("{")) || hasExt(name, ".geojson", ".json")
}

// sniffGML: an XML document, or a file named .gml.
func sniffGML(head []byte, name string) bool {
	h := bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n")
	return bytes.HasPrefix(h, []byte("<")) || hasExt(name, ".gml")
}

// hasExt reports whether name ends with one of exts, case aside.
func hasExt(name string, exts ...string) bool {
	e := strings.ToLower(path.Ext(name))
	for _, x := range exts {
		if e == x {
			return true
		}
	}
	return false
}

// openLocal opens the file at p as format ("auto": sniffed from its first
// bytes and o.Name).
func openLocal(p, format string, o OpenOptions) (FileReader, error) {
	f, ok := lookup(format)
	if format == "" || format == "auto" {
		o.format = ""
		head, err := readHead(p)
		if err != nil {
			return nil, err
		}
		if f, err = sniff(head, o.Name); err != nil {
			return nil, err
		}
	} else if !ok {
		return nil, fmt.Errorf("unknown format %q (want one of %s)", format, strings.Join(FormatNames(), ", "))
	} else {
		o.format = f.Name
		if f.Name != FormatShapefile && f.Name != FormatFileGDB {
			// A zipped file of this format (OpenAddresses' compression:
			// zip with format: csv): the zip is read as the file it holds.
			head, err := readHead(p)
			if err != nil {
				return nil, err
			}
			if zf, _ := lookup(FormatShapefile); zf.Sniff(head, o.Name) {
				f = zf
			}
		}
	}
	fr, err := f.Open(p, o)
	if err != nil {
		if strings.HasPrefix(err.Error(), f.Name+": ") || strings.HasPrefix(err.Error(), FormatFileGDB+": ") {
			return nil, err // the format's own package named itself
		}
		name := f.Name
		if name == FormatShapefile {
			// The format of a zip, whatever it holds (a CSV, say).
			name = "zip"
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return fr, nil
}

// readHead reads the first bytes of the file at p.
func readHead(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, 512)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, err
	}
	return head[:n], nil
}

// OneLayerReader is a reader of one layer as packages gpkg and flatgeobuf
// write them: its features, declared schema, SRID, the layer's name, Close.
type OneLayerReader interface {
	feature.FeatureReader
	Declared() *schema.Declared
	SRID() int
	Layer() string
	Close() error
}

// FromOneLayer adapts such a reader, as its Open returns it, to a
// FileReader, so that wiring a format is one Open in Formats:
//
//	Open: func(p string, o OpenOptions) (FileReader, error) {
//		r, err := gpkg.Open(p, gpkg.Options{Layer: o.Layer, IDProperty: o.IDProperty, Limits: o.Limits})
//		if err != nil {
//			return nil, err
//		}
//		return FromOneLayer(r), nil
//	}
func FromOneLayer(r OneLayerReader) FileReader { return oneLayer{r} }

type oneLayer struct{ OneLayerReader }

func (o oneLayer) Layers() []string { return []string{o.Layer()} }

// CRS is the reader's CRS and how it was identified, when the reader
// says (gpkg, flatgeobuf: package crs); else its SRID, unexplained.
func (o oneLayer) CRS() crs.Result {
	if c, ok := o.OneLayerReader.(interface{ CRS() crs.Result }); ok {
		return c.CRS()
	}
	return crs.Result{SRID: o.SRID()}
}
