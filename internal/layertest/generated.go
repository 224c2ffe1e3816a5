package layertest

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/ewkb"
)

// FieldType is the XML Schema type of a generated layer's attribute.
type FieldType string

// Attribute types, as DescribeFeatureType names them.
const (
	String  FieldType = "xsd:string"
	Integer FieldType = "xsd:long"
	Double  FieldType = "xsd:double"
	Boolean FieldType = "xsd:boolean"
	Date    FieldType = "xsd:date"
)

// Field is one attribute of a generated layer.
type Field struct {
	Name string
	Type FieldType
}

// Record is one generated feature: an id, a geometry and one value per field,
// already in text form.
type Record struct {
	ID string
	// Kind is "Point" or "Polygon" (one ring, closed).
	Kind string
	// Coords are x,y pairs, longitude first.
	Coords []float64
	Values []string
}

// Generated is a layer whose features are computed from their index, so that
// millions of them cost no memory. Besides GeoJSON it can be served as GML 3.2
// and described by DescribeFeatureType, which is what GDAL's WFS driver needs.
type Generated interface {
	Layer
	Fields() []Field
	Record(i int, rec *Record)
}

// appendGeoJSONRecord renders rec as a GeoJSON Feature.
func appendGeoJSONRecord(buf []byte, fields []Field, rec *Record) []byte {
	buf = append(buf, `{"type":"Feature","id":`...)
	buf = strconv.AppendQuote(buf, rec.ID)
	buf = append(buf, `,"geometry":{"type":"`...)
	buf = append(buf, rec.Kind...)
	buf = append(buf, `","coordinates":`...)
	if rec.Kind == "Polygon" {
		buf = append(buf, "[["...)
	}
	for k := 0; k+1 < len(rec.Coords); k += 2 {
		if k > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '[')
		buf = strconv.AppendFloat(buf, rec.Coords[k], 'f', -1, 64)
		buf = append(buf, ',')
		buf = strconv.AppendFloat(buf, rec.Coords[k+1], 'f', -1, 64)
		buf = append(buf, ']')
	}
	if rec.Kind == "Polygon" {
		buf = append(buf, "]]"...)
	}
	buf = append(buf, `},"properties":{`...)
	for f, field := range fields {
		if f > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendQuote(buf, field.Name)
		buf = append(buf, ':')
		switch field.Type {
		case String, Date:
			v, _ := json.Marshal(rec.Values[f])
			buf = append(buf, v...)
		default:
			buf = append(buf, rec.Values[f]...)
		}
	}
	return append(buf, "}}"...)
}

// Parcels is a generated layer of n parcel-like polygons (five-vertex rings on a
// grid) with a dozen typed attributes. Feature i is the same on every call, so
// a layer served twice is the same snapshot.
type Parcels struct {
	N int
	// Version changes the assessed value of every 100th feature when non-zero,
	// for tests that need a second, slightly different snapshot.
	Version int
}

var parcelFields = []Field{
	{"pin", String}, {"owner", String}, {"site_address", String}, {"zoning", String},
	{"land_use", String}, {"acres", Double}, {"assessed_value", Integer}, {"year_built", Integer},
	{"bedrooms", Integer}, {"exempt", Boolean}, {"deed_date", Date}, {"township", String},
}

// Len implements Layer.
func (p Parcels) Len() int { return p.N }

// Fields implements Generated.
func (p Parcels) Fields() []Field { return parcelFields }

