package socrata

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/ingestd/ingestd/schema"
)

// View is what ingestd reads of a dataset's metadata (/api/views/<4x4>.json).
type View struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	ViewType string `json:"viewType"`
	// RowsUpdatedAt is when the dataset's rows last changed (Unix
	// seconds; 0 when the portal does not say).
	RowsUpdatedAt int64    `json:"rowsUpdatedAt"`
	Columns       []Column `json:"columns"`
}

// Column is one column of a dataset's metadata.
type Column struct {
	// FieldName is the column's name in the API (the rows' keys).
	FieldName string `json:"fieldName"`
	// Name is its human name.
	Name string `json:"name"`
	// DataTypeName is its SODA type: text, number, calendar_date,
	// checkbox, point, multipolygon, …
	DataTypeName string `json:"dataTypeName"`
}

// geometryTypes are the SODA 2.1 geometry types (GeoJSON values in .json
// answers), by the view's geometry type.
var geometryTypes = map[string]string{
	"point": "Point", "line": "LineString", "polygon": "Polygon",
	"multipoint": "MultiPoint", "multiline": "MultiLineString", "multipolygon": "MultiPolygon",
}

// ColumnType is the typed view's type of a SODA column type, false for a
// type the view leaves to inference (and for the geometry types):
//
//   - number, money and percent are numeric: SODA numbers are arbitrary
//     precision decimals, sent as strings ("12.50"), which double
//     precision would round;
//   - double is double precision;
//   - calendar_date (a floating timestamp, no zone: taken as UTC) and
//     date (a fixed timestamp) are timestamptz;
//   - checkbox is boolean;
//   - text, email and html are text;
//   - url and location (objects) are jsonb.
func ColumnType(dataTypeName string) (schema.Type, bool) {
	switch strings.ToLower(dataTypeName) {
	case "number", "money", "percent":
		return schema.Numeric, true
	case "double":
		return schema.Double, true
	case "calendar_date", "date", "floating_timestamp", "fixed_timestamp":
		return schema.Timestamp, true
	case "checkbox":
		return schema.Boolean, true
	case "text", "email", "html":
		return schema.Text, true
	case "url", "location":
		return schema.JSON, true
	}
	return "", false
}

// systemColumns are the system fields a page selects besides :id (the
// feature id) and the dataset's columns, and their types: both are fixed
// timestamps.
var systemColumns = []string{":created_at", ":updated_at"}

// geometryColumn picks the column whose values are the geometries: want
// when set (it must be a geometry column of the dataset), else the first
// geometry column; "" when the dataset has none.
func (v *View) geometryColumn(want string) (string, error) {
	var geo []string
	for _, c := range v.Columns {
		if _, ok := geometryTypes[strings.ToLower(c.DataTypeName)]; ok {
			geo = append(geo, c.FieldName)
		}
	}
	if want == "" {
		if len(geo) == 0 {
			return "", nil
		}
		return geo[0], nil
	}
	for _, c := range v.Columns {
		if c.FieldName == want {
			if _, ok := geometryTypes[strings.ToLower(c.DataTypeName)]; !ok {
				return "", fmt.Errorf("geometry_column %q is of type %s, not a geometry (its geometry columns: %s)", want, c.DataTypeName, listOrNone(geo))
			}
			return want, nil
		}
	}
	return "", fmt.Errorf("geometry_column %q is not a column of the dataset (its geometry columns: %s)", want, listOrNone(geo))
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// Declared is the dataset's schema as its metadata declares it: its
// columns in the metadata's order, typed by ColumnType (others inferred),
// the geometry column left out (it is the geometry), and the system
// fields :created_at and :updated_at, which every page selects.
func (v *View) Declared(geomColumn string) *schema.Declared {
	d := &schema.Declared{Origin: "socrata metadata columns"}
	for _, c := range v.Columns {
		if c.FieldName == geomColumn {
			d.Geometry = geometryTypes[strings.ToLower(c.DataTypeName)]
			continue
		}
		if strings.HasPrefix(c.FieldName, ":") {
			continue // computed regions and other hidden columns: not selected
		}
		col := schema.Column{Name: c.FieldName, Source: schema.FromDeclared}
		if t, ok := ColumnType(c.DataTypeName); ok {
			col.Type = t
		}
		d.Columns = append(d.Columns, col)
	}
	for _, name := range systemColumns {
		d.Columns = append(d.Columns, schema.Column{Name: name, Type: schema.Timestamp, Source: schema.FromDeclared})
	}
	return d
}

// columnNames lists the columns' field names in the metadata's order.
func (v *View) columnNames() string {
	names := make([]string, len(v.Columns))
	for i, c := range v.Columns {
		names[i] = c.FieldName
	}
	return strings.Join(names, ", ")
}

// columnsDigest fingerprints the columns (names and types, in order) for
// the cheap refresh's version: a retyped column must not be answered
// "unchanged", since the types are the stored schema's.
func (v *View) columnsDigest() string {
	h := fnv.New32a()
	for _, c := range v.Columns {
		h.Write([]byte(c.FieldName))
		h.Write([]byte{0})
		h.Write([]byte(c.DataTypeName))
		h.Write([]byte{0})
	}
	return strconv.FormatUint(uint64(h.Sum32()), 16)
}
