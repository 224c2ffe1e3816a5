package gml

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feature/featuretest"
	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/wkt"
)

// gmlFeature is a feature read by readGML.
type gmlFeature featuretest.WKTFeature

// readGML reads doc to its end with a Reader made with opts.
func readGML(t testing.TB, doc []byte, opts ...feature.ReaderOption) ([]gmlFeature, *Reader, error) {
	t.Helper()
	r := NewReader(bytes.NewReader(doc), opts...)
	got, err := featuretest.ReadWKT(t, r)
	var out []gmlFeature
	for _, f := range got {
		out = append(out, gmlFeature(f))
	}
	return out, r, err
}

func TestGMLReaderRecorded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file             string
		matched, retured int
		want             []gmlFeature
	}{
		{"geoserver_wfs20_gml32_parcels.xml", 3, 3, []gmlFeature{
			{"parcels.1", "MULTIPOLYGON (((-78.639 35.779, -78.638 35.779, -78.638 35.78, -78.639 35.78, -78.639 35.779), (-78.6388 35.7792, -78.6388 35.7794, -78.6386 35.7794, -78.6386 35.7792, -78.6388 35.7792)))", 4326,
				`{"pin_num":"1703897215","owner":"SMITH JOHN & MARY","acres":"0.23","land_val":"85000","deed_date":"2019-03-07Z"}`},
			{"parcels.2", "MULTIPOLYGON (((-78.638 35.78, -78.637 35.78, -78.637 35.781, -78.638 35.781, -78.638 35.78)), ((-78.6365 35.7802, -78.636 35.7802, -78.636 35.7812, -78.6365 35.7812, -78.6365 35.7802)))", 4326,
				`{"pin_num":"0703897216","owner":"CITY OF RALEIGH","acres":"1.5","land_val":"410000","deed_date":"2001-11-30Z"}`},
			{"parcels.3", "MULTIPOLYGON (((-78.637 35.7795, -78.6365 35.7795, -78.6365 35.7799, -78.637 35.7795)))", 4326,
				`{"pin_num":"1703897301","owner":null,"acres":"0.05","land_val":"1200"}`},
		}},
		{"wfs11_gml311_urn_latin1.xml", -1, 2, []gmlFeature{
			{"nc.1", "MULTIPOLYGON (((-81.4728 36.2342, -81.741 36.3434, -81.6807 36.5898, -81.2399 36.5898, -81.4728 36.2342)))", 4267,
				`{"AREA":"0.114","PERIMETER":"1.442","CNTY_ID":"1825","NAME":"Ashe","FIPS":"37009","NOTE":"Comté d'Ashe"}`},
			{"nc.2", "MULTIPOLYGON (((-81.2399 36.365, -81.2399 36.5898, -80.9033 36.549, -81.2399 36.365)), ((-80.5 36.4, -80.5 36.45, -80.4439 36.45, -80.5 36.4)))", 4267,
				`{"AREA":"0.061","PERIMETER":"1.231","CNTY_ID":"1827","NAME":"Alleghany","FIPS":"37005","NOTE":""}`},
		}},
		{"wfs10_gml2_mixed_types.xml", -1, -1, []gmlFeature{
			{"nc.1", "MULTIPOLYGON (((-81.4728 36.2342, -81.741 36.3434, -81.6807 36.5898, -81.2399 36.5898, -81.4728 36.2342), (-81.5 36.4, -81.45 36.4, -81.45 36.45, -81.5 36.4)))", 4267,
				`{"AREA":"0.114","CNTY_ID":"1825","NAME":"Ashe"}`},
			{"towns.7", "POINT (-81.4945 36.4332)", 4267, `{"NAME":"Jefferson"}`},
			{"roads.12", "MULTILINESTRING ((-81.5 36.4, -81.45 36.42), (-81.45 36.42, -81.4 36.45, -81.38 36.47))", 4267, `{"ROUTE":"US 221"}`},
		}},
		// Captured from MapServer 8.0 (Debian cgi-mapserver, scripts/mapserver.sh)
		// serving r-cran-sf's nc.gpkg: WFS 1.1 writes srsName="EPSG:4267" with
		// latitude first, WFS 1.0 writes the same name with longitude first.
		{"mapserver8_wfs11_gml311_nc.xml", -1, -1, []gmlFeature{
			{"nc.37009", "", 4267, ""}, {"nc.37005", "", 4267, ""},
		}},
		{"mapserver8_wfs10_gml2_nc.xml", -1, -1, []gmlFeature{
			{"nc.37009", "", 4267, ""}, {"nc.37005", "", 4267, ""},
		}},
		{"geoserver_gml32_page.xml", 12, 1, []gmlFeature{
			{"parcels.1", "POINT (-78.6382 35.7796)", 4326, `{"pin_num":"1703897215"}`},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, r, err := readGML(t, featuretest.ReadTestdata(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if r.NumberMatched() != tt.matched || r.NumberReturned() != tt.retured {
				t.Errorf("numberMatched %d numberReturned %d, want %d %d", r.NumberMatched(), r.NumberReturned(), tt.matched, tt.retured)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("%d features, want %d: %+v", len(got), len(tt.want), got)
			}
			for i := range got {
				if strings.HasPrefix(tt.file, "mapserver8_") {
					// Real captures: check what must hold, not every vertex.
					if got[i].ID != tt.want[i].ID || got[i].SRID != 4267 || !strings.HasPrefix(got[i].WKT, "POLYGON ((-81.") ||
						!strings.Contains(got[i].Props, `"NAME":"A`) || !strings.Contains(got[i].Props, `"CNTY_ID":"18`) {
						t.Errorf("feature %d: %+v", i, got[i])
					}
					continue
				}
				if got[i] != tt.want[i] {
					t.Errorf("feature %d:\n got %+v\nwant %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestGMLGeometries: every geometry type, in the spelling of each GML
// version, decodes to the same go-geom geometry. Projected CRS (2264): no swap.
func TestGMLGeometries(t *testing.T) {
	t.Parallel()
	const srs = `srsName="EPSG:2264"`
	ring := func(v string, coords string) string { // coords as "x,y x,y"
		switch v {
		case "2":
			return `<gml:LinearRing><gml:coordinates>` + coords + `</gml:coordinates></gml:LinearRing>`
		}
		return `<gml:LinearRing><gml:posList>` + strings.ReplaceAll(coords, ",", " ") + `</gml:posList></gml:LinearRing>`
	}
	ext := func(v string) (string, string) {
		if v == "2" {
			return "outerBoundaryIs", "innerBoundaryIs"
		}
		return "exterior", "interior"
	}
	poly := func(v, attrs string, rings ...string) string {
		o, in := ext(v)
		s := `<gml:Polygon` + attrs + `><gml:` + o + `>` + ring(v, rings[0]) + `</gml:` + o + `>`
		for _, r := range rings[1:] {
			s += `<gml:` + in + `>` + ring(v, r) + `</gml:` + in + `>`
		}
		return s + `</gml:Polygon>`
	}
	point := func(v, attrs, xy string) string {
		if v == "2" {
			return `<gml:Point` + attrs + `><gml:coordinates>` + xy + `</gml:coordinates></gml:Point>`
		}
		return `<gml:Point` + attrs + `><gml:pos>` + strings.ReplaceAll(xy, ",", " ") + `</gml:pos></gml:Point>`
	}
	line := func(v, attrs, coords string) string {
		if v == "2" {
			return `<gml:LineString` + attrs + `><gml:coordinates>` + coords + `</gml:coordinates></gml:LineString>`
		}
		return `<gml:LineString` + attrs + `><gml:posList>` + strings.ReplaceAll(coords, ",", " ") + `</gml:posList></gml:LineString>`
	}
	const r1, r2, r3 = "0,0 10,0 10,10 0,10 0,0", "2,2 4,2 4,4 2,2", "20,20 30,20 30,30 20,20"
	const wktPoly = "POLYGON ((0 0, 10 0, 10 10, 0 10, 0 0), (2 2, 4 2, 4 4, 2 2))"
	type tc struct {
		name string
		geom func(v string) string
		want string
		only []string // versions; nil: all
	}
	tests := []tc{
		{"Point", func(v string) string { return point(v, " "+srs, "1.5,2.5") }, "POINT (1.5 2.5)", nil},
		{"LineString", func(v string) string { return line(v, " "+srs, "1,2 3,4 5,6") }, "LINESTRING (1 2, 3 4, 5 6)", nil},
		{"LineString of pos", func(v string) string {
			return `<gml:LineString ` + srs + `><gml:pos>1 2</gml:pos><gml:pos>3 4</gml:pos></gml:LineString>`
		}, "LINESTRING (1 2, 3 4)", []string{"3.1.1", "3.2"}},
		{"LineString of coord", func(v string) string {
			return `<gml:LineString ` + srs + `><gml:coord><gml:X>1</gml:X><gml:Y>2</gml:Y></gml:coord><gml:coord><gml:X>3</gml:X><gml:Y>4</gml:Y></gml:coord></gml:LineString>`
		}, "LINESTRING (1 2, 3 4)", []string{"2"}},
		{"Polygon with hole", func(v string) string { return poly(v, " "+srs, r1, r2) }, wktPoly, nil},
		{"MultiPoint", func(v string) string {
			return `<gml:MultiPoint ` + srs + `><gml:pointMember>` + point(v, "", "1,2") + `</gml:pointMember><gml:pointMember>` + point(v, "", "3,4") + `</gml:pointMember></gml:MultiPoint>`
		}, "MULTIPOINT (1 2, 3 4)", nil},
		{"MultiLineString", func(v string) string {
			return `<gml:MultiLineString ` + srs + `><gml:lineStringMember>` + line(v, "", "1,2 3,4") + `</gml:lineStringMember><gml:lineStringMember>` + line(v, "", "5,6 7,8") + `</gml:lineStringMember></gml:MultiLineString>`
		}, "MULTILINESTRING ((1 2, 3 4), (5 6, 7 8))", nil},
		{"MultiCurve", func(v string) string {
			return `<gml:MultiCurve ` + srs + `><gml:curveMember>` + line(v, "", "1,2 3,4") + `</gml:curveMember><gml:curveMember><gml:Curve><gml:segments><gml:LineStringSegment><gml:posList>5 6 7 8</gml:posList></gml:LineStringSegment><gml:LineStringSegment><gml:posList>7 8 9 10</gml:posList></gml:LineStringSegment></gml:segments></gml:Curve></gml:curveMember></gml:MultiCurve>`
		}, "MULTILINESTRING ((1 2, 3 4), (5 6, 7 8, 9 10))", []string{"3.1.1", "3.2"}},
		{"MultiPolygon", func(v string) string {
			return `<gml:MultiPolygon ` + srs + `><gml:polygonMember>` + poly(v, "", r1, r2) + `</gml:polygonMember><gml:polygonMember>` + poly(v, "", r3) + `</gml:polygonMember></gml:MultiPolygon>`
		}, "MULTIPOLYGON (((0 0, 10 0, 10 10, 0 10, 0 0), (2 2, 4 2, 4 4, 2 2)), ((20 20, 30 20, 30 30, 20 20)))", nil},
		{"MultiSurface of surfaceMembers", func(v string) string {
			return `<gml:MultiSurface ` + srs + `><gml:surfaceMembers>` + poly(v, "", r1, r2) + poly(v, "", r3) + `</gml:surfaceMembers></gml:MultiSurface>`
		}, "MULTIPOLYGON (((0 0, 10 0, 10 10, 0 10, 0 0), (2 2, 4 2, 4 4, 2 2)), ((20 20, 30 20, 30 30, 20 20)))", []string{"3.1.1", "3.2"}},
		{"Surface with PolygonPatch", func(v string) string {
			return `<gml:Surface ` + srs + `><gml:patches><gml:PolygonPatch><gml:exterior>` + ring(v, r1) + `</gml:exterior><gml:interior>` + ring(v, r2) + `</gml:interior></gml:PolygonPatch></gml:patches></gml:Surface>`
		}, wktPoly, []string{"3.1.1", "3.2"}},
		{"MultiSurface of Surfaces", func(v string) string {
			return `<gml:MultiSurface ` + srs + `><gml:surfaceMember><gml:Surface><gml:patches><gml:PolygonPatch><gml:exterior>` + ring(v, r3) + `</gml:exterior></gml:PolygonPatch></gml:patches></gml:Surface></gml:surfaceMember></gml:MultiSurface>`
		}, "MULTIPOLYGON (((20 20, 30 20, 30 30, 20 20)))", []string{"3.1.1", "3.2"}},
		{"Polygon 3D srsDimension", func(v string) string {
			return `<gml:Polygon ` + srs + ` srsDimension="3"><gml:exterior><gml:LinearRing><gml:posList>0 0 1 10 0 2 10 10 3 0 0 1</gml:posList></gml:LinearRing></gml:exterior></gml:Polygon>`
		}, "POLYGON Z ((0 0 1, 10 0 2, 10 10 3, 0 0 1))", []string{"3.1.1", "3.2"}},
		{"posList srsDimension 3 (GML 3.1.1 style)", func(v string) string {
			return `<gml:LineString ` + srs + `><gml:posList srsDimension="3">1 2 3 4 5 6</gml:posList></gml:LineString>`
		}, "LINESTRING Z (1 2 3, 4 5 6)", []string{"3.1.1", "3.2"}},
		{"Point 3D pos", func(v string) string { return `<gml:Point ` + srs + `><gml:pos>1 2 3</gml:pos></gml:Point>` }, "POINT Z (1 2 3)", []string{"3.1.1", "3.2"}},
		{"3D coordinates", func(v string) string { return line(v, " "+srs, "1,2,3 4,5,6") }, "LINESTRING Z (1 2 3, 4 5 6)", []string{"2"}},
		{"coordinates with cs, ts, decimal", func(v string) string {
			return `<gml:LineString ` + srs + `><gml:coordinates cs=" " ts=";" decimal=",">1,5 2,5;3 4</gml:coordinates></gml:LineString>`
		}, "LINESTRING (1.5 2.5, 3 4)", []string{"2"}},
		{"coordinates over lines and tabs", func(v string) string {
			return `<gml:LineString ` + srs + `><gml:coordinates>
				1,2
				3,4	5,6
			</gml:coordinates></gml:LineString>`
		}, "LINESTRING (1 2, 3 4, 5 6)", []string{"2"}},
		{"exponents and signs", func(v string) string { return point(v, " "+srs, "-1.5e3,+2E-2") }, "POINT (-1500 0.02)", nil},
	}
	for _, tt := range tests {
		versions := tt.only
		if versions == nil {
			versions = []string{"2", "3.1.1", "3.2"}
		}
		for _, v := range versions {
			t.Run(tt.name+"/GML "+v, func(t *testing.T) {
				doc := featuretest.GMLDoc(v, `<app:name>n</app:name><app:geom>`+tt.geom(v)+`</app:geom>`)
				got, _, err := readGML(t, []byte(doc))
				if err != nil {
					t.Fatalf("%v\n%s", err, doc)
				}
				if len(got) != 1 || got[0].WKT != tt.want || got[0].SRID != 2264 || got[0].ID != "f.1" || got[0].Props != `{"name":"n"}` {
					t.Errorf("got %+v, want %s SRID 2264\n%s", got, tt.want, doc)
				}
			})
		}
	}
}

// TestGMLAxisOrder: URN and URI forms of geographic CRSs are lat/lon and get
// swapped; EPSG:n, the GML 2 epsg.xml form, CRS84 and projected CRSs do not.
// A geometry without srsName takes the feature's, then the collection's
// envelope CRS.
func TestGMLAxisOrder(t *testing.T) {
	t.Parallel()
	pt := func(srs string) string {
		return `<app:g><gml:Point srsName="` + srs + `"><gml:pos>35.5 -78.25</gml:pos></gml:Point></app:g>`
	}
	tests := []struct {
		name, doc, want string
		srid            int
	}{
		{"urn 4326 swapped", featuretest.GMLDoc("3.2", pt("urn:ogc:def:crs:EPSG::4326")), "POINT (-78.25 35.5)", 4326},
		{"urn x-ogc 4269 swapped", featuretest.GMLDoc("3.1.1", pt("urn:x-ogc:def:crs:EPSG:4269")), "POINT (-78.25 35.5)", 4269},
		{"http URI 4267 swapped", featuretest.GMLDoc("3.2", pt("http://www.opengis.net/def/crs/EPSG/0/4267")), "POINT (-78.25 35.5)", 4267},
		{"versioned urn 4258 swapped", featuretest.GMLDoc("3.2", pt("urn:ogc:def:crs:EPSG:6.9:4258")), "POINT (-78.25 35.5)", 4258},
		{"EPSG:4326 in GML 3 pos swapped (MapServer WFS 1.1)", featuretest.GMLDoc("3.1.1", pt("EPSG:4326")), "POINT (-78.25 35.5)", 4326},
		{"EPSG:4267 in GML 2 coordinates not swapped (WFS 1.0)", featuretest.GMLDoc("2", `<app:g><gml:Point srsName="EPSG:4267"><gml:coordinates>-78.25,35.5</gml:coordinates></gml:Point></app:g>`), "POINT (-78.25 35.5)", 4267},
		{"EPSG:2264 projected in GML 3 not swapped", featuretest.GMLDoc("3.1.1", pt("EPSG:2264")), "POINT (35.5 -78.25)", 2264},
		{"epsg.xml#4326 not swapped", featuretest.GMLDoc("2", pt("http://www.opengis.net/gml/srs/epsg.xml#4326")), "POINT (35.5 -78.25)", 4326},
		{"urn 2264 projected not swapped", featuretest.GMLDoc("3.2", pt("urn:ogc:def:crs:EPSG::2264")), "POINT (35.5 -78.25)", 2264},
		{"urn 3857 not swapped", featuretest.GMLDoc("3.2", pt("urn:ogc:def:crs:EPSG::3857")), "POINT (35.5 -78.25)", 3857},
		{"CRS84 lon/lat", featuretest.GMLDoc("3.2", pt("urn:ogc:def:crs:OGC:1.3:CRS84")), "POINT (35.5 -78.25)", 4326},
		{"inherited from the feature's envelope", featuretest.GMLDoc("3.2",
			`<gml:boundedBy><gml:Envelope srsName="urn:ogc:def:crs:EPSG::4269"><gml:lowerCorner>0 0</gml:lowerCorner><gml:upperCorner>1 1</gml:upperCorner></gml:Envelope></gml:boundedBy><app:g><gml:Point><gml:pos>35.5 -78.25</gml:pos></gml:Point></app:g>`),
			"POINT (-78.25 35.5)", 4269},
		{"inherited from the collection's envelope", strings.Replace(featuretest.GMLDoc("3.2", `<app:g><gml:Point><gml:pos>35.5 -78.25</gml:pos></gml:Point></app:g>`), `<wfs:member>`,
			`<wfs:boundedBy><gml:Envelope srsName="urn:ogc:def:crs:EPSG::4326"><gml:lowerCorner>0 0</gml:lowerCorner><gml:upperCorner>1 1</gml:upperCorner></gml:Envelope></wfs:boundedBy><wfs:member>`, 1),
			"POINT (-78.25 35.5)", 4326},
		{"parts inherit the multi-geometry's srsName", featuretest.GMLDoc("3.2",
			`<app:g><gml:MultiPoint srsName="urn:ogc:def:crs:EPSG::4326"><gml:pointMember><gml:Point><gml:pos>35.5 -78.25</gml:pos></gml:Point></gml:pointMember></gml:MultiPoint></app:g>`),
			"MULTIPOINT (-78.25 35.5)", 4326},
		{"the multi-geometry takes its parts' srsName", featuretest.GMLDoc("3.2",
			`<app:g><gml:MultiPoint><gml:pointMember><gml:Point srsName="urn:ogc:def:crs:EPSG::4326"><gml:pos>35.5 -78.25</gml:pos></gml:Point></gml:pointMember></gml:MultiPoint></app:g>`),
			"MULTIPOINT (-78.25 35.5)", 4326},
		{"3D urn 4979 swaps x and y only", featuretest.GMLDoc("3.2", `<app:g><gml:Point srsName="urn:ogc:def:crs:EPSG::4979" srsDimension="3"><gml:pos>35.5 -78.25 90</gml:pos></gml:Point></app:g>`),
			"POINT Z (-78.25 35.5 90)", 4979},
		{"no srsName anywhere: the layer's SRID", featuretest.GMLDoc("3.2", `<app:g><gml:Point><gml:pos>35.5 -78.25</gml:pos></gml:Point></app:g>`), "POINT (35.5 -78.25)", 4326},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := readGML(t, []byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].WKT != tt.want || got[0].SRID != tt.srid {
				t.Errorf("got %+v, want %s SRID %d", got, tt.want, tt.srid)
			}
		})
	}
	got, _, err := readGML(t, []byte(featuretest.GMLDoc("3.2", `<app:g><gml:Point><gml:pos>1 2</gml:pos></gml:Point></app:g>`)), feature.WithSRID(2264))
	if err != nil || got[0].SRID != 2264 {
		t.Errorf("WithSRID(2264): %+v %v", got, err)
	}
}

func TestParseSRSName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		want feature.CRS
	}{
		{"EPSG:4326", feature.CRS{SRID: 4326, BareLatFirst: true}},
		{"epsg:2264", feature.CRS{SRID: 2264}},
		{"urn:ogc:def:crs:EPSG::4326", feature.CRS{SRID: 4326, LatFirst: true}},
		{"urn:ogc:def:crs:EPSG:6.9:4269", feature.CRS{SRID: 4269, LatFirst: true}},
		{"urn:x-ogc:def:crs:EPSG:4267", feature.CRS{SRID: 4267, LatFirst: true}},
		{"urn:x-ogc:def:crs:EPSG::2264", feature.CRS{SRID: 2264}},
		{"http://www.opengis.net/def/crs/EPSG/0/4326", feature.CRS{SRID: 4326, LatFirst: true}},
		{"https://www.opengis.net/def/crs/EPSG/0/3857", feature.CRS{SRID: 3857}},
		{"http://www.opengis.net/gml/srs/epsg.xml#4326", feature.CRS{SRID: 4326}},
		{"http://www.opengis.net/gml/srs/epsg.xml#2264", feature.CRS{SRID: 2264}},
		{"urn:ogc:def:crs:OGC:1.3:CRS84", feature.CRS{SRID: 4326}},
		{"urn:ogc:def:crs:OGC::CRS84", feature.CRS{SRID: 4326}},
		{"http://www.opengis.net/def/crs/OGC/1.3/CRS84", feature.CRS{SRID: 4326}},
		{"CRS84", feature.CRS{SRID: 4326}},
		{" urn:ogc:def:crs:EPSG::4258 ", feature.CRS{SRID: 4258, LatFirst: true}},
	}
	for _, tt := range tests {
		got, err := feature.ParseSRSName(tt.name)
		if err != nil || got != tt.want {
			t.Errorf("ParseSRSName(%q) = %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "EPSG:", "EPSG:abc", "EPSG:-4", "urn:ogc:def:crs:ESRI::102100", "urn:ogc:def:crs", "http://www.opengis.net/def/crs/EPSG/0/", "WGS84", "urn:ogc:def:crs:OGC:1.3:CRS85"} {
		if _, err := feature.ParseSRSName(bad); err == nil || !strings.Contains(err.Error(), "srsName") || strings.Contains(err.Error(), "wfs") {
			t.Errorf("ParseSRSName(%q): err %v, want an error naming the srsName and no owner", bad, err)
		}
	}
}

func TestGMLProperties(t *testing.T) {
	t.Parallel()
	const g = `<app:geom><gml:Point srsName="EPSG:3857"><gml:pos>1 2</gml:pos></gml:Point></app:geom>`
	const g2 = `<app:geom2><gml:Point srsName="EPSG:3857"><gml:pos>9 9</gml:pos></gml:Point></app:geom2>`
	tests := []struct {
		name, content string
		opts          []feature.ReaderOption
		id, props     string
		wkt           string
	}{
		{"strings stay strings", `<app:pin>0012</app:pin><app:v>1.50</app:v>` + g, nil, "f.1", `{"pin":"0012","v":"1.50"}`, "POINT (1 2)"},
		{"xsi:nil is null, empty is empty", `<app:a xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:nil="true"/><app:b></app:b><app:c/>`, nil, "f.1", `{"a":null,"b":"","c":""}`, ""},
		{"escaping", "<app:s>a \"q\" \\ &lt;&amp;&gt; \t\nü</app:s>", nil, "f.1", `{"s":"a \"q\" \\ <&> \t\nü"}`, ""},
		{"CDATA", `<app:s><![CDATA[<b>bold</b>]]></app:s>`, nil, "f.1", `{"s":"<b>bold</b>"}`, ""},
		{"complex property left out", `<app:addr><app:street>Main</app:street></app:addr><app:n>1</app:n>`, nil, "f.1", `{"n":"1"}`, ""},
		{"second geometry ignored", g + g2 + `<app:n>1</app:n>`, nil, "f.1", `{"n":"1"}`, "POINT (1 2)"},
		{"gml:name and description left out", `<gml:name>x</gml:name><gml:description>d</gml:description><app:n>1</app:n>`, nil, "f.1", `{"n":"1"}`, ""},
		{"repeated property becomes an array", `<app:tag>a</app:tag><app:n>1</app:n><app:tag>b</app:tag><app:tag>c</app:tag>`, nil, "f.1", `{"tag":["a","b","c"],"n":"1"}`, ""},
		{"id property wins", `<app:pin>P-7</app:pin>` + g, []feature.ReaderOption{feature.WithIDProperty("pin")}, "P-7", `{"pin":"P-7"}`, "POINT (1 2)"},
		{"id property absent", `<app:n>1</app:n>`, []feature.ReaderOption{feature.WithIDProperty("pin")}, "", `{"n":"1"}`, ""},
		{"no properties", g, nil, "f.1", ``, "POINT (1 2)"},
		{"attributes of property elements ignored", `<app:len uom="m">12</app:len>`, nil, "f.1", `{"len":"12"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := readGML(t, []byte(featuretest.GMLDoc("3.2", tt.content)), tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].ID != tt.id || got[0].Props != tt.props || got[0].WKT != tt.wkt {
				t.Errorf("got %+v, want id %q props %s wkt %q", got, tt.id, tt.props, tt.wkt)
			}
		})
	}
}

func TestGMLCollections(t *testing.T) {
	t.Parallel()
	empty := `<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs/2.0" numberMatched="0" numberReturned="0"/>`
	got, r, err := readGML(t, []byte(empty))
	if err != nil || len(got) != 0 || r.NumberMatched() != 0 {
		t.Errorf("empty collection: %v %v %d", got, err, r.NumberMatched())
	}
	// WFS 2.0 with two type names: collections nested in wfs:member.
	nested := `<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs/2.0" xmlns:gml="http://www.opengis.net/gml/3.2" xmlns:a="http://a" numberMatched="3" numberReturned="3">
	<wfs:member><wfs:FeatureCollection numberMatched="2" numberReturned="2"><wfs:member><a:x gml:id="x.1"/></wfs:member><wfs:member><a:x gml:id="x.2"/></wfs:member></wfs:FeatureCollection></wfs:member>
	<wfs:member><wfs:FeatureCollection><wfs:member><a:y gml:id="y.1"><a:n>1</a:n></a:y></wfs:member></wfs:FeatureCollection></wfs:member>
	<wfs:additionalObjects><wfs:SimpleFeatureCollection><wfs:member><a:z gml:id="z.1"/></wfs:member></wfs:SimpleFeatureCollection></wfs:additionalObjects>
	</wfs:FeatureCollection><!-- generated by a test -->`
	got, r, err = readGML(t, []byte(nested))
	if err != nil || len(got) != 3 || got[0].ID != "x.1" || got[2].ID != "y.1" || got[2].Props != `{"n":"1"}` || r.NumberMatched() != 3 {
		t.Errorf("nested collections: %+v %v", got, err)
	}
	// gml:FeatureCollection of GML 3.2 without WFS, default namespace for features.
	plain := `<gml:FeatureCollection xmlns:gml="http://www.opengis.net/gml/3.2"><gml:featureMember><f xmlns="http://app" gml:id="f.9"><geom><gml:Point srsName="EPSG:3857"><gml:pos>5 6</gml:pos></gml:Point></geom></f></gml:featureMember></gml:FeatureCollection>`
	got, _, err = readGML(t, []byte(plain))
	if err != nil || len(got) != 1 || got[0].ID != "f.9" || got[0].WKT != "POINT (5 6)" || got[0].SRID != 3857 {
		t.Errorf("gml:FeatureCollection: %+v %v", got, err)
	}
}

func TestGMLReaderErrors(t *testing.T) {
	t.Parallel()
	pt := func(inner string) string { return featuretest.GMLDoc("3.2", `<app:g>`+inner+`</app:g>`) }
	tests := []struct {
		name, doc, want string
	}{
		{"empty", "", "empty document"},
		{"not a collection", `<wfs:ValueCollection xmlns:wfs="x"/>`, "not a FeatureCollection"},
		{"mismatched tags", `<wfs:FeatureCollection xmlns:wfs="x"><gml:featureMember></wfs:FeatureCollection>`, "closed by"},
		{"truncated", featuretest.GMLDoc("3.2", `<app:n>1</app:n>`)[:200], "unexpected EOF"},
		{"truncatedResponse", strings.Replace(featuretest.GMLDoc("3.2", ``), `</wfs:FeatureCollection>`, `<wfs:truncatedResponse><ows:ExceptionReport/></wfs:truncatedResponse></wfs:FeatureCollection>`, 1), "truncated the response"},
		{"data after the document", featuretest.GMLDoc("3.2", ``) + `<x/>`, "data after the document"},
		{"bad number", pt(`<gml:Point><gml:pos>1 2x</gml:pos></gml:Point>`), `bad coordinate "2x"`},
		{"NaN", pt(`<gml:Point><gml:pos>NaN 2</gml:pos></gml:Point>`), `bad coordinate "NaN"`},
		{"posList not a multiple", pt(`<gml:LineString><gml:posList>1 2 3</gml:posList></gml:LineString>`), "not a multiple"},
		{"mixed dimensions", pt(`<gml:LineString><gml:pos>1 2</gml:pos><gml:pos>1 2 3</gml:pos></gml:LineString>`), "dimensions after"},
		{"point of two positions", pt(`<gml:Point><gml:coordinates>1,2 3,4</gml:coordinates></gml:Point>`), "one position"},
		{"empty point", pt(`<gml:Point/>`), "one position"},
		{"unsupported geometry", pt(`<gml:Solid/>`), "unsupported geometry gml:Solid"},
		{"unsupported collection member", pt(`<gml:MultiGeometry><gml:geometryMember><gml:Solid/></gml:geometryMember></gml:MultiGeometry>`), "unsupported geometry gml:Solid"},
		{"collection in two CRSs", pt(`<gml:MultiGeometry srsName="EPSG:4326"><gml:geometryMember><gml:Point srsName="EPSG:2264"><gml:pos>1 2</gml:pos></gml:Point></gml:geometryMember></gml:MultiGeometry>`), "two CRSs"},
		{"unsupported srsName", pt(`<gml:Point srsName="ESRI:102719"><gml:pos>1 2</gml:pos></gml:Point>`), `unsupported srsName "ESRI:102719"`},
		{"two CRSs", pt(`<gml:MultiPoint srsName="EPSG:4326"><gml:pointMember><gml:Point srsName="EPSG:2264"><gml:pos>1 2</gml:pos></gml:Point></gml:pointMember></gml:MultiPoint>`), "two CRSs"},
		{"interior first", pt(`<gml:Polygon><gml:interior><gml:LinearRing><gml:posList>0 0 1 1 0 0</gml:posList></gml:LinearRing></gml:interior></gml:Polygon>`), "before the exterior"},
		{"bad srsDimension", pt(`<gml:Point srsDimension="7"><gml:pos>1 2</gml:pos></gml:Point>`), "srsDimension"},
		{"bad count", `<wfs:FeatureCollection xmlns:wfs="x" numberMatched="many"/>`, "numberMatched"},
		{"unknown encoding", `<?xml version="1.0" encoding="EBCDIC"?><wfs:FeatureCollection xmlns:wfs="x"/>`, "EBCDIC"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, r, err := readGML(t, []byte(tt.doc))
			var de *feature.DecodeError
			if err == nil || !errors.As(err, &de) || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "gml: ") {
				t.Fatalf("err = %v, want a *DecodeError containing %q", err, tt.want)
			}
			if f, err2 := r.Next(); f != nil || err2 != err {
				t.Errorf("after the error: %v %v, want the same error again", f, err2)
			}
		})
	}
	_, _, err := readGML(t, featuretest.ReadTestdata(t, "geoserver_wfs20_gml32_truncated.xml"))
	if !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "feature 1") {
		t.Errorf("recorded truncated body: %v", err)
	}
}

// TestGMLReaderEveryPrefixFails: a body cut anywhere is an error, never a
// shorter page.
func TestGMLReaderEveryPrefixFails(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"geoserver_wfs20_gml32_parcels.xml", "wfs10_gml2_mixed_types.xml"} {
		doc := featuretest.ReadTestdata(t, name)
		end := bytes.LastIndex(doc, []byte("</wfs:FeatureCollection>")) + len("</wfs:FeatureCollection>")
		for n := 0; n < end; n += 1 + n/200 {
			if _, _, err := readGML(t, doc[:n]); err == nil {
				t.Fatalf("%s cut at %d of %d: no error", name, n, len(doc))
			}
		}
	}
}

func TestScanFloat(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"0", "-0", "1", "-78.6382", "35.77961234567891", "123456789012345678901234", "0.000000000000000000000000123",
		"1e22", "1e23", "4.9e-324", "1.7976931348623157e308", "9007199254740993", "0.1", "+.5", "5.", "-1.5E+3", "2264000.123456789"} {
		want, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		got, n, ok := scanFloat([]byte(s), 0)
		if !ok || n != len(s) || math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("scanFloat(%q) = %v %d %v, want %v", s, got, n, ok, want)
		}
	}
	for _, s := range []string{"", "-", ".", "e5", "1e", "1e+", "NaN", "Inf", "0x10"} {
		if _, n, ok := scanFloat([]byte(s), 0); ok && n == len(s) {
			t.Errorf("scanFloat(%q) accepted", s)
		}
	}
}

func FuzzGMLReader(f *testing.F) {
	entries, err := os.ReadDir(featuretest.TestdataDir(f))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".xml") {
			f.Add(featuretest.ReadTestdata(f, e.Name()), "")
		}
	}
	f.Add([]byte(featuretest.GMLDoc("2", `<app:pin>7</app:pin><app:g><gml:LineString srsName="EPSG:4267"><gml:coordinates cs=" " ts=";" decimal=",">1,5 2;3 4</gml:coordinates></gml:LineString></app:g>`)), "pin")
	f.Add([]byte(featuretest.GMLDoc("3.2", `<app:g><gml:Surface srsName="urn:ogc:def:crs:EPSG::4326" srsDimension="3"><gml:patches><gml:PolygonPatch><gml:exterior><gml:LinearRing><gml:posList>0 0 1 1 0 1 1 1 1 0 0 1</gml:posList></gml:LinearRing></gml:exterior></gml:PolygonPatch></gml:patches></gml:Surface></app:g>`)), "")
	for _, s := range gmlTokSeeds {
		f.Add([]byte(s), "")
	}
	for _, s := range xmlTokSamples {
		f.Add([]byte(s), "")
	}
	for s := range xmlRepairedSamples {
		f.Add([]byte(s), "")
	}
	f.Add([]byte(featuretest.GMLDoc("3.2", `<app:g><gml:MultiGeometry srsName="urn:ogc:def:crs:EPSG::4326"><gml:geometryMember><gml:Point><gml:pos>1 2</gml:pos></gml:Point></gml:geometryMember><gml:geometryMembers><gml:MultiGeometry/><gml:LineString srsDimension="3"><gml:posList>1 2 3 4 5 6</gml:posList></gml:LineString></gml:geometryMembers></gml:MultiGeometry></app:g>`)), "")
	f.Add([]byte(featuretest.GMLDoc("2", "<app:n>caf\xe9\x01&#0;</app:n><app:g><gml:MultiGeometry><gml:geometryMember><gml:Point><gml:coordinates>1e400,2</gml:coordinates></gml:Point></gml:geometryMember></gml:MultiGeometry></app:g>")), "n")
	f.Fuzz(func(t *testing.T, doc []byte, idProp string) {
		gmlReadersAgree(t, doc, idProp)
		r := NewReader(bytes.NewReader(doc), feature.WithIDProperty(idProp))
		failed := false
		for range 100_000 {
			feat, err := r.Next()
			if feat != nil && err != nil {
				t.Fatalf("feature and error %v together", err)
			}
			if feat != nil && failed {
				t.Fatal("a feature after an error")
			}
			if err == io.EOF {
				return
			}
			if err != nil {
				if failed {
					return
				}
				failed = true
				continue
			}
			if feat.Properties != nil && (!json.Valid(feat.Properties) || !utf8.Valid(feat.Properties)) {
				t.Fatalf("invalid properties %s", feat.Properties)
			}
			if !utf8.ValidString(feat.ID) {
				t.Fatalf("id %q: not valid UTF-8", feat.ID)
			}
			if feat.Geometry != nil {
				if _, err := wkt.Marshal(feat.Geometry); err != nil {
					t.Fatalf("geometry %v: %v", feat.Geometry, err)
				}
			}
		}
		t.Fatal("Next never ended")
	})
}

