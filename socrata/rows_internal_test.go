package socrata

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/httpcall"
)

// page is a page of n rows as a portal writes them.
func page(n int) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{":id":"row-%04d.%04d",":created_at":"2026-11-01T08:00:00.000Z",":updated_at":"2026-11-01T08:00:00.000Z",`+
			`"name":"Site \"%d\"","amount":"%d.50","inspected":"2026-01-05T00:00:00.000","open":true,`+
			`"location":{"type":"Point","coordinates":[-87.6%d,41.8]},"boundary":{"type":"MultiPolygon","coordinates":[[[[-87.6,41.8],[-87.5,41.8],[-87.5,41.9],[-87.6,41.8]]]]}}`,
			i/7, i, i, i, i%1000)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// pageView lists page's columns, as its dataset's metadata would.
var pageView = View{Columns: []Column{{FieldName: "name"}, {FieldName: "amount"}, {FieldName: "inspected"}, {FieldName: "open"},
	{FieldName: "location", DataTypeName: "point"}, {FieldName: "boundary", DataTypeName: "multipolygon"}}}

// read decodes body as page 0 of a read of pageView's dataset and returns
// its features.
func readPage(t testing.TB, body []byte, limits feature.Limits) ([]feature.Feature, error) {
	rr := newRowReader(bufio.NewReader(bytes.NewReader(body)), &httpcall.Attempt{}, limits.WithDefaults(), "location", pageRef{url: "page-url"},
		newColumnSet(&pageView))
	var out []feature.Feature
	for {
		f, err := rr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, *f)
	}
}

// The row reader's own cost, without a server: a page of 50,000 rows.
// go test ./socrata -run '^$' -bench Rows -benchmem
func BenchmarkRows(b *testing.B) {
	body := page(50000)
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fs, err := readPage(b, body, feature.Limits{})
		if err != nil || len(fs) != 50000 {
			b.Fatal(err, len(fs))
		}
	}
	b.ReportMetric(50000*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// A row's members are split as encoding/json reads them: escaped keys and
// strings, nested values, and every value's bytes as sent.
func TestRowMembers(t *testing.T) {
	t.Parallel()
	fs, err := readPage(t, []byte(` [ {":id":"a","k\u00e9y":"v,}\"]","n":{"x":[1,{"y":"}"}]},"location":null} , {":id":7,"e":[]}]`), feature.Limits{})
	if err != nil || len(fs) != 2 {
		t.Fatalf("%v, %d features", err, len(fs))
	}
	if fs[0].ID != "a" || string(fs[0].Properties) != `{"kéy":"v,}\"]","n":{"x":[1,{"y":"}"}]}}` || fs[0].Geometry != nil {
		t.Errorf("row 0: %q %s %v", fs[0].ID, fs[0].Properties, fs[0].Geometry)
	}
	if fs[1].ID != "7" || string(fs[1].Properties) != `{"e":[]}` {
		t.Errorf("row 1: %q %s", fs[1].ID, fs[1].Properties)
	}
}

// Rows that break the rules fail the page naming the row and the cause: a
// row without :id, a row over feature_bytes (while it streams), a value
// over value_bytes, a body cut short, and data after the array.
func TestRowFaults(t *testing.T) {
	t.Parallel()
	big := `{":id":"b","v":"` + string(bytes.Repeat([]byte("x"), 300<<10)) + `"}`
	for _, tc := range []struct {
		body   string
		limits feature.Limits
		want   string
	}{
		{`[{":id":"a"},{"name":"x"}]`, feature.Limits{}, "row 1: the row has no :id"},
		{`[` + big + `]`, feature.Limits{FeatureBytes: 100 << 10}, "feature_bytes"},
		{`[` + big + `]`, feature.Limits{ValueBytes: 1000}, "value_bytes"},
		{`[{":id":"a"},{":id":"b","name":"x`, feature.Limits{}, "the body was cut short inside row 1: unexpected EOF"},
		{`[{":id":"a"}] {}`, feature.Limits{}, "data after the array of rows"},
		{`{"error":true}`, feature.Limits{}, "a page is an array of rows"},
		{`[1]`, feature.Limits{}, "row 0: the row is the number 1, not an object of columns"},
		{`[{":id":"a","location":{"type":"Pointy","coordinates":[1,2]}}]`, feature.Limits{}, `row 0, column "location": the geometry column's value is not a GeoJSON geometry`},
	} {
		_, err := readPage(t, []byte(tc.body), tc.limits)
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
			t.Errorf("%.60s: %v; want %q", tc.body, err, tc.want)
		}
	}
}

// The columns check's share of a row's cost: one lookup per member (the
// page's rows have nine), against BenchmarkRows' whole row (ns/op here is
// per row).
// go test ./socrata -run '^$' -bench ColumnCheck
func BenchmarkColumnCheck(b *testing.B) {
	cols := newColumnSet(&pageView)
	keys := []string{":id", ":created_at", ":updated_at", "name", "amount", "inspected", "open", "location", "boundary"}
	for b.Loop() {
		for _, k := range keys {
			if cols.see(1, k) != "" {
				b.Fatal(k)
			}
		}
	}
}
