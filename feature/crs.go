package feature

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// CRS is what a srsName (or GeoJSON's legacy crs name) says about
// coordinates: the SRID they are in and whether they come latitude (or
// northing) first and must be swapped to x/y before they reach go-geom and
// PostGIS, which are always x/y (longitude first).
type CRS struct {
	SRID int
	// LatFirst means each position is written y, x: the URN and URI forms of
	// a geographic CRS whose EPSG definition is latitude-first.
	LatFirst bool
	// BareLatFirst is set for the bare "EPSG:n" form of such a CRS, whose
	// axis order depends on who wrote it: longitude first in GeoJSON and in
	// GML 2 (WFS 1.0), latitude first in MapServer's GML 3 (WFS 1.1), which
	// labels lat/lon coordinates srsName="EPSG:4326" (or 4267, …). gml.Reader
	// swaps such positions when they come in GML 3's pos or posList, as
	// GDAL does; LatFirst stays false, the answer for every other reader.
	BareLatFirst bool
}

// latFirstGeographic is the set of geographic EPSG CRSs whose official axis
// order is latitude, longitude. Only they are swapped, and only when named in
// a URN or http URI form, or in the bare "EPSG:n" form inside GML 3 (see
// CRS.BareLatFirst). A code missing here is read x/y: that is right for
// projected CRSs in feet and metres such as 2264 (NC State Plane) and 3857.
//
// The list covers the datums US, Canadian, European, Australian, Japanese and
// Latin American county servers publish in; 4936 (ETRS89 geocentric) is left
// out on purpose: geocentric X/Y/Z is not latitude-first.
var latFirstGeographic = map[int]bool{
	4019: true, // Unknown datum based upon the GRS 1980 ellipsoid
	4148: true, // Hartebeesthoek94
	4152: true, // NAD83(HARN)
	4167: true, // NZGD2000
	4171: true, // RGF93
	4230: true, // ED50
	4258: true, // ETRS89
	4267: true, // NAD27
	4269: true, // NAD83
	4277: true, // OSGB36
	4283: true, // GDA94
	4312: true, // MGI
	4322: true, // WGS 72
	4326: true, // WGS 84
	4612: true, // JGD2000
	4617: true, // NAD83(CSRS)
	4619: true, // SWEREF99
	4674: true, // SIRGAS 2000
	4747: true, // GR96
	4759: true, // NAD83(NSRS2007)
	4937: true, // ETRS89 3D
	4979: true, // WGS 84 3D
	6318: true, // NAD83(2011)
	6668: true, // JGD2011
	7844: true, // GDA2020
}

// ParseSRSName reads a srsName (GML) or a named CRS (GeoJSON's legacy crs
// member) in every common spelling:
//
//	EPSG:n                                      x/y (the legacy form; lon/lat for 4326),
//	                                            except in GML 3 (see CRS.BareLatFirst)
//	http://www.opengis.net/gml/srs/epsg.xml#n   x/y (GML 2 / WFS 1.0, GeoServer's "XML" form)
//	urn:ogc:def:crs:EPSG::n, urn:ogc:def:crs:EPSG:6.9:n,
//	urn:x-ogc:def:crs:EPSG:n,
//	http(s)://www.opengis.net/def/crs/EPSG/0/n  EPSG axis order: lat/lon for the
//	                                            geographic CRSs in latFirstGeographic
//	urn:ogc:def:crs:OGC:1.3:CRS84, CRS84, …     4326, lon/lat
//
// Prefixes are matched case-insensitively; the code must be a positive integer.
// The error names no owner ("unsupported srsName …"): the caller (a
// decoder, a kind) wraps it in its own name.
func ParseSRSName(name string) (CRS, error) { return ParseCRS(name) }

// ParseCRS is ParseSRSName, under the name the decoders call it by.
func ParseCRS(name string) (CRS, error) {
	n := strings.TrimSpace(name)
	if n == "" {
		return CRS{}, errors.New("empty srsName")
	}
	bad := func() (CRS, error) { return CRS{}, fmt.Errorf("unsupported srsName %s", Snippet(name)) }
	var code string
	authority := false // the form follows the EPSG database's axis order
	bare := false      // EPSG:n
	switch {
	case hasPrefixFold(n, "epsg:"):
		code = n[len("epsg:"):]
		bare = true
	case hasPrefixFold(n, "urn:ogc:def:crs:"), hasPrefixFold(n, "urn:x-ogc:def:crs:"),
		containsFold(n, "opengis.net/def/crs/"):
		// urn:ogc:def:crs:{EPSG|OGC}:[version]:code, or
		// http://www.opengis.net/def/crs/{EPSG|OGC}/{version}/code
		sep, rest := byte(':'), n[indexFold(n, "crs:")+len("crs:"):]
		if !hasPrefixFold(n, "urn:") {
			sep, rest = '/', n[indexFold(n, "opengis.net/def/crs/")+len("opengis.net/def/crs/"):]
		}
		auth, rest, ok := strings.Cut(rest, string(sep))
		if !ok {
			return bad()
		}
		code = rest[strings.LastIndexByte(rest, sep)+1:]
		switch {
		case strings.EqualFold(auth, "OGC"):
			return ogcCRS(code, name)
		case strings.EqualFold(auth, "EPSG"):
			authority = true
		default:
			return bad()
		}
	case containsFold(n, "opengis.net/gml/srs/epsg.xml#"):
		code = n[strings.LastIndexByte(n, '#')+1:]
	case strings.EqualFold(n, "CRS84"), strings.EqualFold(n, "OGC:CRS84"):
		return CRS{SRID: 4326}, nil
	default:
		return bad()
	}
	srid, err := strconv.Atoi(code)
	if err != nil || srid <= 0 {
		return bad()
	}
	geographic := latFirstGeographic[srid]
	return CRS{SRID: srid, LatFirst: authority && geographic, BareLatFirst: bare && geographic}, nil
}

// ogcCRS reads the OGC authority's codes: CRS84 (WGS 84 lon/lat), CRS83
// (NAD83 lon/lat) and CRS27 (NAD27 lon/lat).
func ogcCRS(code, name string) (CRS, error) {
	switch strings.ToUpper(code) {
	case "CRS84":
		return CRS{SRID: 4326}, nil
	case "CRS83":
		return CRS{SRID: 4269}, nil
	case "CRS27":
		return CRS{SRID: 4267}, nil
	}
	return CRS{}, fmt.Errorf("unsupported srsName %s", Snippet(name))
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

func indexFold(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

func containsFold(s, sub string) bool { return indexFold(s, sub) >= 0 }
