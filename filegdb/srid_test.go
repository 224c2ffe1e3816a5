package filegdb

import (
	"strings"
	"testing"
)

// TestSRIDOf: a layer's LatestWKID, else its WKID, when an EPSG code;
// else its WKT identified; an Esri WKID the WKT does not identify is an
// error naming it and asking for crs:.
func TestSRIDOf(t *testing.T) {
	const nad27 = `GEOGCS["GCS_North_American_1927",DATUM["D_North_American_1927",SPHEROID["Clarke_1866",6378206.4,294.978698213898]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]]`
	const webMercator = `PROJCS["WGS_1984_Web_Mercator_Auxiliary_Sphere",GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Mercator_Auxiliary_Sphere"],PARAMETER["False_Easting",0.0],PARAMETER["False_Northing",0.0],PARAMETER["Central_Meridian",0.0],PARAMETER["Standard_Parallel_1",0.0],PARAMETER["Auxiliary_Sphere_Type",0.0],UNIT["Meter",1.0]]`
	for _, tc := range []struct {
		latest, wkid int
		wkt          string
		want         int
	}{
		{3857, 102100, webMercator, 3857},
		{0, 4267, nad27, 4267},
		{0, 0, nad27, 4267},
		{0, 102100, webMercator, 3857},
	} {
		if got, err := sridOf(tc.latest, tc.wkid, tc.wkt); err != nil || got.SRID != tc.want {
			t.Errorf("sridOf(%d, %d, %.30s…) = %+v, %v; want %d", tc.latest, tc.wkid, tc.wkt, got, err, tc.want)
		}
	}
	_, err := sridOf(0, 0, "")
	if err == nil || !strings.Contains(err.Error(), "set crs:") {
		t.Errorf("no CRS: %v", err)
	}
	_, err = sridOf(0, 999999, `PROJCS["Local_Grid",GEOGCS["GCS_Unknown",DATUM["D_Unknown",SPHEROID["S",1.0,0.0]]],PROJECTION["Nonsense"],UNIT["Meter",1.0]]`)
	if err == nil || !strings.Contains(err.Error(), "Esri WKID 999999") || !strings.Contains(err.Error(), "crs:") {
		t.Errorf("an unknown Esri WKID: %v", err)
	}
}
