package filegdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ingestd/ingestd/crs"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/internal/propjson"
	"github.com/ingestd/ingestd/schema"
)

// Reader streams the features of one layer of a File Geodatabase,
// reading each row through the .gdbtablx's offset of it: memory is that
// of one row whatever the table's size. It implements
// feature.FeatureReader; Close releases the layer's files.
type Reader struct {
	t      *table
	info   LayerInfo
	opts   Options
	limits feature.Limits
	srid   int
	crs    crs.Result
	props  []int // indexes in t.fields of the properties, in order
	keys   propjson.Keys
	idIdx  int // index in t.fields of Options.IDProperty, -1: OBJECTID

	slot  int64 // next row slot
	rows  uint32
	buf   []byte
	vals  []value
	obj   propjson.Object
	f     feature.Feature
	err   error
	idBuf []byte
}

// OpenReader opens the File Geodatabase in fsys and the layer
// opts.Layer of it (Open, then GDB.Reader).
func OpenReader(fsys fs.FS, opts Options) (*Reader, error) {
	g, err := Open(fsys, opts)
	if err != nil {
		return nil, err
	}
	return g.Reader(opts)
}

// Reader opens the layer opts.Layer ("" for the only one) for reading:
// its table's header, field descriptors and index.
func (g *GDB) Reader(opts Options) (*Reader, error) {
	info, err := g.chooseLayer(opts.Layer)
	if err != nil {
		return nil, err
	}
	limits := opts.Limits.WithDefaults()
	label := fmt.Sprintf("layer %q (%s.gdbtable)", info.Name, info.Table)
	t, err := openTable(g.fsys, g.dir, info.Table, label, g.spool)
	if err != nil {
		return nil, err
	}
	r := &Reader{t: t, info: info, opts: opts, limits: limits, idIdx: -1}
	if err := r.prepare(); err != nil {
		t.close()
		return nil, err
	}
	return r, nil
}

func (g *GDB) chooseLayer(want string) (LayerInfo, error) {
	quoted := make([]string, len(g.layers))
	for i, l := range g.layers {
		if l.Name == want {
			return l, nil
		}
		quoted[i] = strconv.Quote(l.Name)
	}
	for _, l := range g.layers {
		if want != "" && strings.EqualFold(l.Name, want) {
			return l, nil
		}
	}
	switch {
	case len(g.layers) == 0:
		return LayerInfo{}, errors.New("filegdb: the geodatabase has no layer")
	case want == "" && len(g.layers) == 1:
		return g.layers[0], nil
	case want == "":
		return LayerInfo{}, fmt.Errorf("filegdb: the geodatabase has %d layers (%s): say which one with layer:", len(g.layers), strings.Join(quoted, ", "))
	}
	return LayerInfo{}, fmt.Errorf("filegdb: no layer %s in the geodatabase; its layers: %s", feature.Snippet(want), strings.Join(quoted, ", "))
}

func (r *Reader) prepare() error {
	t := r.t
	switch t.layerType {
	case 0, 1, 2, 3, 4:
	case 9:
		return t.errorf("the layer is of multipatches (3-D surfaces), which ingestd does not read")
	default:
		return t.errorf("the layer's geometry type is %d, which ingestd does not know", t.layerType)
	}
	r.srid = r.opts.SRID
	if r.srid > 0 {
		r.crs = crs.Result{SRID: r.srid, Code: fmt.Sprintf("EPSG:%d", r.srid), By: crs.BySetting}
	} else if t.geom != nil {
		if r.info.SRID == 0 && r.info.SRIDError == nil && r.info.WKT == "" {
			r.info.CRS, r.info.SRIDError = sridOf(0, 0, t.geom.wkt)
			r.info.SRID = r.info.CRS.SRID
		}
		if r.info.SRIDError != nil {
			return t.errorf("its CRS: %v", r.info.SRIDError)
		}
		r.srid, r.crs = r.info.SRID, r.info.CRS
	}
	var names []string
	for i, f := range t.fields {
		switch f.Type {
		case ObjectID, Geometry:
			continue
		case Raster:
			logger := r.opts.Logger
			if logger == nil {
				logger = slog.New(slog.DiscardHandler)
			}
			logger.Warn("filegdb: raster field skipped", "layer", r.info.Name, "field", f.Name)
			continue
		}
		if f.Name == r.opts.IDProperty {
			r.idIdx = i
		}
		r.props = append(r.props, i)
		names = append(names, f.Name)
	}
	if r.opts.IDProperty != "" && r.idIdx < 0 {
		return t.errorf("id_property %s is no field of the layer", feature.Snippet(r.opts.IDProperty))
	}
	if len(r.props) > r.limits.Properties {
		return &feature.LimitError{Name: "properties", Max: int64(r.limits.Properties), Where: fmt.Sprintf("%s of %d fields", t.label, len(r.props))}
	}
	r.keys = propjson.NewKeys(names)
	r.vals = make([]value, len(t.fields))
	return nil
}

