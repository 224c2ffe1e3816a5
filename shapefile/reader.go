package shapefile

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ingestd/ingestd/crs"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/schema"
)

// Files are the parts of one shapefile, as streams. SHP, SHX and DBF are
// required; PRJ and CPG are the contents of the .prj and .cpg (nil when
// there is none).
type Files struct {
	SHP, SHX, DBF io.Reader
	// SHPSize and SHXSize are the sizes of the .shp and .shx in bytes
	// (their zip entries' sizes), checked against their headers.
	SHPSize, SHXSize int64
	PRJ, CPG         []byte
}

// Options are a feed's settings for a shapefile.
type Options struct {
	// Encoding overrides the .cpg and the DBF's language driver ("" keeps
	// them).
	Encoding string
	// SRID overrides the .prj's CRS (0 keeps it).
	SRID int
	// IDProperty names the field whose value is the feature's id.
	IDProperty string
	// Limits bound each feature (FeatureBytes, ValueBytes, Properties,
	// IDBytes); zero fields are the defaults.
	Limits feature.Limits
}

// Reader streams a shapefile's features (feature.FeatureReader).
type Reader struct {
	shp        io.Reader
	fileType   int32
	shpBytes   int64 // the .shp's length by its header
	read       int64 // .shp bytes read so far
	shxRecords int
	db         *dbf
	names      []string
	enc        Encoding
	encFrom    string
	crs        crs.Result
	opts       Options
	limits     feature.Limits

	rec  shpRecord
	n    int // records read
	err  error
	f    feature.Feature
	prop []byte
}

// NewReader reads the headers of f's files and returns a Reader at the
// first record. The error says which file is at fault.
func NewReader(f Files, opts Options) (*Reader, error) {
	r := &Reader{shp: f.SHP, opts: opts, limits: opts.Limits.WithDefaults()}
	h, err := readHeader(f.SHP, ".shp")
	if err != nil {
		return nil, err
	}
	r.fileType, r.shpBytes, r.read = h.shapeType, h.words*2, 100
	if f.SHPSize > 0 && r.shpBytes != f.SHPSize {
		return nil, fmt.Errorf(".shp: its header says %d bytes, the file holds %d: it is cut short or damaged", r.shpBytes, f.SHPSize)
	}
	xh, err := readHeader(f.SHX, ".shx")
	if err != nil {
		return nil, err
	}
	if xh.words*2 != f.SHXSize || (f.SHXSize-100)%8 != 0 {
		return nil, fmt.Errorf(".shx: its header says %d bytes, the file holds %d: it is cut short or damaged", xh.words*2, f.SHXSize)
	}
	r.shxRecords = int((f.SHXSize - 100) / 8)
	var rawNames [][]byte
	if r.db, rawNames, err = openDBF(f.DBF); err != nil {
		return nil, err
	}
	if len(r.db.fields) > r.limits.Properties {
		return nil, &feature.LimitError{Name: "properties", Max: int64(r.limits.Properties), Where: fmt.Sprintf(".dbf of %d fields", len(r.db.fields))}
	}
	if r.enc, r.encFrom, err = resolveEncoding(opts.Encoding, string(f.CPG), r.db.ldid); err != nil {
		return nil, err
	}
	for _, n := range rawNames {
		s, _ := r.enc.Decode(n)
		r.names = append(r.names, s)
	}
	// Two fields of one name (dBASE does not forbid it) are both kept.
	r.names = feature.UniqueNames(r.names)
	switch {
	case opts.SRID != 0:
		r.crs = crs.Result{SRID: opts.SRID, Code: fmt.Sprintf("EPSG:%d", opts.SRID), By: crs.BySetting}
	case f.PRJ == nil:
		return nil, errors.New("no .prj beside the .shp: its CRS is unknown; set the feed's crs: to the EPSG code of the CRS the data is in")
	default:
		if r.crs, err = crs.Identify(string(f.PRJ)); err != nil {
			return nil, fmt.Errorf(".prj: %w", err)
		}
	}
	return r, nil
}

// SRID is the CRS of the geometries: the .prj's, or Options.SRID.
func (r *Reader) SRID() int { return r.crs.SRID }

// CRS is the CRS of the geometries and how it was identified: by the
// .prj's authority code, its name or its definition (package crs), or
// Options.SRID (crs.BySetting).
func (r *Reader) CRS() crs.Result { return r.crs }

// Encoding names the DBF's encoding and where it came from.
func (r *Reader) Encoding() (name, from string) { return r.enc.Name, r.encFrom }

// Records is the number of records the .shx counts.
func (r *Reader) Records() int { return r.shxRecords }

