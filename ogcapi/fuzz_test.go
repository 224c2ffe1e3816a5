package ogcapi_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/ingestd/ingestd/ogcapi"
	"github.com/ingestd/ingestd/source"
)

// bodyTransport answers every request with status and body, as a server
// would, without a network.
type bodyTransport struct {
	status int
	header http.Header
	body   []byte
}

func (t bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: t.status, Header: t.header.Clone(), Body: io.NopCloser(bytes.NewReader(t.body)),
		Request: r, ContentLength: int64(len(t.body))}, nil
}

// FuzzFetchPage: whatever a server answers (every request gets the same
// body, so a next link repeats the page or loops), Fetch returns without
// panicking, and a fetch that succeeds handed over what it counted.
func FuzzFetchPage(f *testing.F) {
	for _, seed := range []string{
		`{"type":"FeatureCollection","features":[],"links":[]}`,
		`{"type":"FeatureCollection","features":[{"type":"Feature","id":1,"geometry":{"type":"Point","coordinates":[1,2]},"properties":{}}],"numberMatched":1,"numberReturned":1}`,
		`{"type":"FeatureCollection","features":[{"type":"Feature","id":"a","geometry":null,"properties":{"x":1}}],"links":[{"rel":"next","href":"?offset=1"}]}`,
		`{"type":"FeatureCollection","features":[],"links":[{"rel":"next","href":"http://127.0.0.1:1/items?limit=0"}],"numberMatched":0}`,
		`{"code":"InvalidParameterValue","description":"bad limit"}`,
		`{"type":"FeatureCollection","features":[],"links":{"rel":"next"}}`,
		`{"type":"FeatureCollection","features":[],"links":[{"rel":"next","href":":/\x00"}]}`,
		`<html><title>502</title></html>`,
		`null`,
	} {
		f.Add(200, seed, "")
		f.Add(400, seed, "<http://www.opengis.net/def/crs/EPSG/0/3857>")
	}
	f.Fuzz(func(t *testing.T, status int, body, crs string) {
		if status < 100 || status > 599 {
			return
		}
		h := http.Header{}
		if crs != "" {
			h.Set("Content-Crs", crs)
		}
		c := ogcapi.NewClient(&http.Client{Transport: bodyTransport{status: status, header: h, body: []byte(body)}}, nil, nil,
			ogcapi.WithMaxPages(20))
		layer := source.Layer{Kind: "ogcapi", URL: "http://127.0.0.1:1/collections/c", Settings: ogcapi.Settings{ItemsURL: "http://127.0.0.1:1/collections/c/items"}, PageSize: 10}
		col := &collect{}
		stats, err := c.Fetch(t.Context(), layer, 0, col.handle)
		if err == nil && stats.Features != col.total() {
			t.Errorf("stats say %d features, the handler got %d", stats.Features, col.total())
		}
	})
}