// Layer is the name of the layer being read.
func (r *Reader) Layer() string { return r.info.Name }

// Info describes the layer being read.
func (r *Reader) Info() LayerInfo { return r.info }

// SRID is the EPSG code every geometry carries: Options.SRID, else the
// layer's.
func (r *Reader) SRID() int { return r.srid }

// CRS is the layer's CRS and how it was identified: a WKID
// (crs.ByAuthority), its WKT (package crs), or Options.SRID
// (crs.BySetting).
func (r *Reader) CRS() crs.Result { return r.crs }

// Fields are the layer's field descriptors in table order, the OBJECTID
// and the geometry field included.
func (r *Reader) Fields() []Field { return append([]Field(nil), r.t.fields...) }

// FieldTypes lists each property with the OGR type GDAL reads it as
// (FieldType.OGR).
func (r *Reader) FieldTypes() map[string]string {
	m := make(map[string]string, len(r.props))
	for _, i := range r.props {
		m[r.t.fields[i].Name] = r.t.fields[i].Type.OGR()
	}
	return m
}

// columnType is the view's type of a field type.
func columnType(t FieldType) schema.Type {
	switch t {
	case Int16, Int32, Int64:
		return schema.BigInt
	case Float32, Float64:
		return schema.Double
	case DateTime, TimestampOffset:
		return schema.Timestamp
	case DateOnly:
		return schema.Date
	}
	return schema.Text
}

// Declared is the layer's schema as its field descriptors declare it:
// the properties in table order and the geometry type GDAL reads.
func (r *Reader) Declared() *schema.Declared {
	d := &schema.Declared{Origin: "filegdb field descriptors"}
	switch r.t.layerType {
	case 1:
		d.Geometry = "Point"
	case 2:
		d.Geometry = "MultiPoint"
	case 3:
		d.Geometry = "MultiLineString"
	case 4:
		d.Geometry = "MultiPolygon"
	}
	for _, i := range r.props {
		f := r.t.fields[i]
		d.Columns = append(d.Columns, schema.Column{Name: f.Name, Type: columnType(f.Type), Source: schema.FromDeclared})
	}
	return d
}

// Close releases the layer's files.
func (r *Reader) Close() error { return r.t.close() }

// Next returns the next feature in OBJECTID order, deleted rows skipped,
// or io.EOF after the last once the rows read are as many as the table's
// header counts. The feature is the reader's until the next call; its
// Properties are the caller's.
func (r *Reader) Next() (*feature.Feature, error) { return feature.StickyNext(&r.err, r.next) }

func (r *Reader) next() (*feature.Feature, error) {
	t := r.t
	for ; r.slot < t.slots; r.slot++ {
		if r.slot = t.skipAbsent(r.slot); r.slot >= t.slots {
			break
		}
		oid := r.slot + 1
		blob, ok, err := t.readRow(r.slot, r.buf, r.limits.FeatureBytes)
		r.buf = blob
		if err != nil {
			return nil, t.rowError(oid, err)
		}
		if !ok {
			continue
		}
		r.rows++
		if r.rows > t.validRows {
			return nil, t.errorf("its index leads to more rows than the %d its header counts: the file is damaged", t.validRows)
		}
		if err := t.splitRow(blob, r.vals, r.limits.ValueBytes); err != nil {
			return nil, t.rowError(oid, err)
		}
		r.slot++
		f, err := r.feature(oid)
		if err != nil {
			return nil, t.rowError(oid, err)
		}
		return f, nil
	}
	if r.rows != t.validRows {
		return nil, t.errorf("its header counts %d rows, its index leads to %d: the file is damaged or cut short", t.validRows, r.rows)
	}
	return nil, io.EOF
}

