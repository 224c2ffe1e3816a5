package ogcapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/ogcapi"
	"github.com/ingestd/ingestd/ogcapi/ogcapitest"
	"github.com/ingestd/ingestd/source"
	"github.com/twpayne/go-geom"
)

// collect gathers the features of a fetch, page by page.
type collect struct {
	pages [][]feature.Feature
}

func (c *collect) handle(_ context.Context, p source.Page, r feature.FeatureReader) error {
	var page []feature.Feature
	for {
		f, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("page %d: %w", p.Index, err)
		}
		page = append(page, *f)
	}
	c.pages = append(c.pages, page)
	return nil
}

func (c *collect) ids() map[string]int {
	m := map[string]int{}
	for _, p := range c.pages {
		for _, f := range p {
			m[f.ID]++
		}
	}
	return m
}

func (c *collect) total() int {
	n := 0
	for _, p := range c.pages {
		n += len(p)
	}
	return n
}

func fixture(t *testing.T, n int, pit ogcapitest.Pitfall) (*ogcapitest.Server, string) {
	t.Helper()
	s := ogcapitest.New()
	s.Add("parcels", ogcapitest.Collection{Layer: layertest.Parcels{N: n}, Pitfall: pit})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

func fetch(t *testing.T, layer source.Layer) (*collect, source.FetchStats, []string, error) {
	t.Helper()
	c := ogcapi.NewClient(nil, nil, nil)
	layer, warnings, err := c.Prepare(t.Context(), layer)
	if err != nil {
		return nil, source.FetchStats{}, warnings, err
	}
	col := &collect{}
	stats, err := c.Fetch(t.Context(), layer, 0, col.handle)
	return col, stats, append(warnings, stats.Warnings...), err
}

// TestFetchComplete: a collection paged by next links arrives whole, with
// every id once, through either form of url, and a page size above the
// server's declared maximum is capped with a warning.
func TestFetchComplete(t *testing.T) {
	t.Parallel()
	s, base := fixture(t, 1234, ogcapitest.None)
	s.MaxLimit = 500
	for _, layer := range []source.Layer{
		{Kind: "ogcapi", URL: base + "/collections/parcels", PageSize: 100},
		{Kind: "ogcapi", URL: base, Settings: ogcapi.Settings{Collection: "parcels"}, PageSize: 1000},
	} {
		col, stats, warnings, err := fetch(t, layer)
		if err != nil {
			t.Fatalf("%s: %v", layer.URL, err)
		}
		if col.total() != 1234 || len(col.ids()) != 1234 || stats.NumberMatched != 1234 {
			t.Errorf("%s: %d features, %d ids, numberMatched %d", layer.URL, col.total(), len(col.ids()), stats.NumberMatched)
		}
		if layer.PageSize == 1000 {
			if stats.Pages != 3 || !strings.Contains(strings.Join(warnings, "\n"), "above the server's maximum limit 500") {
				t.Errorf("capped: %d pages, warnings %q", stats.Pages, warnings)
			}
		} else if stats.Pages != 13 {
			t.Errorf("%d pages, want 13", stats.Pages)
		}
	}
}

// TestFetchLegitimateOddities: pages shorter than the limit that still
// have a next link are followed; numberMatched sent as a decimal string is
// read; a server without numberMatched loads when it answers the count to
// resulttype=hits, or when the feed accepts its links alone (a warning that
// completeness rests on the links).
func TestFetchLegitimateOddities(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pit          ogcapitest.Pitfall
		hits, links  bool
		completeness string
		warning      string
	}{
		{pit: ogcapitest.ShortPages, completeness: "number_matched"},
		{pit: ogcapitest.NumberMatchedString, completeness: "number_matched"},
		{pit: ogcapitest.NoNumberMatched, hits: true, completeness: "number_matched", warning: "checked against its resulttype=hits count, 250"},
		{pit: ogcapitest.NoNumberMatched, links: true, completeness: "links_only", warning: "completeness rests on its next links alone"},
	} {
		s := ogcapitest.New()
		s.Add("parcels", ogcapitest.Collection{Layer: layertest.Parcels{N: 250}, Pitfall: c.pit, Hits: c.hits})
		srv := httptest.NewServer(s)
		t.Cleanup(srv.Close)
		col, stats, warnings, err := fetch(t, source.Layer{Kind: "ogcapi", URL: srv.URL + "/collections/parcels", PageSize: 30, Settings: ogcapi.Settings{LinksOnly: c.links}})
		if err != nil {
			t.Fatalf("%s: %v", c.pit, err)
		}
		if col.total() != 250 || len(col.ids()) != 250 || stats.Completeness != c.completeness {
			t.Errorf("%s: %d features, %d ids, completeness %q", c.pit, col.total(), len(col.ids()), stats.Completeness)
		}
		if w := strings.Join(warnings, "\n"); !strings.Contains(w, c.warning) {
			t.Errorf("%s: warnings %q, want %q", c.pit, w, c.warning)
		}
		if c.pit == ogcapitest.ShortPages && stats.Pages != 25 {
			t.Errorf("%s: %d pages, want 25 (10 per page)", c.pit, stats.Pages)
		}
	}
}

