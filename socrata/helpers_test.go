package socrata_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/twpayne/go-geom"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/socrata"
	"github.com/ingestd/ingestd/socrata/socratatest"
	"github.com/ingestd/ingestd/source"
)

const dsID = "abcd-1234"

// columns of the test dataset: every type the kind maps, a point (the
// first geometry column) and a multipolygon.
var columns = []socratatest.Column{
	{FieldName: "name", Name: "Name", DataTypeName: "text"},
	{FieldName: "amount", Name: "Amount", DataTypeName: "number"},
	{FieldName: "inspected", Name: "Inspected", DataTypeName: "calendar_date"},
	{FieldName: "open", Name: "Open", DataTypeName: "checkbox"},
	{FieldName: "location", Name: "Location", DataTypeName: "point"},
	{FieldName: "boundary", Name: "Boundary", DataTypeName: "multipolygon"},
}

var epoch = time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)

// row is the test dataset's row i, its values as the .json format
// writes them; every seventh has no boundary and every eleventh no name.
func row(i int) socratatest.Row {
	x, y := -87.6+float64(i)*1e-4, 41.8+float64(i%97)*1e-4
	v := map[string]any{
		"amount":    fmt.Sprintf("%d.%02d", i, i%100),
		"inspected": epoch.AddDate(0, 0, -i%400).Format("2006-01-02T15:04:05.000"),
		"open":      i%2 == 0,
		"location":  map[string]any{"type": "Point", "coordinates": []float64{x, y}},
	}
	if i%11 != 0 {
		v["name"] = "Site " + strconv.Itoa(i)
	}
	if i%7 != 0 {
		v["boundary"] = map[string]any{"type": "MultiPolygon", "coordinates": [][][][]float64{{{{x, y}, {x + 1e-4, y}, {x + 1e-4, y + 1e-4}, {x, y}}}}}
	}
	at := epoch.Add(time.Duration(i) * time.Second)
	return socratatest.Row{ID: fmt.Sprintf("row-%04d.%04d", i/7, i), CreatedAt: at, UpdatedAt: at, Values: v}
}

// portal serves one dataset of n rows until t ends.
func portal(t *testing.T, n int) (*socratatest.Server, *httptest.Server) {
	t.Helper()
	s := socratatest.New()
	rows := make([]socratatest.Row, n)
	for i := range rows {
		rows[i] = row(i)
	}
	s.Add(&socratatest.Dataset{ID: dsID, Name: "Inspections", Columns: columns, RowsUpdatedAt: epoch}, rows...)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts
}

// layer is the dataset as a socrata feed reads it.
func layer(ts *httptest.Server, pageSize int) source.Layer {
	return source.Layer{Kind: socrata.Kind, URL: ts.URL + "/resource/" + dsID + ".json", PageSize: pageSize,
		Settings: socrata.Settings{Dataset: dsID}}
}

// collected is what a fetch handed over, feature by feature.
type collected struct {
	features []feature.Feature
	pages    []source.Page
}

func (c *collected) handle(_ context.Context, p source.Page, fr feature.FeatureReader) error {
	c.pages = append(c.pages, p)
	for {
		f, err := fr.Next()
		if err != nil {
			if err.Error() == "EOF" {
				return nil
			}
			return fmt.Errorf("page %d: %w", p.Index, err)
		}
		c.features = append(c.features, *f)
	}
}

// registry is a breaker registry that does not pace, for tests whose
// subject is not pacing; MaxRetryAfter leaves a 429's second to be waited.
func registry() *breaker.Registry {
	p := breaker.DefaultPolicy()
	p.RateLimit = 0
	p.BackoffBase, p.BackoffMax = time.Millisecond, 10*time.Millisecond
	return breaker.NewRegistry(breaker.Config{Policy: p}, nil)
}

// fetch reads l with a fresh client through reg (nil: registry()).
func fetch(t *testing.T, l source.Layer, reg *breaker.Registry) (*collected, source.FetchStats, error) {
	t.Helper()
	if reg == nil {
		reg = registry()
	}
	c := &collected{}
	stats, err := socrata.NewClient(&http.Client{}, reg, nil).Fetch(t.Context(), l, 0, c.handle)
	return c, stats, err
}

// newClient is a client through an unpacing registry.
func newClient(h *http.Client) *socrata.Client { return socrata.NewClient(h, registry(), nil) }

// wantProperties is what the properties of row r must be: every value but
// :id and the geometry column, with the two timestamps.
func wantProperties(t *testing.T, r socratatest.Row, geomCol string) map[string]any {
	t.Helper()
	m := map[string]any{":created_at": r.CreatedAt.Format("2006-01-02T15:04:05.000Z"), ":updated_at": r.UpdatedAt.Format("2006-01-02T15:04:05.000Z")}
	for k, v := range r.Values {
		if k != geomCol && v != nil {
			m[k] = v
		}
	}
	b, _ := json.Marshal(m)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// firstCoords are the first coordinates of g.
func firstCoords(g geom.T) []float64 {
	if g == nil || len(g.FlatCoords()) < 2 {
		return nil
	}
	return g.FlatCoords()[:2]
}
