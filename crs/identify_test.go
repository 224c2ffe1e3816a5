package crs_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/crs"
)

const longIsland = `PROJCS["NAD_1983_StatePlane_New_York_Long_Island_FIPS_3104_Feet",GEOGCS["GCS_North_American_1983",DATUM["D_North_American_1983",SPHEROID["GRS_1980",6378137.0,298.257222101]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Lambert_Conformal_Conic"],PARAMETER["False_Easting",984250.0],PARAMETER["False_Northing",0.0],PARAMETER["Central_Meridian",-74.0],PARAMETER["Standard_Parallel_1",41.0333333333333],PARAMETER["Standard_Parallel_2",40.6666666666667],PARAMETER["Latitude_Of_Origin",40.1666666666667],UNIT["US survey foot",0.304800609601219]]`

// TestIdentify: each way of identifying, in the dialects that reach it.
func TestIdentify(t *testing.T) {
	for _, c := range []struct {
		what, wkt string
		want      crs.Result
	}{
		{"ESRI name", longIsland, crs.Result{SRID: 2263, Code: "EPSG:2263", By: crs.ByName}},
		{"ESRI name, ArcGIS's digits and unit name", strings.NewReplacer("41.0333333333333", "41.03333333333333", `UNIT["US survey foot",0.304800609601219]`, `UNIT["Foot_US",0.3048006096012192]`).Replace(longIsland),
			crs.Result{SRID: 2263, Code: "EPSG:2263", By: crs.ByName}},
		{"renamed", strings.Replace(longIsland, "NAD_1983_StatePlane_New_York_Long_Island_FIPS_3104_Feet", "Parcels_Grid", 1),
			crs.Result{SRID: 2263, Code: "EPSG:2263", By: crs.ByParameters}},
		{"renamed, parallels swapped", strings.NewReplacer("NAD_1983_StatePlane_New_York_Long_Island_FIPS_3104_Feet", "Parcels_Grid", "41.0333333333333", "40.6666666666667", "40.6666666666667", "41.0333333333333").Replace(longIsland),
			crs.Result{SRID: 2263, Code: "EPSG:2263", By: crs.ByParameters}},
		// The name is NAD83's, the datum HARN's: the definition decides.
		{"a name whose definition differs", strings.NewReplacer(`GEOGCS["GCS_North_American_1983",DATUM["D_North_American_1983"`, `GEOGCS["GCS_North_American_1983_HARN",DATUM["D_North_American_1983_HARN"`).Replace(longIsland),
			crs.Result{SRID: 2908, Code: "EPSG:2908", By: crs.ByParameters}},
		{"ESRI's own CRS", `PROJCS["NAD_1983_HARN_Adj_MN_Aitkin_Meters",GEOGCS["GCS_North_American_1983_HARN",DATUM["D_North_American_1983_HARN",SPHEROID["GRS_1980",6378137.0,298.257222101]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Transverse_Mercator"],PARAMETER["False_Easting",152409.319685395],PARAMETER["False_Northing",30481.863937079],PARAMETER["Central_Meridian",-93.4325],PARAMETER["Scale_Factor",1.000059152669],PARAMETER["Latitude_Of_Origin",46.1541666666667],UNIT["Meter",1.0]]`,
			crs.Result{SRID: 103600, Code: "ESRI:103600", By: crs.ByName}},
		{"the geographic CRS's code alone", `PROJCS["Grid",GEOGCS["NAD83",AUTHORITY["EPSG","4269"]],PROJECTION["Lambert_Conformal_Conic_2SP"],PARAMETER["standard_parallel_1",36.16666666666666],PARAMETER["standard_parallel_2",34.33333333333334],PARAMETER["latitude_of_origin",33.75],PARAMETER["central_meridian",-79],PARAMETER["false_easting",609601.22],PARAMETER["false_northing",0],UNIT["metre",1]]`,
			crs.Result{SRID: 32119, Code: "EPSG:32119", By: crs.ByParameters}},
		{"authority", `PROJCS["NAD83 / UTM zone 18N",GEOGCS["NAD83",AUTHORITY["EPSG","4269"]],AUTHORITY["EPSG","26918"]]`, crs.Result{SRID: 26918, Code: "EPSG:26918", By: crs.ByAuthority}},
		{"GDAL's geographic", `GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563]],PRIMEM["Greenwich",0],UNIT["degree",0.0174532925199433]]`, crs.Result{SRID: 4326, Code: "EPSG:4326", By: crs.ByName}},
		{"geographic by datum", `GEOGCS["GCS_Assumed",DATUM["D_North_American_1927",SPHEROID["Clarke_1866",6378206.4,294.978698213898]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]]`, crs.Result{SRID: 4267, Code: "EPSG:4267", By: crs.ByParameters}},
		// ESRI names the datum apart from its prime meridian, in grads.
		{"Paris, in grads", `PROJCS["Lambert_II_Local",GEOGCS["GCS_NTF_Paris",DATUM["D_NTF",SPHEROID["Clarke_1880_IGN",6378249.2,293.466021293627]],PRIMEM["Paris",2.33722917],UNIT["Grad",0.0157079632679489]],PROJECTION["Lambert_Conformal_Conic"],PARAMETER["False_Easting",600000.0],PARAMETER["False_Northing",2200000.0],PARAMETER["Central_Meridian",0.0],PARAMETER["Standard_Parallel_1",52.0],PARAMETER["Scale_Factor",0.99987742],PARAMETER["Latitude_Of_Origin",52.0],UNIT["Meter",1.0]]`,
			crs.Result{SRID: 27572, Code: "EPSG:27572", By: crs.ByParameters}},
		// GDAL's WKT 2, as a FlatGeobuf carries it, renamed.
		{"WKT 2", `PROJCRS["Custom",BASEGEOGCRS["NAD83",DATUM["North American Datum 1983",ELLIPSOID["GRS 1980",6378137,298.257222101,LENGTHUNIT["metre",1]]],PRIMEM["Greenwich",0,ANGLEUNIT["degree",0.0174532925199433]]],CONVERSION["SPCS83 North Carolina zone (US Survey feet)",METHOD["Lambert Conic Conformal (2SP)",ID["EPSG",9802]],PARAMETER["Latitude of false origin",33.75,ANGLEUNIT["degree",0.0174532925199433],ID["EPSG",8821]],PARAMETER["Longitude of false origin",-79,ANGLEUNIT["degree",0.0174532925199433],ID["EPSG",8822]],PARAMETER["Latitude of 1st standard parallel",36.1666666666667,ANGLEUNIT["degree",0.0174532925199433],ID["EPSG",8823]],PARAMETER["Latitude of 2nd standard parallel",34.3333333333333,ANGLEUNIT["degree",0.0174532925199433],ID["EPSG",8824]],PARAMETER["Easting at false origin",2000000.00261667,LENGTHUNIT["US survey foot",0.304800609601219],ID["EPSG",8826]],PARAMETER["Northing at false origin",0,LENGTHUNIT["US survey foot",0.304800609601219],ID["EPSG",8827]]],CS[Cartesian,2],AXIS["easting (X)",east,ORDER[1],LENGTHUNIT["US survey foot",0.304800609601219]],AXIS["northing (Y)",north,ORDER[2],LENGTHUNIT["US survey foot",0.304800609601219]]]`,
			crs.Result{SRID: 2264, Code: "EPSG:2264", By: crs.ByParameters}},
	} {
		t.Run(c.what, func(t *testing.T) {
			got, err := crs.Identify(c.wkt)
			if err != nil || got != c.want {
				t.Errorf("got %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

// TestUnknown: a CRS nothing identifies fails naming what it saw and
// asking for crs:, guessing no code.
func TestUnknown(t *testing.T) {
	anyCode := regexp.MustCompile(`(EPSG|ESRI):\d`)
	for _, c := range []struct {
		what, wkt string
		want      []string
	}{
		{"nonsense datum", `PROJCS["Nowhere_County_Grid",GEOGCS["GCS_Nowhere",DATUM["D_Nowhere",SPHEROID["Nowhere_Spheroid",6378000.0,300.0]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Transverse_Mercator"],PARAMETER["False_Easting",500000.0],PARAMETER["False_Northing",0.0],PARAMETER["Central_Meridian",-75.5],PARAMETER["Scale_Factor",0.9999],PARAMETER["Latitude_Of_Origin",38.0],UNIT["Foot_US",0.3048006096012192]]`,
			[]string{`the projected CRS "Nowhere_County_Grid" (projection "Transverse_Mercator", datum "D_Nowhere", unit "Foot_US" = 0.3048006096 m)`, "no EPSG or ESRI datum has that name and ellipsoid", "set the feed's crs:"}},
		{"parameters of no CRS", strings.Replace(strings.Replace(longIsland, "-74.0", "-74.5", 1), "NAD_1983_StatePlane_New_York_Long_Island_FIPS_3104_Feet", "Shifted", 1),
			[]string{`the projected CRS "Shifted" (projection "Lambert_Conformal_Conic", datum "D_North_American_1983", unit "US survey foot" = 0.3048006096 m) matches no EPSG or ESRI CRS`, "set the feed's crs:"}},
		{"a projection the match does not know", `PROJCS["Somewhere",GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Van_der_Grinten_I"],PARAMETER["False_Easting",0.0],PARAMETER["Central_Meridian",12.0],UNIT["Meter",1.0]]`,
			[]string{`projection "Van_der_Grinten_I"`, "the parameter match does not know that projection"}},
		{"not WKT", "EPSG:2263", []string{`not a WKT CRS ("EPSG:2263")`, "set the feed's crs:"}},
		{"cut short", longIsland[:120], []string{"not a WKT CRS", "is not closed"}},
		{"a vertical CRS", `VERT_CS["NAVD88",VERT_DATUM["North American Vertical Datum 1988",2005]]`, []string{"a WKT VERT_CS, not a projected or geographic CRS"}},
		{"too deep", strings.Repeat("A[", 100) + strings.Repeat("]", 100), []string{"nested deeper than"}},
		{"a name of 10 kB", strings.NewReplacer("NAD_1983_StatePlane_New_York_Long_Island_FIPS_3104_Feet", strings.Repeat("x", 10000), "-74.0", "-74.5").Replace(longIsland),
			[]string{`"xxxx`, "…(10000 bytes)"}},
	} {
		t.Run(c.what, func(t *testing.T) {
			_, err := crs.Identify(c.wkt)
			if err == nil {
				t.Fatal("identified")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v\nwant it to contain %q", err, w)
				}
			}
			if len(err.Error()) > 1000 {
				t.Errorf("a message of %d bytes", len(err.Error()))
			}
			if m := anyCode.FindString(strings.ReplaceAll(err.Error(), c.wkt[:min(len(c.wkt), 80)], "")); m != "" {
				t.Errorf("%v\nnames a code (%s)", err, m)
			}
			var u *crs.UnknownError
			if strings.Contains(err.Error(), "matches no EPSG") && !errors.As(err, &u) {
				t.Errorf("%T, want *crs.UnknownError", err)
			}
		})
	}
}
