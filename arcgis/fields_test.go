package arcgis

import (
	"testing"

	"github.com/ingestd/ingestd/encoding/esrijson"
	"github.com/ingestd/ingestd/schema"
)

func TestFieldType(t *testing.T) {
	cases := []struct {
		esri string
		want schema.Type // "": not a column
	}{
		{"esriFieldTypeOID", schema.BigInt},
		{"esriFieldTypeSmallInteger", schema.BigInt},
		{"esriFieldTypeInteger", schema.BigInt},
		{"esriFieldTypeBigInteger", schema.BigInt},
		{"esriFieldTypeSingle", schema.Double},
		{"esriFieldTypeDouble", schema.Double},
		{"esriFieldTypeString", schema.Text},
		{"esriFieldTypeGUID", schema.Text},
		{"esriFieldTypeGlobalID", schema.Text},
		{"esriFieldTypeDate", schema.Timestamp},
		{"esriFieldTypeDateOnly", schema.Date},
		{"esriFieldTypeTimeOnly", schema.Text},
		{"esriFieldTypeTimestampOffset", schema.Timestamp},
		{"esriFieldTypeGeometry", ""},
		{"esriFieldTypeBlob", ""},
		{"esriFieldTypeRaster", ""},
		{"esriFieldTypeXML", ""},
		{"esriFieldTypeNoSuchType", ""},
		{"", ""},
	}
	for _, c := range cases {
		got, ok := FieldType(c.esri)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("FieldType(%q) = %q, %v; want %q", c.esri, got, ok, c.want)
		}
		if ok && !got.Valid() {
			t.Errorf("FieldType(%q) = %q, not a column type", c.esri, got)
		}
	}
}

func TestLayerInfoDeclared(t *testing.T) {
	li := LayerInfo{GeometryType: esrijson.TypePolygon, ObjectIDField: "OBJECTID", Fields: []esrijson.Field{
		fld("OBJECTID", "esriFieldTypeOID"), fld("Shape", "esriFieldTypeGeometry"), fld("PIN", "esriFieldTypeString"),
		fld("ACRES", "esriFieldTypeDouble"), fld("SALE_DATE", "esriFieldTypeDate"), fld("PHOTO", "esriFieldTypeBlob"),
	}}
	d := li.Declared("", "OBJECTID")
	want := []schema.Column{{Name: "OBJECTID", Type: schema.BigInt}, {Name: "PIN", Type: schema.Text},
		{Name: "ACRES", Type: schema.Double}, {Name: "SALE_DATE", Type: schema.Timestamp}}
	check := func(d *schema.Declared, want []schema.Column) {
		t.Helper()
		if d.Geometry != "MultiPolygon" || d.Origin == "" || len(d.Columns) != len(want) {
			t.Fatalf("declared %+v, want columns %+v", d, want)
		}
		for i, c := range d.Columns {
			if c.Name != want[i].Name || c.Type != want[i].Type || c.Source != schema.FromDeclared {
				t.Errorf("column %d: %+v, want %+v (declared)", i, c, want[i])
			}
		}
	}
	check(d, want)
	check(li.Declared("*", "OBJECTID"), want)
	// out_fields: the fields listed (any case, spaces), plus the object id
	// and the id property, which every query adds.
	check(li.Declared(" acres ,NOPE", "PIN"), []schema.Column{{Name: "OBJECTID", Type: schema.BigInt},
		{Name: "PIN", Type: schema.Text}, {Name: "ACRES", Type: schema.Double}})

	for g, want := range map[string]string{esrijson.TypePoint: "Point", esrijson.TypeMultipoint: "MultiPoint",
		esrijson.TypePolyline: "MultiLineString", esrijson.TypePolygon: "MultiPolygon", "": ""} {
		li := LayerInfo{GeometryType: g}
		if got := li.Declared("", "").Geometry; got != want {
			t.Errorf("%q: geometry %q, want %q", g, got, want)
		}
	}
}

func TestFieldsDigest(t *testing.T) {
	a := LayerInfo{Fields: []esrijson.Field{fld("A", "esriFieldTypeString"), fld("B", "esriFieldTypeInteger")}}
	seen := map[string]string{a.fieldsDigest(): "a"}
	for name, li := range map[string]LayerInfo{
		"retyped":   {Fields: []esrijson.Field{fld("A", "esriFieldTypeString"), fld("B", "esriFieldTypeDouble")}},
		"renamed":   {Fields: []esrijson.Field{fld("A", "esriFieldTypeString"), fld("C", "esriFieldTypeInteger")}},
		"reordered": {Fields: []esrijson.Field{fld("B", "esriFieldTypeInteger"), fld("A", "esriFieldTypeString")}},
		"added":     {Fields: []esrijson.Field{fld("A", "esriFieldTypeString"), fld("B", "esriFieldTypeInteger"), fld("C", "esriFieldTypeString")}},
		"shifted":   {Fields: []esrijson.Field{fld("AesriFieldTypeString", ""), fld("B", "esriFieldTypeInteger")}},
	} {
		d := li.fieldsDigest()
		if other, dup := seen[d]; dup {
			t.Errorf("%s has the digest of %s", name, other)
		}
		seen[d] = name
	}
	b := LayerInfo{Fields: a.Fields}
	if b.fieldsDigest() != a.fieldsDigest() {
		t.Errorf("the same fields, two digests")
	}
}

func fld(name, typ string) esrijson.Field { return esrijson.Field{Name: name, Type: typ} }