// Declared is the DBF's schema: its fields in order, typed as GDAL types
// them, and the geometry type when the shape type fixes it.
func (r *Reader) Declared() *schema.Declared {
	d := &schema.Declared{Origin: "shapefile .dbf"}
	switch r.fileType {
	case shapePoint, shapePointZ, shapePointM:
		d.Geometry = "Point"
	case shapeMultiPoint, shapeMultiPointZ, shapeMultiPointM:
		d.Geometry = "MultiPoint"
	}
	for i, f := range r.db.fields {
		d.Columns = append(d.Columns, schema.Column{Name: r.names[i], Type: f.column, Source: schema.FromDeclared})
	}
	return d
}

// FieldTypes lists each field with the OGR type GDAL reads it as
// ("Integer", "Integer64", "Real", "String", "Date").
func (r *Reader) FieldTypes() map[string]string {
	m := make(map[string]string, len(r.db.fields))
	for i, f := range r.db.fields {
		m[r.names[i]] = f.ogr
	}
	return m
}

// Next returns the next feature, io.EOF after the last one once the
// files proved whole. The feature is reused by the next call.
func (r *Reader) Next() (*feature.Feature, error) {
	return feature.StickyNext(&r.err, r.next)
}

func (r *Reader) next() (*feature.Feature, error) {
	for {
		err := readRecord(r.shp, &r.rec, r.limits.FeatureBytes)
		if err == io.EOF {
			return nil, r.finish()
		}
		var le *limitErr
		if errors.As(err, &le) {
			return nil, &feature.LimitError{Name: "feature_bytes", Max: r.limits.FeatureBytes, Where: fmt.Sprintf("record %d (%d bytes)", r.n+1, le.n)}
		}
		if err != nil {
			return nil, fmt.Errorf(".shp: %w", err)
		}
		r.read += 8 + int64(len(r.rec.buf))
		r.n++
		if r.n > r.shxRecords {
			return nil, fmt.Errorf(".shp holds more records than the %d of its .shx", r.shxRecords)
		}
		if r.n > r.db.records {
			return nil, fmt.Errorf(".shp holds more records than the %d of its .dbf", r.db.records)
		}
		deleted, err := r.db.next()
		if err != nil {
			return nil, fmt.Errorf(".dbf: record %d: %w", r.n, err)
		}
		if deleted {
			continue // GDAL skips a record the DBF marks deleted
		}
		return r.feature()
	}
}

// finish checks, at the .shp's end, that the files agree and are whole.
func (r *Reader) finish() error {
	switch {
	case r.read != r.shpBytes:
		return fmt.Errorf(".shp: ended after %d of the %d bytes its header says: it is cut short", r.read, r.shpBytes)
	case r.n != r.shxRecords:
		return fmt.Errorf(".shp holds %d records, its .shx %d: the files do not belong together or one is cut short", r.n, r.shxRecords)
	case r.n != r.db.records:
		return fmt.Errorf(".shp holds %d records, its .dbf %d: the files do not belong together or one is cut short", r.n, r.db.records)
	}
	return io.EOF
}

// feature builds the current record's feature.
func (r *Reader) feature() (*feature.Feature, error) {
	g, err := decodeShape(r.rec.buf, r.fileType, r.crs.SRID)
	if err != nil {
		return nil, fmt.Errorf(".shp: record %d: %w", r.n, err)
	}
	r.f = feature.Feature{Geometry: g}
	// A fresh buffer per feature: the poll's stager keeps features of a
	// batch past the next call.
	p := make([]byte, 0, cap(r.prop))
	p = append(p, '{')
	for i := range r.db.fields {
		f := &r.db.fields[i]
		v := r.db.value(f)
		if int64(len(v)) > r.limits.ValueBytes {
			return nil, &feature.LimitError{Name: "value_bytes", Max: r.limits.ValueBytes, Where: fmt.Sprintf("record %d, field %s", r.n, r.names[i])}
		}
		if i > 0 {
			p = append(p, ',')
		}
		p = appendString(p, r.names[i])
		p = append(p, ':')
		var repaired bool
		p, repaired = appendValue(p, f, v, r.enc)
		if repaired {
			r.f.Repairs |= feature.RepairedUTF8
		}
		if r.names[i] == r.opts.IDProperty {
			id, _ := r.enc.Decode(v)
			r.f.ID = strings.TrimSpace(id)
		}
	}
	r.prop = append(p, '}')
	r.f.Properties = r.prop
	if why := feature.RefuseID(r.f.ID, r.limits.IDBytes); why != "" {
		return &feature.Feature{Refused: why}, nil
	}
	return &r.f, nil
}
