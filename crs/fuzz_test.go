package crs_test

import (
	"testing"

	"github.com/ingestd/ingestd/crs"
)

// FuzzIdentify: a .prj is whatever a download holds; Identify answers a
// result or an error, never a panic.
//
//	go test ./crs -run '^$' -fuzz FuzzIdentify -fuzztime 30s
func FuzzIdentify(f *testing.F) {
	f.Add(longIsland)
	f.Add(`GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]]`)
	f.Add(`PROJCRS["x",BASEGEOGCRS["y",DATUM["z",ELLIPSOID["e",1,0]]],CONVERSION["c",METHOD["m",ID["EPSG",9807]],PARAMETER["p",1,ID["EPSG",8801]]]]`)
	f.Add(`COMPD_CS["c",PROJCS["p"],VERT_CS["v"]]`)
	f.Add(`PROJCS("a",GEOGCS("b",DATUM("D_",SPHEROID("s",1e308,-1))),PROJECTION("Lambert_Conformal_Conic"),PARAMETER("Standard_Parallel_1",NaN))`)
	f.Fuzz(func(t *testing.T, wkt string) {
		res, err := crs.Identify(wkt)
		if err == nil && (res.SRID <= 0 || res.Code == "" || res.By == "") {
			t.Fatalf("%q: %+v without an error", wkt, res)
		}
	})
}
