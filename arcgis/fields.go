package arcgis

import (
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	"github.com/ingestd/ingestd/encoding/esrijson"
	"github.com/ingestd/ingestd/schema"
)

// FieldType maps an esriFieldType* to the typed view's column type, and
// reports false for the types that are not attributes a view can hold
// (Geometry, Blob, Raster, XML) or that it does not know. The widenings,
// as the typed view's types are fewer than Esri's:
//
//   - OID, SmallInteger, Integer (16 and 32 bits) and BigInteger (64)
//     are bigint;
//   - Single and Double are double precision (a float32 read as a double
//     shows its binary digits: 0.1f is 0.10000000149011612);
//   - String, GUID and GlobalID are text;
//   - Date is timestamptz (the decoder writes its epoch milliseconds as
//     ISO-8601 UTC), and so is TimestampOffset (an ISO-8601 string with
//     its offset);
//   - DateOnly is date; TimeOnly is text (no time type in the view).
func FieldType(esriType string) (schema.Type, bool) {
	switch esriType {
	case esrijson.FieldOID, "esriFieldTypeSmallInteger", "esriFieldTypeInteger", "esriFieldTypeBigInteger":
		return schema.BigInt, true
	case "esriFieldTypeSingle", "esriFieldTypeDouble":
		return schema.Double, true
	case "esriFieldTypeString", "esriFieldTypeGUID", "esriFieldTypeGlobalID", "esriFieldTypeTimeOnly":
		return schema.Text, true
	case esrijson.FieldDate, "esriFieldTypeTimestampOffset":
		return schema.Timestamp, true
	case "esriFieldTypeDateOnly":
		return schema.Date, true
	}
	return "", false
}

// declaredGeometry is the view's geometry type of an esriGeometry*: the
// multi-part type where the decoder writes single and multi parts.
var declaredGeometry = map[string]string{
	esrijson.TypePoint:      "Point",
	esrijson.TypeMultipoint: "MultiPoint",
	esrijson.TypePolyline:   "MultiLineString",
	esrijson.TypePolygon:    "MultiPolygon",
}

// Declared is the layer's schema as its probe declares it: its fields in
// the layer's order, typed by FieldType (fields of other types left out),
// and its geometry type. When the feed's out_fields lists fields, only
// those and the object id and id property fields (which every query adds)
// are declared: a declared column the answers never carry would stay all
// null in the view.
func (li *LayerInfo) Declared(outFields, idField string) *schema.Declared {
	var want []string
	if outFields != "" && outFields != "*" {
		for _, f := range strings.Split(outFields, ",") {
			want = append(want, strings.TrimSpace(f))
		}
		want = append(want, li.ObjectIDField, idField)
	}
	d := &schema.Declared{Geometry: declaredGeometry[li.GeometryType], Origin: "arcgis layer fields"}
	for _, f := range li.Fields {
		t, ok := FieldType(f.Type)
		if !ok {
			continue
		}
		if want != nil && !slices.ContainsFunc(want, func(w string) bool { return strings.EqualFold(w, f.Name) }) {
			continue
		}
		d.Columns = append(d.Columns, schema.Column{Name: f.Name, Type: t, Source: schema.FromDeclared})
	}
	return d
}

// fieldsDigest fingerprints the layer's fields (names and types, in
// order) for the cheap refresh's version.
func (li *LayerInfo) fieldsDigest() string {
	h := fnv.New32a()
	for _, f := range li.Fields {
		h.Write([]byte(f.Name))
		h.Write([]byte{0})
		h.Write([]byte(f.Type))
		h.Write([]byte{0})
	}
	return strconv.FormatUint(uint64(h.Sum32()), 16)
}
