package wfstest

import (
	"fmt"
	"html"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/ingestd/ingestd/internal/layertest"
)

// wantsGML reports whether a GetFeature outputFormat asks for GML. As on real
// WFS 2.0 servers, a request without outputFormat gets GML 3.2.
func wantsGML(outputFormat string) bool {
	f := strings.ToLower(outputFormat)
	return f == "" || strings.Contains(f, "gml") || strings.Contains(f, "xml")
}

// renderGML32Page renders the requested slice of a generated layer as a WFS 2.0
// FeatureCollection in GML 3.2.
func renderGML32Page(l layertest.Generated, req Request, crs84 bool) []byte {
	start := min(max(req.StartIndex, 0), l.Len())
	end := l.Len()
	if req.Count >= 0 {
		end = min(start+req.Count, l.Len())
	}
	fields := l.Fields()
	buf := make([]byte, 0, 700*(end-start)+512)
	buf = fmt.Appendf(buf, `<?xml version="1.0" encoding="UTF-8"?>
<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs/2.0" xmlns:gml="http://www.opengis.net/gml/3.2" xmlns:ingestd="http://ingestd.example/fixture" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" numberMatched="%d" numberReturned="%d" timeStamp="2026-01-01T00:00:00Z">`,
		l.Len(), end-start)
	var rec layertest.Record
	for i := start; i < end; i++ {
		l.Record(i, &rec)
		buf = appendGML32Record(buf, req.Layer, fields, &rec, crs84)
	}
	return append(buf, "</wfs:FeatureCollection>\n"...)
}

// appendGML32Record renders rec as a GML 3.2 wfs:member, the way GeoServer
// answers WFS 2.0: urn:ogc:def:crs:EPSG::4326, so latitude comes first (or
// CRS84, longitude first).
func appendGML32Record(buf []byte, typeName string, fields []layertest.Field, rec *layertest.Record, crs84 bool) []byte {
	srs, appendPos := `srsName="urn:ogc:def:crs:EPSG::4326"`, appendLatLon
	if crs84 {
		srs, appendPos = `srsName="urn:ogc:def:crs:OGC:1.3:CRS84"`, appendLonLat
	}
	buf = append(buf, "<wfs:member><ingestd:"...)
	buf = append(buf, typeName...)
	buf = append(buf, ` gml:id="`...)
	buf = append(buf, html.EscapeString(rec.ID)...)
	buf = append(buf, `"><ingestd:geom>`...)
	switch rec.Kind {
	case "Point":
		buf = append(buf, `<gml:Point `+srs+` srsDimension="2"><gml:pos>`...)
		buf = appendPos(buf, rec.Coords)
		buf = append(buf, `</gml:pos></gml:Point>`...)
	default:
		buf = append(buf, `<gml:Polygon `+srs+` srsDimension="2"><gml:exterior><gml:LinearRing><gml:posList>`...)
		buf = appendPos(buf, rec.Coords)
		buf = append(buf, `</gml:posList></gml:LinearRing></gml:exterior></gml:Polygon>`...)
	}
	buf = append(buf, `</ingestd:geom>`...)
	for f, field := range fields {
		buf = append(buf, "<ingestd:"...)
		buf = append(buf, field.Name...)
		buf = append(buf, '>')
		buf = append(buf, html.EscapeString(rec.Values[f])...)
		buf = append(buf, "</ingestd:"...)
		buf = append(buf, field.Name...)
		buf = append(buf, '>')
	}
	buf = append(buf, "</ingestd:"...)
	buf = append(buf, typeName...)
	return append(buf, "></wfs:member>"...)
}

func appendLonLat(buf []byte, coords []float64) []byte {
	for k := 0; k+1 < len(coords); k += 2 {
		if k > 0 {
			buf = append(buf, ' ')
		}
		buf = strconv.AppendFloat(buf, coords[k], 'f', -1, 64)
		buf = append(buf, ' ')
		buf = strconv.AppendFloat(buf, coords[k+1], 'f', -1, 64)
	}
	return buf
}

func appendLatLon(buf []byte, coords []float64) []byte {
	for k := 0; k+1 < len(coords); k += 2 {
		if k > 0 {
			buf = append(buf, ' ')
		}
		buf = strconv.AppendFloat(buf, coords[k+1], 'f', -1, 64)
		buf = append(buf, ' ')
		buf = strconv.AppendFloat(buf, coords[k], 'f', -1, 64)
	}
	return buf
}