// TestFetchPitfalls: each broken server fails the fetch with a message
// naming the cause; so does a collection that nothing proves whole.
func TestFetchPitfalls(t *testing.T) {
	t.Parallel()
	incomplete := new(*source.IncompleteError)
	cases := []struct {
		pit   ogcapitest.Pitfall
		links bool // completeness: links_only
		want  string
		as    any
	}{
		{ogcapitest.NoNextOnFullPage, false, "page 1 has no next link, but numberMatched promised more: the page was full (100 features), so the server dropped the next link of a full page", incomplete},
		{ogcapitest.NextLoop, false, "the next link of page 2 leads back to page 1 (a link loop)", new(*ogcapi.PagingError)},
		{ogcapitest.ZeroLimitSelf, false, "the next link of page 1 leads back to page 1 (a link loop)", new(*ogcapi.PagingError)},
		{ogcapitest.ApproxNumberMatched, false, "page 3 has no next link, but numberMatched promised more: the server's count is approximate", incomplete},
		{ogcapitest.WrongContentCRS, false, "CRS http://www.opengis.net/def/crs/OGC/1.3/CRS84: the response's Content-Crs is http://www.opengis.net/def/crs/EPSG/0/3857", new(*ogcapi.CRSError)},
		{ogcapitest.Exception200, false, "HTTP 200: NoApplicableCode: database connection lost", new(*ogcapi.ExceptionError)},
		{ogcapitest.OffsetIgnored, false, "page 1 repeats page 0: it starts with the same feature (id \"parcel.0\"); the server ignores the paging position of its next links (MapServer#6613)", new(*ogcapi.PagingError)},
		{ogcapitest.Duplicates, false, `id "parcel.99" came on pages 0 and 1`, incomplete},
		{ogcapitest.DuplicateInPage, false, `id "parcel.4" came twice in page 0: the server's features are not unique`, incomplete},
		{ogcapitest.OverlapNoIDs, true, "the same feature (no id; the same properties and geometry) came on pages 0 and 1: the server's pages overlap", incomplete},
		{ogcapitest.NumberMatchedUnknown, false, `page 0: numberMatched is the string "unknown", not a count`, incomplete},
		{ogcapitest.NoNumberMatched, false, "the server reports no numberMatched, on its pages nor to resulttype=hits: nothing proves the 350 features the whole collection; set completeness: links_only", incomplete},
		{ogcapitest.NoNextNoNumberMatched, false, "the server reports no numberMatched, on its pages nor to resulttype=hits: nothing proves the 200 features", incomplete},
		{ogcapitest.NoNextNoNumberMatched, true, "page 1 was full (100 features) and has no next link, and the server reports no numberMatched", incomplete},
		// The count the server answers to resulttype=hits proves the pages short.
		{"hits:" + ogcapitest.NoNextNoNumberMatched, false, "page 1 has no next link, but numberMatched promised more: the page was full (100 features), " +
			"so the server dropped the next link of a full page (pygeoapi#1594) (numberMatched of its resulttype=hits answer; its pages reported none) (expected 350 features, got 200)", incomplete},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/links_only=%v", c.pit, c.links), func(t *testing.T) {
			t.Parallel()
			pit, hits := strings.CutPrefix(string(c.pit), "hits:")
			s := ogcapitest.New()
			s.Add("parcels", ogcapitest.Collection{Layer: layertest.Parcels{N: 350}, Pitfall: ogcapitest.Pitfall(pit), Hits: hits})
			srv := httptest.NewServer(s)
			t.Cleanup(srv.Close)
			_, _, _, err := fetch(t, source.Layer{Kind: "ogcapi", URL: srv.URL + "/collections/parcels", PageSize: 100, Settings: ogcapi.Settings{LinksOnly: c.links}})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
			if !errors.As(err, c.as) {
				t.Errorf("error %T, want %T", err, c.as)
			}
		})
	}
}

