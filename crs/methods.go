package crs

import (
	"math"
	"strconv"
	"strings"
)

// The parameter match compares projections by the table's names for them
// (cmd gen writes EPSG's methods under these names) and their parameters
// by keys after PROJ's: lat_0, lon_0, lat_1, lat_2, lat_ts, k, alpha,
// gamma in degrees or unity, x_0 and y_0 in metres.

// methodNames are the projections' names in ESRI's dialect (PROJECTION
// of a .prj), OGC's WKT 1 (GDAL's) and EPSG's (WKT 2), normalized.
// "lcc", "merc" and "stere_polar" are ESRI's and OGC's names for more than
// one EPSG method; canonical tells them apart by their parameters.
var methodNames = map[string]string{
	"transversemercator": "tmerc", "gausskruger": "tmerc",
	"transversemercatorsouthorientated": "tmerc_south", "transversemercatorsouthoriented": "tmerc_south",
	"lambertconformalconic": "lcc", "lambertconformalconic1sp": "lcc1", "lambertconformalconic2sp": "lcc2",
	"lambertconicconformal1sp": "lcc1", "lambertconicconformal2sp": "lcc2",
	"albers": "aea", "albersconicequalarea": "aea", "albersequalarea": "aea",
	"cassini": "cass", "cassinisoldner": "cass",
	"hotineobliquemercatorazimuthnaturalorigin": "omerc_a", "rectifiedskeworthomorphicnaturalorigin": "omerc_a",
	"hotineobliquemercator": "omerc_a", "hotineobliquemercatorvarianta": "omerc_a",
	"hotineobliquemercatorazimuthcenter": "omerc_b", "rectifiedskeworthomorphiccenter": "omerc_b",
	"hotineobliquemercatorvariantb": "omerc_b",
	"stereographicnorthpole":        "stere_polar_b", "stereographicsouthpole": "stere_polar_b",
	"polarstereographicvariantb": "stere_polar_b", "polarstereographicvarianta": "stere_polar_a",
	"polarstereographic":  "stere_polar",
	"doublestereographic": "sterea", "obliquestereographic": "sterea",
	"lambertazimuthalequalarea": "laea",
	"polyconic":                 "poly", "americanpolyconic": "poly",
	"mercator": "merc", "mercator1sp": "merc_a", "mercatorvarianta": "merc_a",
	"mercator2sp": "merc_b", "mercatorvariantb": "merc_b",
}

// methodIDs are the EPSG codes of those methods (WKT 2's METHOD ID).
var methodIDs = map[int]string{
	9807: "tmerc", 9808: "tmerc_south", 9801: "lcc1", 9802: "lcc2", 9822: "aea",
	9806: "cass", 9812: "omerc_a", 9815: "omerc_b", 9810: "stere_polar_a",
	9829: "stere_polar_b", 9809: "sterea", 9820: "laea", 9818: "poly",
	9804: "merc_a", 9805: "merc_b",
}

// paramNames are the parameters' names in ESRI's dialect, OGC's WKT 1 and
// EPSG's, normalized.
var paramNames = map[string]string{
	"falseeasting": "x_0", "falsenorthing": "y_0",
	"eastingatfalseorigin": "x_0", "northingatfalseorigin": "y_0",
	"eastingatprojectioncentre": "x_0", "northingatprojectioncentre": "y_0",
	"centralmeridian": "lon_0", "longitudeofcenter": "lon_0", "longitudeoforigin": "lon_0",
	"longitudeofnaturalorigin": "lon_0", "longitudeoffalseorigin": "lon_0", "longitudeofprojectioncentre": "lon_0",
	"latitudeoforigin": "lat_0", "latitudeofcenter": "lat_0",
	"latitudeofnaturalorigin": "lat_0", "latitudeoffalseorigin": "lat_0", "latitudeofprojectioncentre": "lat_0",
	"scalefactor": "k", "scalefactoratnaturalorigin": "k", "scalefactoroninitialline": "k",
	"standardparallel1": "lat_1", "standardparallel2": "lat_2",
	"latitudeof1ststandardparallel": "lat_1", "latitudeof2ndstandardparallel": "lat_2",
	"latitudeofstandardparallel": "lat_ts",
	"azimuth":                    "alpha", "azimuthofinitialline": "alpha",
	"xyplanerotation": "gamma", "rectifiedgridangle": "gamma", "anglefromrectifiedtoskewgrid": "gamma",
}

// paramIDs are the EPSG codes of those parameters (WKT 2's PARAMETER ID).
var paramIDs = map[int]string{
	8801: "lat_0", 8802: "lon_0", 8805: "k", 8806: "x_0", 8807: "y_0",
	8821: "lat_0", 8822: "lon_0", 8823: "lat_1", 8824: "lat_2", 8826: "x_0", 8827: "y_0",
	8811: "lat_0", 8812: "lon_0", 8813: "alpha", 8814: "gamma", 8815: "k", 8816: "x_0", 8817: "y_0",
	8832: "lat_ts", 8833: "lon_0",
}