func (r *Reader) feature(oid int64) (*feature.Feature, error) {
	t := r.t
	r.f = feature.Feature{ID: strconv.FormatInt(oid, 10)}
	if t.geomIndex >= 0 && !r.vals[t.geomIndex].null {
		g, err := decodeGeometry(r.vals[t.geomIndex].b, t.geom, r.srid)
		if err != nil {
			return nil, fmt.Errorf("geometry: %w", err)
		}
		r.f.Geometry = g
	}
	r.obj.Reset()
	for k, i := range r.props {
		r.obj.Key(r.keys, k)
		start := r.obj.Len()
		if err := r.appendValue(&t.fields[i], r.vals[i]); err != nil {
			return nil, fmt.Errorf("field %s: %w", t.fields[i].Name, err)
		}
		if i == r.idIdx {
			r.f.ID = r.idText(start)
		}
	}
	r.f.Properties = r.obj.Bytes()
	r.f.Repairs = r.obj.Repairs
	if why := feature.RefuseID(r.f.ID, r.limits.IDBytes); why != "" {
		return &feature.Feature{Refused: why}, nil
	}
	return &r.f, nil
}

// idText is the id property's value, written from start in the object:
// a string's text, a number's digits, "" for null.
func (r *Reader) idText(start int) string {
	b := r.obj.Bytes()
	v := b[start : len(b)-1]
	if string(v) == "null" {
		return ""
	}
	if s, err := strconv.Unquote(string(v)); err == nil {
		return s
	}
	return string(v)
}

// epoch is day 0 of the File Geodatabase's dates, 1899-12-30 UTC.
var epoch = time.Date(1899, 12, 30, 0, 0, 0, 0, time.UTC)

// dayTime is the instant days after epoch, to the millisecond; ok is
// false when it is no date (NaN, out of the years 1 to 9999).
func dayTime(days float64) (time.Time, bool) {
	if math.IsNaN(days) || days < -693593 || days > 2958465 {
		return time.Time{}, false
	}
	ms := math.Round(days * 86400000)
	return epoch.Add(time.Duration(ms) * time.Millisecond), true
}

func (r *Reader) appendValue(f *Field, v value) error {
	o := &r.obj
	if v.null {
		o.Null()
		return nil
	}
	le := binary.LittleEndian
	b := v.b
	switch f.Type {
	case Int16:
		o.Int(int64(int16(le.Uint16(b))))
	case Int32:
		o.Int(int64(int32(le.Uint32(b))))
	case Int64:
		o.Int(int64(le.Uint64(b)))
	case Float32:
		o.Float(float64(math.Float32frombits(le.Uint32(b))), 32)
	case Float64:
		o.Float(math.Float64frombits(le.Uint64(b)), 64)
	case String, XML:
		o.Text(b)
	case Binary:
		o.Base64(b)
	case GUID, GlobalID:
		o.String(fmt.Sprintf("{%08X-%04X-%04X-%02X%02X-%02X%02X%02X%02X%02X%02X}",
			le.Uint32(b), le.Uint16(b[4:]), le.Uint16(b[6:]), b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
	case DateTime:
		tm, ok := dayTime(math.Float64frombits(le.Uint64(b)))
		if !ok {
			o.Null()
			break
		}
		o.String(tm.Format("2006-01-02T15:04:05.999Z07:00"))
	case DateOnly:
		tm, ok := dayTime(math.Float64frombits(le.Uint64(b)))
		if !ok {
			o.Null()
			break
		}
		o.String(tm.Format(time.DateOnly))
	case TimeOnly:
		frac := math.Float64frombits(le.Uint64(b))
		if math.IsNaN(frac) || frac < 0 || frac >= 1 {
			o.Null()
			break
		}
		tm := epoch.Add(time.Duration(math.Round(frac*86400000)) * time.Millisecond)
		o.String(tm.Format("15:04:05.999"))
	case TimestampOffset:
		tm, ok := dayTime(math.Float64frombits(le.Uint64(b)))
		offset := int(int16(le.Uint16(b[8:])))
		if !ok || offset < -14*60 || offset > 14*60 {
			o.Null()
			break
		}
		// The days are the local time at the offset.
		zone := time.FixedZone("", offset*60)
		local := time.Date(tm.Year(), tm.Month(), tm.Day(), tm.Hour(), tm.Minute(), tm.Second(), tm.Nanosecond(), zone)
		o.String(local.Format("2006-01-02T15:04:05.999Z07:00"))
	default:
		return fmt.Errorf("type %s cannot be a property", f.Type)
	}
	return nil
}