// genGML32 writes a GML 3.2 collection of n parcel polygons with a dozen
// properties each, in the shape GeoServer writes them.
func genGML32(w io.Writer, n int) error {
	bw := &bytes.Buffer{}
	bw.WriteString(`<?xml version="1.0" encoding="UTF-8"?><wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs/2.0" xmlns:gml="http://www.opengis.net/gml/3.2" xmlns:county="http://county.example.gov" numberMatched="` + strconv.Itoa(n) + `" numberReturned="` + strconv.Itoa(n) + `">`)
	for i := range n {
		x0 := -78.9 + float64(i%1000)*0.0005
		y0 := 35.6 + float64(i/1000)*0.0005
		d := 0.0004
		fmt.Fprintf(bw, `<wfs:member><county:parcels gml:id="parcels.%d"><county:the_geom><gml:MultiSurface srsName="urn:ogc:def:crs:EPSG::4326" srsDimension="2" gml:id="parcels.%d.the_geom"><gml:surfaceMember><gml:Polygon gml:id="parcels.%d.the_geom.1"><gml:exterior><gml:LinearRing><gml:posList>`, i, i, i)
		for k, c := range [5][2]float64{{y0, x0}, {y0, x0 + d}, {y0 + d, x0 + d}, {y0 + d, x0}, {y0, x0}} {
			if k > 0 {
				bw.WriteByte(' ')
			}
			bw.WriteString(strconv.FormatFloat(math.Round(c[0]*1e7)/1e7, 'f', -1, 64))
			bw.WriteByte(' ')
			bw.WriteString(strconv.FormatFloat(math.Round(c[1]*1e7)/1e7, 'f', -1, 64))
		}
		fmt.Fprintf(bw, `</gml:posList></gml:LinearRing></gml:exterior></gml:Polygon></gml:surfaceMember></gml:MultiSurface></county:the_geom><county:pin>%010d</county:pin><county:owner>OWNER %d</county:owner><county:site_address>%d MAIN ST</county:site_address><county:zoning>R-%d</county:zoning><county:land_use>single family</county:land_use><county:acres>%.2f</county:acres><county:assessed_value>%d</county:assessed_value><county:year_built>%d</county:year_built><county:bedrooms>%d</county:bedrooms><county:exempt>%t</county:exempt><county:deed_date>2019-03-07</county:deed_date><county:township>T%d</county:township></county:parcels></wfs:member>`,
			i, i%5000, 100+i%9000, i%10, 0.1+float64(i%400)/100, 100000+(i*7919)%900000, 1900+i%125, i%6, i%17 == 0, i%20)
		if bw.Len() > 64<<10 {
			if _, err := w.Write(bw.Bytes()); err != nil {
				return err
			}
			bw.Reset()
		}
	}
	bw.WriteString(`</wfs:FeatureCollection>`)
	_, err := w.Write(bw.Bytes())
	return err
}

// BenchmarkGMLReader decodes a generated 200k-feature GML 3.2 document
// streamed through a pipe, so the document is never in memory, and reports
// features/s, MB/s and the peak live heap sampled while decoding.
func BenchmarkGMLReader(b *testing.B) {
	const n = 200_000
	size := func() int64 {
		cw := &countWriter{}
		if err := genGML32(cw, n); err != nil {
			b.Fatal(err)
		}
		return cw.n
	}()
	b.SetBytes(size)
	b.ReportAllocs()
	var peak uint64
	start := time.Now()
	features := 0
	for b.Loop() {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(genGML32(pw, n)) }()
		r := NewReader(pr)
		for i := 0; ; i++ {
			f, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if _, ok := f.Geometry.(*geom.MultiPolygon); !ok || f.ID == "" {
				b.Fatalf("bad feature %+v", f)
			}
			features++
			if i%4096 == 0 {
				peak = max(peak, liveHeap())
			}
		}
		pr.Close()
	}
	elapsed := time.Since(start)
	b.ReportMetric(float64(features)/elapsed.Seconds(), "features/s")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(size)/(1<<20), "doc-MB")
}

// liveHeap samples the bytes of live and not yet swept heap objects.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }
