package schema

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
)

// XSDType maps an XML Schema simple type (the local name: "int",
// "decimal", "dateTime") to a column type. Integers of every width are
// bigint; decimal is numeric (exact); double and float are double
// precision; date and dateTime are date and timestamptz; everything else
// (string, time, anyURI, duration) is text.
func XSDType(local string) Type {
	switch local {
	case "integer", "int", "long", "short", "byte", "nonNegativeInteger", "positiveInteger",
		"negativeInteger", "nonPositiveInteger", "unsignedInt", "unsignedLong", "unsignedShort", "unsignedByte":
		return BigInt
	case "decimal":
		return Numeric
	case "double", "float":
		return Double
	case "boolean":
		return Boolean
	case "date":
		return Date
	case "dateTime":
		return Timestamp
	}
	return Text
}

// gmlGeometry maps a GML property type (local name) to a geometry type.
var gmlGeometry = map[string]string{
	"PointPropertyType": "Point", "MultiPointPropertyType": "MultiPoint",
	"LineStringPropertyType": "LineString", "CurvePropertyType": "LineString",
	"MultiLineStringPropertyType": "MultiLineString", "MultiCurvePropertyType": "MultiLineString",
	"PolygonPropertyType": "Polygon", "SurfacePropertyType": "Polygon",
	"MultiPolygonPropertyType": "MultiPolygon", "MultiSurfacePropertyType": "MultiPolygon",
	"GeometryPropertyType": "", "MultiGeometryPropertyType": "",
}

// xsdNode is an element of an XML Schema document.
type xsdNode struct {
	XMLName  xml.Name
	Name     string    `xml:"name,attr"`
	Type     string    `xml:"type,attr"`
	Base     string    `xml:"base,attr"`
	Children []xsdNode `xml:",any"`
}

// maxXSDBytes bounds what FromXSD reads: far more than any feature
// type's schema (callers that fetch one bound the body lower still).
const maxXSDBytes = 16 << 20

// ErrNoFeatureType means the XML Schema does not describe the feature type.
var ErrNoFeatureType = errors.New("schema: the XML Schema does not describe the feature type")

// FromXSD reads a WFS DescribeFeatureType answer and returns the
// declared schema of typeName (prefix optional): its properties in
// document order, typed by XSDType, and the geometry type of its first
// geometry property when it names one (gml:GeometryPropertyType names
// none). A schema with a single complex type is taken as the layer's.
func FromXSD(r io.Reader, typeName string) (*Declared, error) {
	var root xsdNode
	if err := xml.NewDecoder(io.LimitReader(r, maxXSDBytes)).Decode(&root); err != nil {
		return nil, fmt.Errorf("schema: DescribeFeatureType: %w", err)
	}
	if root.XMLName.Local != "schema" {
		return nil, fmt.Errorf("schema: DescribeFeatureType: root element %s, not an XML Schema", root.XMLName.Local)
	}
	local := localName(typeName)
	var complexName string
	var complexTypes []*xsdNode
	for i := range root.Children {
		n := &root.Children[i]
		switch n.XMLName.Local {
		case "element":
			if n.Name == local {
				complexName = localName(n.Type)
			}
		case "complexType":
			complexTypes = append(complexTypes, n)
		}
	}
	var ct *xsdNode
	for _, c := range complexTypes {
		if c.Name == complexName || (complexName == "" && c.Name == local+"Type") {
			ct = c
		}
	}
	if ct == nil && len(complexTypes) == 1 {
		ct = complexTypes[0]
	}
	if ct == nil {
		return nil, fmt.Errorf("%w %q", ErrNoFeatureType, typeName)
	}
	d := &Declared{Origin: "wfs DescribeFeatureType"}
	geomSeen := false
	var walk func(n *xsdNode)
	walk = func(n *xsdNode) {
		for i := range n.Children {
			c := &n.Children[i]
			if c.XMLName.Local != "element" {
				walk(c)
				continue
			}
			typ := localName(c.Type)
			if typ == "" {
				typ = localName(restrictionBase(c))
			}
			if g, ok := gmlGeometry[typ]; ok || strings.HasSuffix(typ, "PropertyType") {
				if !geomSeen {
					d.Geometry, geomSeen = g, true
				}
				continue
			}
			d.Columns = append(d.Columns, Column{Name: c.Name, Type: XSDType(typ), Source: FromDeclared})
		}
	}
	walk(ct)
	return d, nil
}

// restrictionBase finds the base of an anonymous simpleType's restriction.
func restrictionBase(n *xsdNode) string {
	for i := range n.Children {
		c := &n.Children[i]
		if c.XMLName.Local == "restriction" && c.Base != "" {
			return c.Base
		}
		if b := restrictionBase(c); b != "" {
			return b
		}
	}
	return ""
}

func localName(qname string) string {
	if i := strings.LastIndexByte(qname, ':'); i >= 0 {
		return qname[i+1:]
	}
	return qname
}
