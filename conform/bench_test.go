package conform

import (
	"strconv"
	"testing"

	"github.com/ingestd/ingestd/internal/gdaltest"
	"github.com/ingestd/ingestd/internal/layertest"
)

// benchSpec is a realistic conform of a county's parcels as addresses: the
// site address split by prefixed_number and postfixed_street, the id cut
// out of the parcel number by a regexp, a district joined from two fields
// and a rewrite of the owner by a regexp replacement.
const benchSpec = `
layer: addresses
number: {function: prefixed_number, field: site_address}
street: {function: postfixed_street, field: site_address}
id: {function: regexp, field: pin, pattern: '^0*(\d+)$'}
district: {function: join, fields: [township, zoning], separator: ' '}
region: {function: regexp, field: owner, pattern: '^OWNER (\d+)$', replace: 'owner $1'}
city: land_use
`

// BenchmarkConformParcels conforms the properties of the 250,000-parcel
// fixture (internal/layertest.Parcels, as the readers' benchmarks use) on
// one goroutine and prints rows/s, which is per core: "map" is Apply on a
// property map, "bound" is Bound.Apply on a row of values. The fixture is
// generated in chunks outside the timer.
//
//	go test ./conform -run '^$' -bench ConformParcels -benchtime 3x
func BenchmarkConformParcels(b *testing.B) {
	c := mustCompile(b, benchSpec)
	p := layertest.Parcels{N: gdaltest.BenchParcels}
	fields := p.Fields()
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Name
	}
	bound, err := c.Bind(names)
	if err != nil {
		b.Fatal(err)
	}
	const chunk = 10000
	recs := make([][]any, chunk)
	var rec layertest.Record
	fill := func(start int) int {
		n := min(chunk, p.N-start)
		for i := range n {
			p.Record(start+i, &rec)
			row := make([]any, len(rec.Values))
			for j, v := range rec.Values {
				row[j] = v
			}
			recs[i] = row
		}
		return n
	}
	for _, mode := range []string{"map", "bound"} {
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			out := make([]string, len(c.Columns()))
			props := make(map[string]any, len(names))
			rows := 0
			for range b.N {
				for start := 0; start < p.N; start += chunk {
					b.StopTimer()
					n := fill(start)
					b.StartTimer()
					for _, row := range recs[:n] {
						if mode == "bound" {
							err = bound.Apply(row, out)
						} else {
							for j, name := range names {
								props[name] = row[j]
							}
							_, err = c.Apply(props)
						}
						if err != nil {
							b.Fatal(err)
						}
					}
					rows += n
				}
			}
			b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(0, "ns/op")
			b.Logf("%s rows/s per core: %s", mode, strconv.FormatFloat(float64(rows)/b.Elapsed().Seconds(), 'f', 0, 64))
		})
	}
}
