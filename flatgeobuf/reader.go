package flatgeobuf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ingestd/ingestd/crs"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/internal/propjson"
	"github.com/ingestd/ingestd/schema"
)

// Options say which layer to read and how far a feature may go.
type Options struct {
	// Layer is the layer's name as its header gives it (what Layers
	// returns); "" reads it whatever its name.
	Layer string
	// IDProperty names the column whose value is the feature id; ""
	// means none (FlatGeobuf features carry no id).
	IDProperty string
	// SRID, when positive, is the SRID of the geometries whatever the
	// file declares (the feed's crs:, for a file whose CRS is missing or
	// not one package crs identifies); 0 reads the file's own and fails
	// without one.
	SRID int
	// Limits bound the header and each feature (FeatureBytes, ValueBytes,
	// Properties, IDBytes); zero fields are the defaults.
	Limits feature.Limits
	// Name is the layer's name when the header gives none; "" takes the
	// file's name without its extension. A caller reading a copy of the
	// file (a download's temporary file) names the original.
	Name string
}

// magic is the file's first 8 bytes: "fgb", major version 3, "fgb", patch.
var magic = []byte{'f', 'g', 'b', 3, 'f', 'g', 'b'}

// Reader streams the features of a FlatGeobuf file. It implements
// feature.FeatureReader; Close closes the file.
type Reader struct {
	file     *os.File
	in       *bufio.Reader
	h        header
	srid     int
	crs      crs.Result
	limits   feature.Limits
	declared *schema.Declared
	keys     propjson.Keys
	idCol    int

	buf    []byte
	values []value
	offset int64 // of the next feature in the file
	index  int
	obj    propjson.Object
	f      feature.Feature
	err    error
}

// Layers returns the file's one layer: the header's name, else the file's
// name without its extension (as GDAL names it).
func Layers(path string) ([]string, error) {
	r, err := Open(path, Options{})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return []string{r.Layer()}, nil
}

// Open opens the FlatGeobuf file at path and reads its header: the magic
// bytes, the header table within limits.feature_bytes, its CRS (an EPSG
// code, else an error) and columns, and skips the spatial index.
func Open(path string, opts Options) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("flatgeobuf: %w", err)
	}
	r := &Reader{file: f, in: bufio.NewReaderSize(f, 64<<10), limits: opts.Limits.WithDefaults(), idCol: -1}
	if err := r.start(path, opts); err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

