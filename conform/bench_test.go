package conform

import (
	"bytes"
	"encoding/json"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/ingestd/ingestd/internal/gdaltest"
	"github.com/ingestd/ingestd/internal/layertest"
)

// BenchmarkConformParcels conforms the properties of the 250,000-parcel
// fixture (internal/layertest.Parcels, as the readers' benchmarks use) by
// layertest.ParcelsConform on one goroutine and prints rows/s, which is
// per core, and rows per CPU second (the process's, GC included), which a
// shared machine's load does not lower: "map" is Apply on a property map,
// "bound" is Bound.Apply on a row of values, "decoded" the properties as
// JSON text decoded (json.Number) and Apply, "json" ApplyJSON on that
// text, what a store's apply runs. The fixture is generated in chunks
// outside the timer.
//
//	go test ./conform -run '^$' -bench ConformParcels -benchtime 3x
func BenchmarkConformParcels(b *testing.B) {
	c := mustCompile(b, layertest.ParcelsConform)
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
	docs := make([][]byte, chunk)
	var rec layertest.Record
	var buf []byte
	fill := func(start int) int {
		n := min(chunk, p.N-start)
		for i := range n {
			p.Record(start+i, &rec)
			row := make([]any, len(rec.Values))
			for j, v := range rec.Values {
				row[j] = v
			}
			recs[i] = row
			buf = p.AppendFeature(buf[:0], start+i)
			docs[i] = bytes.Clone(buf[bytes.Index(buf, []byte(`"properties":`))+len(`"properties":`) : len(buf)-1])
		}
		return n
	}
	for _, mode := range []string{"map", "bound", "decoded", "json"} {
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			out := make([]string, len(c.Columns()))
			props := make(map[string]any, len(names))
			rows := 0
			var cpu time.Duration
			for range b.N {
				for start := 0; start < p.N; start += chunk {
					b.StopTimer()
					n := fill(start)
					b.StartTimer()
					cpu0 := cpuTime(b)
					for i, row := range recs[:n] {
						switch mode {
						case "bound":
							err = bound.Apply(row, out)
						case "map":
							for j, name := range names {
								props[name] = row[j]
							}
							_, err = c.Apply(props)
						case "decoded":
							m := map[string]any{}
							d := json.NewDecoder(bytes.NewReader(docs[i]))
							d.UseNumber()
							if err = d.Decode(&m); err == nil {
								_, err = c.Apply(m)
							}
						case "json":
							err = c.ApplyJSON(docs[i], out)
						}
						if err != nil {
							b.Fatal(err)
						}
					}
					cpu += cpuTime(b) - cpu0
					rows += n
				}
			}
			b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(rows)/cpu.Seconds(), "rows/cpu-s")
			b.ReportMetric(0, "ns/op")
			b.Logf("%s rows/s per core: %s; rows per CPU second: %s", mode,
				strconv.FormatFloat(float64(rows)/b.Elapsed().Seconds(), 'f', 0, 64), strconv.FormatFloat(float64(rows)/cpu.Seconds(), 'f', 0, 64))
		})
	}
}

// cpuTime is the CPU time this process has used: on a shared machine,
// rows per CPU second is the figure its load does not lower.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
