package wfs

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingestd/ingestd/feature/featuretest"
	"github.com/ingestd/ingestd/schema"
	"github.com/ingestd/ingestd/source"
)

const parcelsXSD = `<?xml version="1.0" encoding="UTF-8"?>
<xsd:schema xmlns:county="http://county.example.gov" xmlns:gml="http://www.opengis.net/gml/3.2" xmlns:xsd="http://www.w3.org/2001/XMLSchema" elementFormDefault="qualified" targetNamespace="http://county.example.gov">
  <xsd:import namespace="http://www.opengis.net/gml/3.2" schemaLocation="https://gis.county.example.gov/geoserver/schemas/gml/3.2.1/gml.xsd"/>
  <xsd:complexType name="parcelsType"><xsd:complexContent><xsd:extension base="gml:AbstractFeatureType"><xsd:sequence>
    <xsd:element maxOccurs="1" minOccurs="0" name="the_geom" nillable="true" type="gml:MultiSurfacePropertyType"/>
    <xsd:element maxOccurs="1" minOccurs="0" name="pin_num" nillable="true" type="xsd:string"/>
    <xsd:element maxOccurs="1" minOccurs="0" name="owner" nillable="true" type="xsd:string"/>
    <xsd:element maxOccurs="1" minOccurs="0" name="acres" nillable="true" type="xsd:decimal"/>
    <xsd:element maxOccurs="1" minOccurs="0" name="land_val" nillable="true" type="xsd:int"/>
    <xsd:element maxOccurs="1" minOccurs="0" name="deed_date" nillable="true" type="xsd:date"/>
  </xsd:sequence></xsd:extension></xsd:complexContent></xsd:complexType>
  <xsd:element name="parcels" substitutionGroup="gml:AbstractFeature" type="county:parcelsType"/>
</xsd:schema>`

// parcelsServer answers DescribeFeatureType with parcelsXSD (or, when
// broken is set, a 404) and GetFeature with the recorded GML parcels; it
// counts the DescribeFeatureType requests in describes.
func parcelsServer(t *testing.T, broken *atomic.Bool, describes *atomic.Int64) string {
	gml := featuretest.ReadTestdata(t, "geoserver_wfs20_gml32_parcels.xml")
	return serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch strings.ToLower(r.URL.Query().Get("request")) {
		case "describefeaturetype":
			describes.Add(1)
			if broken.Load() {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/xml")
			w.Write([]byte(parcelsXSD))
		case "getfeature":
			w.Header().Set("Content-Type", "application/gml+xml; version=3.2")
			w.Write(gml)
		default:
			http.Error(w, "unexpected request", http.StatusBadRequest)
		}
	})).URL
}

// TestDescribeTypesGML: a layer that asks for its schema gets
// DescribeFeatureType's types in FetchStats.Declared, and its GML values
// typed by them (numbers as JSON numbers; strings that look like numbers
// but are declared strings stay strings). Without DescribeSchema, values
// stay strings as before.
func TestDescribeTypesGML(t *testing.T) {
	t.Parallel()
	var broken atomic.Bool
	var describes atomic.Int64
	url := parcelsServer(t, &broken, &describes)
	layer := source.Layer{Kind: Kind, URL: url, Settings: Settings{TypeName: "county:parcels", Version: "2.0.0",
		OutputFormat: "application/gml+xml; version=3.2"}, DescribeSchema: true}
	// A schema is reused for the negotiation TTL: 1ns asks every time.
	c := newTestClient(t, 1, WithNegotiationTTL(time.Nanosecond))
	var col collect
	stats, err := c.Fetch(t.Context(), layer, 0, col.handle)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Declared == nil || !stats.TypedText {
		t.Fatalf("stats: declared %v, typed text %v", stats.Declared, stats.TypedText)
	}
	if typ, _ := stats.Declared.Lookup("land_val"); typ != schema.BigInt || stats.Declared.Geometry != "MultiPolygon" {
		t.Errorf("declared %+v", stats.Declared)
	}
	first := col.pages[0][0]
	for _, want := range []string{`"pin_num":"1703897215"`, `"acres":0.23`, `"land_val":85000`, `"deed_date":"2019-03-07Z"`} {
		if !strings.Contains(first, want) {
			t.Errorf("typed feature %s lacks %s", first, want)
		}
	}

	// A failing DescribeFeatureType: a warning, and the last schema read.
	broken.Store(true)
	col = collect{}
	stats, err = c.Fetch(t.Context(), layer, 0, col.handle)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Declared == nil || len(stats.Warnings) != 1 || !strings.Contains(stats.Warnings[0], "its last one is used") {
		t.Errorf("after a failed describe: declared %v, warnings %q", stats.Declared, stats.Warnings)
	}
	if !strings.Contains(col.pages[0][0], `"land_val":85000`) {
		t.Errorf("not typed by the last schema: %s", col.pages[0][0])
	}
	// A new client knows no last schema: values stay strings.
	col = collect{}
	stats, err = newTestClient(t, 1).Fetch(t.Context(), layer, 0, col.handle)
	if err != nil || stats.Declared != nil || stats.TypedText || !strings.Contains(col.pages[0][0], `"land_val":"85000"`) {
		t.Errorf("no schema at all: %v, declared %v, %s", err, stats.Declared, col.pages[0][0])
	}
	// Within the TTL (an hour by default) the schema is not asked again.
	broken.Store(false)
	cached := newTestClient(t, 1)
	before := describes.Load()
	for range 3 {
		col = collect{}
		if stats, err := cached.Fetch(t.Context(), layer, 0, col.handle); err != nil || stats.Declared == nil {
			t.Fatalf("cached fetch: %v, %v", err, stats.Declared)
		}
	}
	if n := describes.Load() - before; n != 1 {
		t.Errorf("3 fetches within the TTL asked DescribeFeatureType %d times, want 1", n)
	}
	layer.DescribeSchema = false
	col = collect{}
	if _, err := c.Fetch(t.Context(), layer, 0, col.handle); err != nil || !strings.Contains(col.pages[0][0], `"land_val":"85000"`) {
		t.Errorf("without DescribeSchema: %v, %s", err, col.pages[0][0])
	}
}

// TestDescribeBounded: a DescribeFeatureType answer larger than any
// schema (a bomb) stops at maxDescribeBytes, whatever the feed's own
// body limit; it is the schema call's failure, not the feed's pages'.
func TestDescribeBounded(t *testing.T) {
	t.Parallel()
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.Write([]byte(`<schema xmlns="http://www.w3.org/2001/XMLSchema"><annotation><documentation>`))
		chunk := []byte(strings.Repeat("x", 1<<16))
		for range (maxDescribeBytes / len(chunk)) + 8 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})).URL
	layer := source.Layer{Kind: Kind, URL: url, Settings: Settings{TypeName: "nc", Version: "2.0.0"}}
	_, err := newTestClient(t, 1).Describe(t.Context(), layer)
	if err == nil || !strings.Contains(err.Error(), "limits.body_bytes") || !strings.Contains(err.Error(), "DescribeFeatureType") {
		t.Errorf("Describe of a %d MB answer: %v", maxDescribeBytes>>20+1, err)
	}
}