func (r *Reader) start(path string, opts Options) error {
	var lead [12]byte
	if n, err := io.ReadFull(r.in, lead[:]); err != nil || string(lead[:3]) != "fgb" || string(lead[4:7]) != "fgb" {
		return fmt.Errorf("flatgeobuf: not a FlatGeobuf file: it does not start with the magic bytes \"fgb\\x03fgb\" (%s)", feature.Snippet(lead[:n]))
	}
	if lead[3] != magic[3] {
		return fmt.Errorf("flatgeobuf: FlatGeobuf major version %d is not supported (only 3)", lead[3])
	}
	size := int64(binary.LittleEndian.Uint32(lead[8:]))
	if size > r.limits.FeatureBytes {
		return &feature.LimitError{Name: "feature_bytes", Max: r.limits.FeatureBytes, Where: fmt.Sprintf("flatgeobuf header of %d bytes", size)}
	}
	buf := make([]byte, size)
	if _, err := io.ReadFull(r.in, buf); err != nil {
		return fmt.Errorf("flatgeobuf: the file is cut short in its %d-byte header: %w", size, err)
	}
	h, err := parseHeader(buf)
	if err != nil {
		return fmt.Errorf("flatgeobuf: header: %w", err)
	}
	r.h = h
	if r.h.name == "" {
		r.h.name = opts.Name
	}
	if r.h.name == "" {
		r.h.name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	if opts.Layer != "" && opts.Layer != r.h.name {
		return fmt.Errorf("flatgeobuf: no layer %s in the file; its one layer is %s", feature.Snippet(opts.Layer), strconv.Quote(r.h.name))
	}
	if opts.SRID > 0 {
		r.crs = crs.Result{SRID: opts.SRID, Code: fmt.Sprintf("EPSG:%d", opts.SRID), By: crs.BySetting}
	} else {
		r.crs, err = r.h.crs()
	}
	r.srid = r.crs.SRID
	if err != nil {
		return fmt.Errorf("flatgeobuf: %w", err)
	}
	if len(h.columns) > r.limits.Properties {
		return &feature.LimitError{Name: "properties", Max: int64(r.limits.Properties), Where: "flatgeobuf header"}
	}
	if err := r.describe(opts.IDProperty); err != nil {
		return err
	}
	return r.skipIndex(12 + size)
}

// describe builds the declared schema and the property keys.
func (r *Reader) describe(idProperty string) error {
	r.declared = &schema.Declared{Geometry: geometryNames[r.h.geometryType], Origin: "flatgeobuf columns"}
	names := make([]string, len(r.h.columns))
	for i, c := range r.h.columns {
		names[i] = c.name
		t, _ := ColumnType(c.typ)
		r.declared.Columns = append(r.declared.Columns, schema.Column{Name: c.name, Type: t, Source: schema.FromDeclared})
		if idProperty != "" && c.name == idProperty {
			r.idCol = i
		}
	}
	if idProperty != "" && r.idCol < 0 {
		return fmt.Errorf("flatgeobuf: no column %s for the feature id", feature.Snippet(idProperty))
	}
	r.keys = propjson.NewKeys(names)
	r.values = make([]value, len(r.h.columns))
	return nil
}

// skipIndex seeks past the spatial index to the first feature, which must
// lie within the file.
func (r *Reader) skipIndex(offset int64) error {
	n, err := r.h.indexSize()
	if err != nil {
		return fmt.Errorf("flatgeobuf: header: %w", err)
	}
	fi, err := r.file.Stat()
	if err != nil {
		return fmt.Errorf("flatgeobuf: %w", err)
	}
	if offset+n > fi.Size() {
		return fmt.Errorf("flatgeobuf: the file is cut short in its spatial index: %d bytes, the index ends at byte %d", fi.Size(), offset+n)
	}
	r.offset = offset + n
	if n == 0 {
		return nil
	}
	if _, err := r.file.Seek(offset+n, io.SeekStart); err != nil {
		return fmt.Errorf("flatgeobuf: %w", err)
	}
	r.in.Reset(r.file)
	return nil
}

// Declared is the layer's schema as its header declares it: the columns
// in their order, typed by ColumnType, and the geometry type.
func (r *Reader) Declared() *schema.Declared { return r.declared }

// SRID is the EPSG code of the header's CRS, which every geometry carries.
func (r *Reader) SRID() int { return r.srid }

// CRS is the layer's CRS and how it was identified: the header's EPSG
// code, its WKT (package crs), or Options.SRID (crs.BySetting).
func (r *Reader) CRS() crs.Result { return r.crs }

// Layer is the layer's name.
func (r *Reader) Layer() string { return r.h.name }

// Close closes the file.
func (r *Reader) Close() error { return r.file.Close() }

// Next returns the next feature, or io.EOF after the last. The feature and
// its geometry are the reader's until the next call; its Properties are
// the caller's.
func (r *Reader) Next() (*feature.Feature, error) { return feature.StickyNext(&r.err, r.next) }

func (r *Reader) next() (*feature.Feature, error) {
	index := r.index
	var lead [4]byte
	n, err := io.ReadFull(r.in, lead[:])
	switch {
	case err == io.EOF:
		if r.h.featuresCount > 0 && uint64(index) != r.h.featuresCount {
			return nil, r.fail(index, fmt.Sprintf("the file is cut short: its header counts %d features, it holds %d", r.h.featuresCount, index), nil)
		}
		return nil, io.EOF
	case err != nil:
		return nil, r.fail(index, fmt.Sprintf("the file is cut short in the feature's size (%d of 4 bytes)", n), nil)
	}
	r.index++
	if r.h.featuresCount > 0 && uint64(index) >= r.h.featuresCount {
		return nil, r.fail(index, fmt.Sprintf("more features than the %d its header counts", r.h.featuresCount), nil)
	}
	size := int64(binary.LittleEndian.Uint32(lead[:]))
	if size > r.limits.FeatureBytes {
		return nil, &feature.LimitError{Name: "feature_bytes", Max: r.limits.FeatureBytes, Where: "flatgeobuf " + feature.Where(index)}
	}
	// The buffer is reused: the feature's values are copied out of it
	// into its geometry and properties.
	if int64(cap(r.buf)) < size {
		r.buf = make([]byte, size)
	}
	r.buf = r.buf[:size]
	if _, err := io.ReadFull(r.in, r.buf); err != nil {
		return nil, r.fail(index, fmt.Sprintf("the file is cut short in the feature's %d bytes", size), nil)
	}
	r.offset += 4 + size
	return r.decode(index)
}

func (r *Reader) fail(index int, msg string, err error) error {
	var le *feature.LimitError
	if errors.As(err, &le) {
		return le
	}
	return &feature.DecodeError{Format: "flatgeobuf", Index: index, Msg: feature.BoundMessage(msg), Err: feature.Bound(err)}
}

// Compile-time check.
var _ feature.FeatureReader = (*Reader)(nil)
