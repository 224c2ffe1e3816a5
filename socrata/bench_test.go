package socrata_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ingestd/ingestd/socrata/socratatest"
)

// BenchmarkFetch reads a 50,000-row dataset from the fixture in pages of
// 50,000 rows (the largest $limit), every row decoded into a feature:
// go test ./socrata -run '^$' -bench Fetch -benchmem.
func BenchmarkFetch(b *testing.B) {
	const n = 50000
	s := socratatest.New()
	rows := make([]socratatest.Row, n)
	for i := range rows {
		rows[i] = row(i)
	}
	s.Add(&socratatest.Dataset{ID: dsID, Columns: columns, RowsUpdatedAt: epoch}, rows...)
	ts := httptest.NewServer(s)
	defer ts.Close()
	l := layer(ts, n)
	client := &http.Client{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c := &collected{}
		stats, err := newClient(client).Fetch(b.Context(), l, 0, c.handle)
		if err != nil || len(c.features) != n {
			b.Fatalf("%v, %d features", err, len(c.features))
		}
		b.ReportMetric(float64(stats.Bytes)/float64(n), "body-bytes/row")
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