// TestFetchCRS: Part 2 CRSs come back as x/y in their SRID: EPSG:4326 is
// latitude first on the wire and swapped; EPSG:3857 is projected.
func TestFetchCRS(t *testing.T) {
	t.Parallel()
	_, base := fixture(t, 20, ogcapitest.None)
	ref, _, _, err := fetch(t, source.Layer{Kind: "ogcapi", URL: base + "/collections/parcels", PageSize: 7})
	if err != nil {
		t.Fatal(err)
	}
	for _, crs := range []string{ogcapitest.EPSG4326, ogcapitest.EPSG3857} {
		col, _, _, err := fetch(t, source.Layer{Kind: "ogcapi", URL: base + "/collections/parcels", PageSize: 7, Settings: ogcapi.Settings{CRS: crs}})
		if err != nil {
			t.Fatalf("%s: %v", crs, err)
		}
		for p := range ref.pages {
			for i, f := range col.pages[p] {
				want := ref.pages[p][i].Geometry.(*geom.Polygon).FlatCoords()
				got := f.Geometry.(*geom.Polygon).FlatCoords()
				srid := f.Geometry.SRID()
				if crs == ogcapitest.EPSG4326 {
					if srid != 4326 || got[0] != want[0] || got[1] != want[1] {
						t.Fatalf("%s: feature %s: SRID %d, first position %v, want %v", crs, f.ID, srid, got[:2], want[:2])
					}
				} else {
					x := 6378137.0 * want[0] * math.Pi / 180
					if srid != 3857 || math.Abs(got[0]-x) > 0.01 {
						t.Fatalf("%s: feature %s: SRID %d, x %v, want %v", crs, f.ID, srid, got[0], x)
					}
				}
			}
		}
	}
}

// TestPrepareCRSRefused: a CRS the collection does not list, or a server
// without Part 2, is refused before any page.
func TestPrepareCRSRefused(t *testing.T) {
	t.Parallel()
	s, base := fixture(t, 5, ogcapitest.None)
	_, _, _, err := fetch(t, source.Layer{Kind: "ogcapi", URL: base + "/collections/parcels", PageSize: 7, Settings: ogcapi.Settings{CRS: "http://www.opengis.net/def/crs/EPSG/0/2264"}})
	if err == nil || !strings.Contains(err.Error(), "not in the collection's crs list") {
		t.Errorf("unlisted CRS: %v", err)
	}
	s.NoPart2 = true
	_, _, _, err = fetch(t, source.Layer{Kind: "ogcapi", URL: base + "/collections/parcels", PageSize: 7, Settings: ogcapi.Settings{CRS: ogcapitest.EPSG3857}})
	if err == nil || !strings.Contains(err.Error(), "does not declare OGC API – Features Part 2") {
		t.Errorf("no Part 2: %v", err)
	}
}

// TestPrepareErrors: a missing collection is the feed's error with the
// server's exception text; a url that is neither form is refused.
func TestPrepareErrors(t *testing.T) {
	t.Parallel()
	_, base := fixture(t, 5, ogcapitest.None)
	_, _, _, err := fetch(t, source.Layer{Kind: "ogcapi", URL: base + "/collections/nope"})
	if err == nil || !strings.Contains(err.Error(), "HTTP 404: NotFound: no collection nope") {
		t.Errorf("missing collection: %v", err)
	}
	_, _, _, err = fetch(t, source.Layer{Kind: "ogcapi", URL: base + "/api"})
	if !errors.Is(err, source.ErrInvalidLayer) {
		t.Errorf("no collection: %v", err)
	}
}