// angularParams are the keys whose values are angles.
var angularParams = map[string]bool{"lat_0": true, "lon_0": true, "lat_1": true, "lat_2": true, "lat_ts": true, "alpha": true, "gamma": true}

// epsgID is the EPSG code of a WKT 2 node's ID["EPSG", n]; 0 when none.
func epsgID(n *node) int {
	for _, id := range n.children("ID") {
		if len(id.args) < 2 {
			continue
		}
		if auth, _ := id.args[0].(string); !strings.EqualFold(auth, "EPSG") {
			continue
		}
		switch c := id.args[1].(type) {
		case float64:
			return int(c)
		case string:
			v, _ := strconv.Atoi(c)
			return v
		}
	}
	return 0
}

func methodByID(n *node) string {
	if n == nil {
		return ""
	}
	return methodIDs[epsgID(n)]
}

func paramByID(n *node) string { return paramIDs[epsgID(n)] }

// canonical names the method of a WKT's projection as the table does, and
// its parameters: ESRI's Lambert_Conformal_Conic is EPSG's 2SP when it
// has a second standard parallel, else 1SP (its Standard_Parallel_1 then
// repeats the latitude of origin); ESRI's Mercator and its polar
// stereographics give the latitude of true scale as Standard_Parallel_1;
// OGC's Polar_Stereographic is variant A at a pole, else variant B; a
// Mercator (variant A) of scale 1 at the equator is variant B; a conic's
// northern standard parallel comes first, as the table writes it.
func canonical(method string, raw map[string]float64) (string, map[string]float64) {
	p := make(map[string]float64, len(raw))
	for k, v := range raw {
		p[k] = v
	}
	moveTS := func() {
		if v, ok := p["lat_1"]; ok {
			if _, has := p["lat_ts"]; !has {
				p["lat_ts"] = v
				delete(p, "lat_1")
			}
		}
	}
	switch method {
	case "lcc":
		if _, ok := p["lat_2"]; ok {
			method = "lcc2"
			dropIf(p, "k", 1)
		} else {
			method = "lcc1"
			if v, ok := p["lat_1"]; ok && angleDiff(v, p["lat_0"]) <= angleTolerance {
				delete(p, "lat_1")
			}
		}
	case "merc", "merc_b":
		method = "merc_b"
		moveTS()
		dropIf(p, "k", 1)
	case "stere_polar_b":
		moveTS()
		dropIf(p, "k", 1)
		if _, ok := p["lat_ts"]; !ok {
			p["lat_ts"] = p["lat_0"]
		}
		delete(p, "lat_0")
	case "stere_polar":
		if math.Abs(math.Abs(p["lat_0"])-90) <= angleTolerance {
			method = "stere_polar_a"
		} else {
			method = "stere_polar_b"
			p["lat_ts"] = p["lat_0"]
			delete(p, "lat_0")
			dropIf(p, "k", 1)
		}
	case "cass", "poly", "laea", "aea":
		dropIf(p, "k", 1)
	case "omerc_a", "omerc_b":
		if _, ok := p["gamma"]; !ok {
			p["gamma"] = p["alpha"]
		}
	}
	if (method == "lcc2" || method == "aea") && p["lat_1"] < p["lat_2"] {
		// The two standard parallels are a pair in either order.
		p["lat_1"], p["lat_2"] = p["lat_2"], p["lat_1"]
	}
	if method == "merc_a" && math.Abs(p["k"]-1) <= scaleTolerance && math.Abs(p["lat_0"]) <= angleTolerance {
		method = "merc_b"
		delete(p, "k")
		delete(p, "lat_0")
		p["lat_ts"] = 0
	}
	return method, p
}

// dropIf removes key when it holds v.
func dropIf(p map[string]float64, key string, v float64) {
	if x, ok := p[key]; ok && math.Abs(x-v) <= scaleTolerance {
		delete(p, key)
	}
}

// sameParams reports whether two parameter sets are equal within the
// tolerances, a parameter one lacks taking its default (scale 1, every
// other 0).
func sameParams(a, b map[string]float64) bool {
	for _, pair := range [2][2]map[string]float64{{a, b}, {b, a}} {
		x, y := pair[0], pair[1]
		for k, v := range x {
			w, ok := y[k]
			if !ok && k == "k" {
				w = 1
			}
			switch {
			case angularParams[k]:
				if angleDiff(v, w) > angleTolerance {
					return false
				}
			case k == "k":
				if math.Abs(v-w) > scaleTolerance {
					return false
				}
			case k == "x_0" || k == "y_0":
				if math.Abs(v-w) > lengthTolerance {
					return false
				}
			default: // a parameter the match does not know
				if !ok || v != w {
					return false
				}
			}
		}
	}
	return true
}