func writeHits(w http.ResponseWriter, n int) {
	w.Header().Set("Content-Type", "application/gml+xml; version=3.2")
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs/2.0" numberMatched="%d" numberReturned="0" timeStamp="2026-01-01T00:00:00Z"/>
`, n)
}

// writeCapabilities answers a WFS 2.0.0 GetCapabilities: every layer, GeoJSON
// and GML 3.2 output, and ImplementsResultPaging.
func (s *Server) writeCapabilities(w http.ResponseWriter, r *http.Request) {
	s.mu.RLock()
	names := make([]string, 0, len(s.layers))
	for name := range s.layers {
		names = append(names, name)
	}
	s.mu.RUnlock()
	sort.Strings(names)
	endpoint := html.EscapeString("http://" + r.Host + r.URL.Path)
	crs := "urn:ogc:def:crs:EPSG::4326"
	if s.CRS84 {
		crs = "urn:ogc:def:crs:OGC:1.3:CRS84"
	}
	w.Header().Set("Content-Type", "application/xml")
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<wfs:WFS_Capabilities version="2.0.0" xmlns:wfs="http://www.opengis.net/wfs/2.0" xmlns:ows="http://www.opengis.net/ows/1.1" xmlns:xlink="http://www.w3.org/1999/xlink" xmlns:fes="http://www.opengis.net/fes/2.0" xmlns:ingestd="http://ingestd.example/fixture">
  <ows:ServiceIdentification><ows:Title>ingestd fixture feed server</ows:Title><ows:ServiceType>WFS</ows:ServiceType><ows:ServiceTypeVersion>2.0.0</ows:ServiceTypeVersion></ows:ServiceIdentification>
  <ows:OperationsMetadata>
    <ows:Operation name="GetCapabilities"><ows:DCP><ows:HTTP><ows:Get xlink:href="%[1]s"/></ows:HTTP></ows:DCP></ows:Operation>
    <ows:Operation name="DescribeFeatureType"><ows:DCP><ows:HTTP><ows:Get xlink:href="%[1]s"/></ows:HTTP></ows:DCP></ows:Operation>
    <ows:Operation name="GetFeature"><ows:DCP><ows:HTTP><ows:Get xlink:href="%[1]s"/></ows:HTTP></ows:DCP>
      <ows:Parameter name="outputFormat"><ows:AllowedValues><ows:Value>application/gml+xml; version=3.2</ows:Value><ows:Value>application/json</ows:Value></ows:AllowedValues></ows:Parameter>
      <ows:Parameter name="resultType"><ows:AllowedValues><ows:Value>results</ows:Value><ows:Value>hits</ows:Value></ows:AllowedValues></ows:Parameter>
    </ows:Operation>
    <ows:Constraint name="ImplementsBasicWFS"><ows:NoValues/><ows:DefaultValue>TRUE</ows:DefaultValue></ows:Constraint>
    <ows:Constraint name="ImplementsResultPaging"><ows:NoValues/><ows:DefaultValue>TRUE</ows:DefaultValue></ows:Constraint>
    <ows:Constraint name="CountDefault"><ows:NoValues/><ows:DefaultValue>1000000</ows:DefaultValue></ows:Constraint>
  </ows:OperationsMetadata>
  <wfs:FeatureTypeList>
`, endpoint)
	for _, name := range names {
		fmt.Fprintf(w, `    <wfs:FeatureType><wfs:Name>ingestd:%s</wfs:Name><wfs:Title>%s</wfs:Title><wfs:DefaultCRS>%s</wfs:DefaultCRS><ows:WGS84BoundingBox><ows:LowerCorner>-180 -90</ows:LowerCorner><ows:UpperCorner>180 90</ows:UpperCorner></ows:WGS84BoundingBox></wfs:FeatureType>
`, html.EscapeString(name), html.EscapeString(name), crs)
	}
	fmt.Fprint(w, `  </wfs:FeatureTypeList>
  <fes:Filter_Capabilities><fes:Conformance><fes:Constraint name="ImplementsSorting"><ows:NoValues/><ows:DefaultValue>TRUE</ows:DefaultValue></fes:Constraint></fes:Conformance></fes:Filter_Capabilities>
</wfs:WFS_Capabilities>
`)
}

// writeDescribeFeatureType answers with the XML Schema of a generated layer.
func (s *Server) writeDescribeFeatureType(w http.ResponseWriter, typeNames string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	w.Header().Set("Content-Type", "application/gml+xml; version=3.2")
	fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?>
<xsd:schema xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:gml="http://www.opengis.net/gml/3.2" xmlns:ingestd="http://ingestd.example/fixture" targetNamespace="http://ingestd.example/fixture" elementFormDefault="qualified" version="1.0">
  <xsd:import namespace="http://www.opengis.net/gml/3.2" schemaLocation="http://schemas.opengis.net/gml/3.2.1/gml.xsd"/>
`)
	for _, name := range strings.Split(typeNames, ",") {
		name = strings.TrimPrefix(strings.TrimSpace(name), "ingestd:")
		gen, ok := s.layers[name].(layertest.Generated)
		if !ok {
			continue
		}
		geomType := "gml:GeometryPropertyType"
		var rec layertest.Record
		if gen.Len() > 0 {
			gen.Record(0, &rec)
			geomType = "gml:" + rec.Kind + "PropertyType"
		}
		fmt.Fprintf(w, `  <xsd:complexType name="%[1]sType"><xsd:complexContent><xsd:extension base="gml:AbstractFeatureType"><xsd:sequence>
    <xsd:element name="geom" type="%[2]s" minOccurs="0" maxOccurs="1" nillable="true"/>
`, name, geomType)
		for _, f := range gen.Fields() {
			fmt.Fprintf(w, `    <xsd:element name="%s" type="%s" minOccurs="0" maxOccurs="1" nillable="true"/>
`, f.Name, f.Type)
		}
		fmt.Fprintf(w, `  </xsd:sequence></xsd:extension></xsd:complexContent></xsd:complexType>
  <xsd:element name="%[1]s" type="ingestd:%[1]sType" substitutionGroup="gml:AbstractFeature"/>
`, name)
	}
	fmt.Fprint(w, "</xsd:schema>\n")
}