// TestValidatorsOnePage: a collection that fits one page hands the
// server's ETag to the store; a paged one does not.
func TestValidatorsOnePage(t *testing.T) {
	t.Parallel()
	s := ogcapitest.New()
	s.Add("small", ogcapitest.Collection{Layer: layertest.Parcels{N: 5}, ETag: `"v1"`})
	srv := httptest.NewServer(s)
	defer srv.Close()
	_, stats, _, err := fetch(t, source.Layer{Kind: "ogcapi", URL: srv.URL + "/collections/small", PageSize: 10})
	if err != nil || stats.Validators.ETag != `"v1"` {
		t.Errorf("one page: %v, validators %+v", err, stats.Validators)
	}
	// The next poll sends them back; the server's 304 is NotModified.
	pages, again, _, err := fetch(t, source.Layer{Kind: "ogcapi", URL: srv.URL + "/collections/small", PageSize: 10, Validators: stats.Validators})
	if err != nil || !again.NotModified || len(pages.pages) != 0 || again.Validators != stats.Validators {
		t.Errorf("validators sent back: %v, %+v, %d pages handed over", err, again, len(pages.pages))
	}
	_, stats, _, err = fetch(t, source.Layer{Kind: "ogcapi", URL: srv.URL + "/collections/small", PageSize: 2})
	if err != nil || !stats.Validators.IsZero() {
		t.Errorf("paged: %v, validators %+v", err, stats.Validators)
	}
}

// TestExceptionRecognition: an exception document is told from the
// documents that merely begin like one (MapServer's collection documents
// begin with "description").
func TestExceptionRecognition(t *testing.T) {
	t.Parallel()
	for doc, want := range map[string]bool{
		`{"code":"NotFound","description":"no collection"}`:                   true,
		`{"description":"x","code":"InvalidParameterValue"}`:                  true,
		`{"description":"<!-- Warning -->","extent":{},"id":"nc","links":[]}`: false,
		`{"type":"FeatureCollection","features":[],"code":"x"}`:               false,
		`{"description":"only a description"}`:                                false,
		// pygeoapi's, with a type equal to the code.
		`{"code":"NotFound","type":"NotFound","description":"Collection not found"}`: true,
		// FastAPI's (tipg): a string, or a list of validation errors.
		`{"detail":"Table/Function 'public.nope' not found."}`:                                               true,
		`{"detail":[{"type":"literal_error","loc":["query","f"],"msg":"Input should be 'json' or 'html'"}]}`: true,
		// RFC 7807.
		`{"type":"about:blank","title":"Not Found","status":404,"detail":"no collection"}`: true,
		// A FeatureCollection or a Feature that begins like one is none.
		`{"type":"FeatureCollection","code":"x","numberMatched":0}`:   false,
		`{"type":"Feature","code":"x","geometry":null}`:               false,
		`{"$schema":"x","type":"object","title":"t","properties":{}}`: false,
	} {
		if got := ogcapi.IsException([]byte(doc)); got != want {
			t.Errorf("%s: %v, want %v", doc, got, want)
		}
	}
}

// TestRestore: a link the server gave without the feed url's credentials
// gets them back; a link to another origin does not.
func TestRestore(t *testing.T) {
	t.Parallel()
	home := "https://user:pw@gis.example/api/collections/p?apikey=s3cret&f=json"
	link := "https://gis.example/api/collections/p/items?f=json&offset=20"
	if got := ogcapi.Restore(link, home); !strings.Contains(got, "apikey=s3cret") || !strings.Contains(got, "user:pw@") || !strings.Contains(got, "offset=20") {
		t.Errorf("Restore: %s", got)
	}
	other := "https://elsewhere.example/items?apikey=theirs"
	if ogcapi.Restore(other, home) != other {
		t.Error("a link to another origin was changed")
	}
}

