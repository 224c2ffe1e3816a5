package interop_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/arcgis/arcgistest"
	"github.com/ingestd/ingestd/internal/memstat"
)

// bombs are the full-size documents of the hostile run against the ArcGIS
// kind, each served gzip by the fixture (in this process: it
// streams them, a feature or 64 KB at a time).
var bombs = []struct {
	name  string
	layer func() *arcgistest.Layer
	want  string // "" : loads
}{
	{"description-400MiB", func() *arcgistest.Layer {
		l := arcgistest.Squares(30)
		l.Faults.DescriptionBomb = 400 << 20
		return l
	}, "the layer description answer is larger than"},
	{"count-400MiB", func() *arcgistest.Layer {
		l := arcgistest.Squares(30)
		l.Faults.CountBomb = 400 << 20
		return l
	}, "the count answer is larger than"},
	{"statistics-400MiB", func() *arcgistest.Layer {
		l := arcgistest.Squares(30)
		l.Faults.IDsFail, l.Faults.StatisticsBomb = true, 400<<20
		return l
	}, "the statistics answer is larger than"},
	{"idlist-50M", func() *arcgistest.Layer {
		l := arcgistest.Squares(30)
		l.Faults.IDListBomb = 50_000_000
		return l
	}, "the id list holds more ids"},
	// The most an id list may hold with the default limits: a count just
	// under limits.poll_features, and a list longer still.
	{"idlist-50M-count-19999999", func() *arcgistest.Layer {
		l := arcgistest.Squares(30)
		l.Faults.Count, l.Faults.IDListBomb = 19_999_999, 50_000_000
		return l
	}, "the id list holds more ids"},
	// 40 features of 11.75 MB (each within feature_bytes, its values
	// within value_bytes) in one objectIds answer of 470 MB.
	{"answer-470MB", func() *arcgistest.Layer {
		l := arcgistest.Squares(40)
		l.Faults.Padding = 11_750_000
		return l
	}, ""},
	// The largest features the default limits let through: 16,000,000
	// bytes each (feature_bytes is 16 MiB), 30 in one answer.
	{"answer-16MB-features", func() *arcgistest.Layer {
		l := arcgistest.Squares(30)
		l.Faults.Padding = 16_000_000
		return l
	}, ""},
}

// BenchmarkArcGISBombs polls a good 30-feature layer, then its hostile
// variant (one of bombs), through the whole poll path into PostGIS, and
// reports the process's peak RSS (VmHWM). Peak RSS is per process: run
// each case in its own, e.g.
//
//	for c in description-400MiB count-400MiB statistics-400MiB idlist-50M \
//	  idlist-50M-count-19999999 answer-470MB answer-16MB-features; do
//	  go test -run '^$' -bench "BenchmarkArcGISBombs/^$c\$" -benchtime 1x ./arcgis/interop
//	done
func BenchmarkArcGISBombs(b *testing.B) {
	for _, c := range bombs {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				srv, base := fixture(b)
				srv.AddLayer("l", arcgistest.Squares(30))
				r := newRig(b, fmt.Sprintf("      - {id: l, kind: arcgis, url: %q, timeout: 30m, request_timeout: 10m}\n", arcgistest.URL(base, "l")), nil)
				if _, err := r.manager.Poll(r.ctx, "county/l"); err != nil {
					b.Fatalf("first poll: %v", err)
				}
				before, _ := r.digest(b, "l")
				l := c.layer()
				l.LastEditDate = 1800000000000
				srv.AddLayer("l", l)
				res, err := r.manager.Poll(r.ctx, "county/l")
				after, n := r.digest(b, "l")
				switch {
				case c.want == "" && (err != nil || n != len(l.Features)):
					b.Fatalf("poll: %v (%d features stored)", err, n)
				case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
					b.Fatalf("poll: %v, want %q", err, c.want)
				case c.want != "" && before != after:
					b.Fatalf("a failed poll changed the stored features")
				}
				rss := float64(memstat.PeakRSS()) / (1 << 20)
				b.ReportMetric(rss, "peak-RSS-MB")
				if err != nil {
					fmt.Printf("%s: peak RSS %.0f MB; %v\n", c.name, rss, err)
				} else {
					fmt.Printf("%s: peak RSS %.0f MB; loaded %d features, %d bytes\n", c.name, rss, res.Features, res.Bytes)
				}
			}
		})
	}
}