// Record implements Generated.
func (p Parcels) Record(i int, rec *Record) {
	const cols = 1000
	x0 := -78.9 + float64(i%cols)*0.0005
	y0 := 35.6 + float64(i/cols)*0.0005
	d := 0.0004
	rec.ID = "parcel." + strconv.Itoa(i)
	rec.Kind = "Polygon"
	rec.Coords = append(rec.Coords[:0],
		round7(x0), round7(y0), round7(x0+d), round7(y0), round7(x0+d), round7(y0+d),
		round7(x0), round7(y0+d), round7(x0), round7(y0))
	value := 100000 + (i*7919)%900000
	if p.Version != 0 && i%100 == 0 {
		value += p.Version
	}
	rec.Values = append(rec.Values[:0],
		fmt.Sprintf("%010d", i),
		"OWNER "+strconv.Itoa(i%5000),
		strconv.Itoa(100+i%9000)+" MAIN ST",
		zonings[i%len(zonings)],
		landUses[i%len(landUses)],
		strconv.FormatFloat(0.1+float64(i%400)/100, 'f', 2, 64),
		strconv.Itoa(value),
		strconv.Itoa(1900+i%125),
		strconv.Itoa(i%6),
		strconv.FormatBool(i%17 == 0),
		fmt.Sprintf("20%02d-%02d-%02d", i%25, 1+i%12, 1+i%28),
		"T"+strconv.Itoa(i%20),
	)
}

// AppendFeature implements Layer.
func (p Parcels) AppendFeature(buf []byte, i int) []byte {
	var rec Record
	p.Record(i, &rec)
	return appendGeoJSONRecord(buf, parcelFields, &rec)
}

// Points is a generated layer of n address points with a handful of attributes.
type Points struct{ N int }

var pointFields = []Field{
	{"address_id", Integer}, {"number", Integer}, {"street", String},
	{"city", String}, {"zip", String}, {"status", String},
}

// Len implements Layer.
func (p Points) Len() int { return p.N }

// Fields implements Generated.
func (p Points) Fields() []Field { return pointFields }

// Record implements Generated.
func (p Points) Record(i int, rec *Record) {
	rec.ID = "address." + strconv.Itoa(i)
	rec.Kind = "Point"
	rec.Coords = append(rec.Coords[:0], round7(-78.9+float64(i%2000)*0.00025), round7(35.6+float64(i/2000)*0.00025))
	status := "active"
	if i%23 == 0 {
		status = "retired"
	}
	rec.Values = append(rec.Values[:0],
		strconv.Itoa(i), strconv.Itoa(1+i%9999), streets[i%len(streets)],
		"Raleigh", "2760"+strconv.Itoa(1+i%9), status)
}

// AppendFeature implements Layer.
func (p Points) AppendFeature(buf []byte, i int) []byte {
	var rec Record
	p.Record(i, &rec)
	return appendGeoJSONRecord(buf, pointFields, &rec)
}

var (
	zonings  = []string{"R-4", "R-6", "R-10", "RX-3", "OX-4", "CX-5", "IX-3", "DX-12", "NX-3", "AP"}
	landUses = []string{"single family", "multi family", "commercial", "industrial", "vacant", "institutional"}
	streets  = []string{"Fayetteville St", "Hillsborough St", "Glenwood Ave", "Person St", "Blount St", "Wilmington St"}
)

func round7(f float64) float64 { return math.Round(f*1e7) / 1e7 }

// AppendCopyRow appends feature i of l as one line of PostgreSQL COPY text
// format: feature id, hex EWKB geometry (SRID 4326), properties JSON. The
// benchmarks COPY these rows as the floor no loader can beat.
func AppendCopyRow(buf []byte, l Generated, i int) []byte {
	var rec Record
	l.Record(i, &rec)
	var g geom.T
	if rec.Kind == "Point" {
		g = geom.NewPointFlat(geom.XY, rec.Coords).SetSRID(4326)
	} else {
		g = geom.NewPolygonFlat(geom.XY, rec.Coords, []int{len(rec.Coords)}).SetSRID(4326)
	}
	wkb, err := ewkb.Marshal(g, binary.LittleEndian)
	if err != nil {
		panic(err) // generated geometries are always valid
	}
	buf = append(buf, rec.ID...)
	buf = append(buf, '\t')
	buf = hex.AppendEncode(buf, wkb)
	buf = append(buf, '\t')
	feature := appendGeoJSONRecord(nil, l.Fields(), &rec)
	props := feature[bytes.Index(feature, []byte(`"properties":`))+len(`"properties":`) : len(feature)-1]
	// COPY text format escapes backslashes; generated values have no tabs or newlines.
	buf = append(buf, bytes.ReplaceAll(props, []byte(`\`), []byte(`\\`))...)
	return append(buf, '\n')
}