// TestDiscoveryCached: a second poll of a collection reuses its discovery
// (no request for the collection document), and a failed first page drops
// it.
func TestDiscoveryCached(t *testing.T) {
	t.Parallel()
	s, base := fixture(t, 30, ogcapitest.None)
	c := ogcapi.NewClient(nil, nil, nil)
	layer := source.Layer{Kind: "ogcapi", URL: base + "/collections/parcels", PageSize: 10}
	for range 2 {
		l, _, err := c.Prepare(t.Context(), layer)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Fetch(t.Context(), l, 0, (&collect{}).handle); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.Requests("/collections/parcels"); n != 1 {
		t.Errorf("collection document requested %d times, want 1", n)
	}
	l, _, _ := c.Prepare(t.Context(), layer)
	l.Settings = ogcapi.Settings{ItemsURL: base + "/collections/gone/items"}
	if _, err := c.Fetch(t.Context(), l, 0, (&collect{}).handle); err == nil {
		t.Fatal("fetch of a missing items link: no error")
	}
	if _, _, err := c.Prepare(t.Context(), layer); err != nil {
		t.Fatal(err)
	}
	if n := s.Requests("/collections/parcels"); n != 2 {
		t.Errorf("collection document requested %d times after a failed items link, want 2", n)
	}
}

// TestContentCRSMissing: with a Part 2 crs asked for, a response without
// Content-Crs fails; without crs, a missing header is CRS84.
func TestContentCRSMissing(t *testing.T) {
	t.Parallel()
	if err := ogcapi.CheckContentCRS("", ogcapitest.EPSG3857); err == nil || !strings.Contains(err.Error(), "no Content-Crs header") {
		t.Errorf("crs asked, no header: %v", err)
	}
	if err := ogcapi.CheckContentCRS("", ""); err != nil {
		t.Errorf("no crs, no header: %v", err)
	}
	if err := ogcapi.CheckContentCRS("<http://www.opengis.net/def/crs/OGC/1.3/CRS84>", ""); err != nil {
		t.Errorf("CRS84 labelled: %v", err)
	}
	if err := ogcapi.CheckContentCRS("<https://www.opengis.net/def/crs/EPSG/0/3857>", ogcapitest.EPSG3857); err != nil {
		t.Errorf("https spelling: %v", err)
	}
}

// TestNotModified: a 304 to the first page of a layer that has validators
// is NotModified, with no page handed over; without validators a 304 is an
// error (it cannot answer a request that asked for nothing conditional).
func TestNotModified(t *testing.T) {
	t.Parallel()
	c := ogcapi.NewClient(&http.Client{Transport: bodyTransport{status: http.StatusNotModified, header: http.Header{}}}, nil, nil)
	layer := source.Layer{Kind: "ogcapi", URL: "http://127.0.0.1:1/collections/c", Settings: ogcapi.Settings{ItemsURL: "http://127.0.0.1:1/collections/c/items"},
		PageSize: 10, Validators: source.Validators{ETag: `"v1"`}}
	col := &collect{}
	stats, err := c.Fetch(t.Context(), layer, 0, col.handle)
	if err != nil || !stats.NotModified || stats.Validators.ETag != `"v1"` || len(col.pages) != 0 {
		t.Errorf("304 with validators: %v, %+v, %d pages", err, stats, len(col.pages))
	}
	layer.Validators = source.Validators{}
	if _, err := c.Fetch(t.Context(), layer, 0, col.handle); err == nil {
		t.Error("304 without validators: no error")
	}
}

// TestNextLinkToAnotherOrigin: a next link to another origin is refused
// unless the feed allows redirects to other origins.
func TestNextLinkToAnotherOrigin(t *testing.T) {
	t.Parallel()
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	body := `{"type":"FeatureCollection","features":[{"type":"Feature","id":"a","geometry":null,"properties":{}}],"links":[{"rel":"next","href":"` + other.URL + `/items?offset=1"}]}`
	c := ogcapi.NewClient(&http.Client{Transport: bodyTransport{status: 200, header: http.Header{}, body: []byte(body)}}, nil, nil)
	layer := source.Layer{Kind: "ogcapi", URL: "http://127.0.0.1:1/collections/c", Settings: ogcapi.Settings{ItemsURL: "http://127.0.0.1:1/collections/c/items"}, PageSize: 10}
	_, err := c.Fetch(t.Context(), layer, 0, (&collect{}).handle)
	if err == nil || !strings.Contains(err.Error(), "the link leads to another origin") {
		t.Errorf("next link to another origin: %v", err)
	}
}

// TestRetriedPageIsNoDuplicate: a page whose body is cut short is read
// again from its start by the retry; the ids the first attempt read are
// not taken for ids the page holds twice.
func TestRetriedPageIsNoDuplicate(t *testing.T) {
	t.Parallel()
	page := `{"type":"FeatureCollection","features":[` +
		`{"type":"Feature","id":"a","geometry":{"type":"Point","coordinates":[1,2]},"properties":{}},` +
		`{"type":"Feature","id":"b","geometry":{"type":"Point","coordinates":[1,2]},"properties":{}},` +
		`{"type":"Feature","id":"c","geometry":{"type":"Point","coordinates":[1,2]},"properties":{}}` +
		`],"numberMatched":3,"numberReturned":3}`
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/geo+json")
		if calls.Add(1) == 1 {
			// Two features, then the connection ends before the promised length.
			w.Header().Set("Content-Length", strconv.Itoa(len(page)))
			_, _ = io.WriteString(w, page[:strings.Index(page, `{"type":"Feature","id":"c"`)])
			return
		}
		_, _ = io.WriteString(w, page)
	}))
	t.Cleanup(srv.Close)
	p := breaker.DefaultPolicy()
	p.BackoffBase, p.BackoffMax, p.RateLimit = time.Millisecond, time.Millisecond, 0
	c := ogcapi.NewClient(srv.Client(), breaker.NewRegistry(breaker.Config{Policy: p}, nil), nil)
	layer := source.Layer{Kind: "ogcapi", URL: srv.URL + "/collections/c", Settings: ogcapi.Settings{ItemsURL: srv.URL + "/collections/c/items"}, PageSize: 10}
	col := &collect{}
	stats, err := c.Fetch(t.Context(), layer, 0, col.handle)
	if err != nil || col.total() != 3 || stats.NumberMatched != 3 || calls.Load() != 2 {
		t.Fatalf("fetch: %v; %d features, numberMatched %d, %d requests; want 3, 3 and a retry", err, col.total(), stats.NumberMatched, calls.Load())
	}
}

