package crs

import (
	"strings"
	"testing"
)

const benchPRJ = `PROJCS["NAD_1983_StatePlane_New_York_Long_Island_FIPS_3104_Feet",GEOGCS["GCS_North_American_1983",DATUM["D_North_American_1983",SPHEROID["GRS_1980",6378137.0,298.257222101]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Lambert_Conformal_Conic"],PARAMETER["False_Easting",984250.0],PARAMETER["False_Northing",0.0],PARAMETER["Central_Meridian",-74.0],PARAMETER["Standard_Parallel_1",41.0333333333333],PARAMETER["Standard_Parallel_2",40.6666666666667],PARAMETER["Latitude_Of_Origin",40.1666666666667],UNIT["US survey foot",0.304800609601219]]`

// BenchmarkIdentify prints what identifying a CRS costs a reader: parsing
// the embedded table (once per process), a .prj identified by its name,
// and the same renamed, identified by its parameters.
//
//	go test ./crs -run '^$' -bench Identify -benchmem
func BenchmarkIdentify(b *testing.B) {
	b.Run("load table", func(b *testing.B) {
		for b.Loop() {
			t, err := parseTable(projTable)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(t.projCount), "projected_crs")
		}
		b.ReportMetric(float64(len(projTable)), "embedded_bytes")
	})
	for _, c := range []struct{ name, wkt string }{
		{"by name", benchPRJ},
		{"by parameters", strings.Replace(benchPRJ, "NAD_1983_StatePlane_New_York_Long_Island_FIPS_3104_Feet", "Parcels_Grid", 1)},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Identify(c.wkt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