// TestErrorsSayOGCAPI: the errors of the layers below (an HTTP status, a
// body cut short, a body over the feed's limit) read "ogcapi:" in an OGC
// API feed's error, once, never another protocol's name, and keep their
// types.
func TestErrorsSayOGCAPI(t *testing.T) {
	t.Parallel()
	page := `{"type":"FeatureCollection","features":[{"type":"Feature","id":"a","geometry":{"type":"Point","coordinates":[1,2]},"properties":{}}],"numberMatched":1}`
	for _, c := range []struct {
		name   string
		status int
		body   string
		limit  int64
		want   string
		as     any
	}{
		{"status", http.StatusInternalServerError, "oops", 0, "): GET http://127.0.0.1:1/collections/c/items?limit=10: HTTP 500 Internal Server Error", new(*httpcall.HTTPStatusError)},
		{"limit", http.StatusOK, page, 40, "): limits.body_bytes exceeded (40 bytes)", new(*feature.LimitError)},
		{"cut short", http.StatusOK, page[:60], 0, "): body of page 0 from http://127.0.0.1:1/collections/c/items", new(*httpcall.BodyError)},
	} {
		tr := bodyTransport{status: c.status, header: http.Header{"Content-Type": {"application/geo+json"}}, body: []byte(c.body)}
		cl := ogcapi.NewClient(&http.Client{Transport: tr}, nil, nil)
		layer := source.Layer{Kind: "ogcapi", URL: "http://127.0.0.1:1/collections/c", Settings: ogcapi.Settings{ItemsURL: "http://127.0.0.1:1/collections/c/items"},
			PageSize: 10, Limits: feature.Limits{BodyBytes: c.limit}}
		_, err := cl.Fetch(t.Context(), layer, 0, (&collect{}).handle)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "wfs") ||
			!strings.HasPrefix(err.Error(), "ogcapi: page 0 (") || strings.Count(err.Error(), "ogcapi") != 1 {
			t.Errorf("%s: %v, want it to start with \"ogcapi: page 0 (\", name ogcapi once, contain %q and no other protocol's name", c.name, err, c.want)
		}
		if !errors.As(err, c.as) {
			t.Errorf("%s: %T is not a %T", c.name, err, c.as)
		}
	}
}
