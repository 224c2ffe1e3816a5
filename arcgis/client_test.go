package arcgis_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd/arcgis"
	"github.com/ingestd/ingestd/arcgis/arcgistest"
	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/encoding/esrijson"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/source"
	"github.com/twpayne/go-geom"
)

type fixture struct {
	srv    *arcgistest.Server
	base   string
	client *arcgis.Client
}

func newFixture(t *testing.T) *fixture {
	srv := arcgistest.New()
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return &fixture{srv: srv, base: ts.URL, client: arcgis.NewClient(ts.Client(), nil, nil)}
}

type got struct {
	ids   []string
	geoms []geom.T
	pages int
}

func (f *fixture) fetch(t *testing.T, layer source.Layer) (got, source.FetchStats, error) {
	t.Helper()
	var g got
	if layer.URL == "" {
		layer.URL = arcgistest.URL(f.base, "l")
	}
	layer.Kind = "arcgis"
	stats, err := f.client.Fetch(context.Background(), layer, 0, func(_ context.Context, _ source.Page, fr feature.FeatureReader) error {
		g.pages++
		for {
			ft, err := fr.Next()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			g.ids = append(g.ids, ft.ID)
			g.geoms = append(g.geoms, ft.Geometry)
		}
	})
	return g, stats, err
}

func TestCompleteDumpByIDs(t *testing.T) {
	f := newFixture(t)
	f.srv.AddLayer("l", arcgistest.Squares(250))
	g, stats, err := f.fetch(t, source.Layer{PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.ids) != 250 || g.pages != 3 || stats.NumberMatched != 250 || stats.Features != 250 {
		t.Fatalf("got %d features in %d pages, stats %+v", len(g.ids), g.pages, stats)
	}
	seen := map[string]bool{}
	for _, id := range g.ids {
		if seen[id] {
			t.Fatalf("id %s twice", id)
		}
		seen[id] = true
	}
	// Feature 36 (index 35): a hole (35%5==0) and rings reversed (35%7==0).
	p, ok := g.geoms[35].(*geom.Polygon)
	if !ok || p.NumLinearRings() != 2 || p.SRID() != 2264 {
		t.Errorf("feature 36: %#v", g.geoms[35])
	}
	if stats.Validators.Version == "" {
		t.Error("a complete fetch sets no Validators.Version")
	}
	reqs := f.srv.Requests("l")
	if !slices.Contains(reqs, "ids") || !slices.Contains(reqs, "objectIds:100") || slices.Contains(reqs, "window") {
		t.Errorf("requests %v", reqs)
	}
}

func TestCheapRefresh(t *testing.T) {
	f := newFixture(t)
	f.srv.AddLayer("l", arcgistest.Squares(30))
	_, stats, err := f.fetch(t, source.Layer{})
	if err != nil {
		t.Fatal(err)
	}
	before := len(f.srv.Requests("l"))
	g, stats2, err := f.fetch(t, source.Layer{Validators: stats.Validators})
	if err != nil {
		t.Fatal(err)
	}
	if !stats2.NotModified || g.pages != 0 || stats2.Validators != stats.Validators {
		t.Fatalf("unchanged layer: %+v, %d pages", stats2, g.pages)
	}
	if reqs := f.srv.Requests("l")[before:]; !slices.Equal(reqs, []string{"probe", "count"}) {
		t.Errorf("an unchanged layer cost %v, want probe and count only", reqs)
	}
	// An edit (same count) is not unchanged.
	f.srv.Edit("l", func(l *arcgistest.Layer) { l.LastEditDate += 5 })
	_, stats3, err := f.fetch(t, source.Layer{Validators: stats.Validators})
	if err != nil || stats3.NotModified || stats3.Features != 30 {
		t.Fatalf("edited layer: %+v, %v", stats3, err)
	}
	// A field retyped with lastEditDate and count unchanged (a server that
	// does not count a schema change as an edit) is not unchanged either:
	// the fields type the feed's view.
	_, stats4, err := f.fetch(t, source.Layer{Validators: stats3.Validators})
	if err != nil || !stats4.NotModified {
		t.Fatalf("unchanged again: %+v, %v", stats4, err)
	}
	f.srv.Edit("l", func(l *arcgistest.Layer) { l.Fields[1].Type = "esriFieldTypeGUID" })
	_, stats5, err := f.fetch(t, source.Layer{Validators: stats3.Validators})
	if err != nil || stats5.NotModified || stats5.Features != 30 || stats5.Validators == stats3.Validators {
		t.Fatalf("retyped field: %+v, %v", stats5, err)
	}
}

func TestServerCapsBelowMaxRecordCountAndLies(t *testing.T) {
	f := newFixture(t)
	l := arcgistest.Squares(95)
	l.MaxRecordCount = 50
	l.Faults = arcgistest.Faults{Cap: 20, LieExceeded: true}
	f.srv.AddLayer("l", l)
	g, stats, err := f.fetch(t, source.Layer{PageSize: 500})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.ids) != 95 {
		t.Fatalf("%d features", len(g.ids))
	}
	if len(stats.Warnings) == 0 || !strings.Contains(stats.Warnings[0], "caps below its maxRecordCount 50") {
		t.Errorf("warnings %v", stats.Warnings)
	}
}

func TestErrorBodiesHalveTheBatch(t *testing.T) {
	f := newFixture(t)
	l := arcgistest.Squares(64)
	l.Faults = arcgistest.Faults{ErrorEvery: 2}
	f.srv.AddLayer("l", l)
	// Through a breaker: the retry of each call gets through.
	p := breaker.DefaultPolicy()
	p.BackoffBase, p.BackoffMax, p.RateLimit, p.RetryBudgetMin = time.Millisecond, 5*time.Millisecond, 0, 100
	p.ConsecutiveFailures = 1000
	f.client = arcgis.NewClient(nil, breaker.NewRegistry(breaker.Config{MaxInFlight: 4, Policy: p}, nil), nil)
	g, _, err := f.fetch(t, source.Layer{PageSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.ids) != 64 {
		t.Fatalf("%d features", len(g.ids))
	}
}

func TestBrokenFeatureIsNamed(t *testing.T) {
	f := newFixture(t)
	l := arcgistest.Squares(40)
	l.Faults = arcgistest.Faults{BrokenOID: 17}
	f.srv.AddLayer("l", l)
	_, _, err := f.fetch(t, source.Layer{PageSize: 16})
	if err == nil || !strings.Contains(err.Error(), "object id 17 cannot be fetched, even alone") {
		t.Fatalf("error %v", err)
	}
	for _, size := range []string{"objectIds:16", "objectIds:8", "objectIds:4", "objectIds:2", "objectIds:1"} {
		if countPrefix(f.srv.Requests("l"), size) == 0 {
			t.Errorf("no request %s while halving: %v", size, f.srv.Requests("l"))
		}
	}
}

func countPrefix(list []string, p string) int {
	n := 0
	for _, s := range list {
		if s == p {
			n++
		}
	}
	return n
}

func TestIDListFailsFallsBackToWindows(t *testing.T) {
	f := newFixture(t)
	l := arcgistest.Squares(230)
	l.MaxRecordCount = 50
	l.Faults = arcgistest.Faults{IDsFail: true}
	// Sparse ids: windows must widen and still find every feature.
	for i := range l.Features {
		l.Features[i].OID = int64(i*i + 3)
	}
	f.srv.AddLayer("l", l)
	g, stats, err := f.fetch(t, source.Layer{})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.ids) != 230 || !slices.Contains(f.srv.Requests("l"), "stats") || !slices.Contains(f.srv.Requests("l"), "window") {
		t.Fatalf("%d features, requests %v", len(g.ids), f.srv.Requests("l"))
	}
	if len(stats.Warnings) == 0 || !strings.Contains(stats.Warnings[0], "id list failed") {
		t.Errorf("warnings %v", stats.Warnings)
	}
}

func TestNoStatisticsFallsBackToOffsets(t *testing.T) {
	f := newFixture(t)
	l := arcgistest.Squares(130)
	l.MaxRecordCount = 50
	l.NoStatistics = true
	l.Faults = arcgistest.Faults{IDsFail: true, Cap: 30, LieExceeded: true}
	f.srv.AddLayer("l", l)
	g, _, err := f.fetch(t, source.Layer{})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.ids) != 130 {
		t.Fatalf("%d features, requests %v", len(g.ids), f.srv.Requests("l"))
	}
	// Without pagination there is no way left: a clear failure.
	l2 := arcgistest.Squares(10)
	l2.NoStatistics, l2.NoPagination = true, true
	l2.Faults = arcgistest.Faults{IDsFail: true}
	f.srv.AddLayer("l", l2)
	if _, _, err := f.fetch(t, source.Layer{}); err == nil || !strings.Contains(err.Error(), "Pagination is not supported") {
		t.Fatalf("error %v", err)
	}
}

func TestIncompleteDumps(t *testing.T) {
	cases := []struct {
		name   string
		faults arcgistest.Faults
		want   string
	}{
		{"edited during the dump", arcgistest.Faults{EditAfter: 1}, "edited during the dump"},
		{"a listed id never comes", arcgistest.Faults{DropOID: 7}, "object id 7 is in the id list but the server does not return it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			l := arcgistest.Squares(40)
			l.Faults = c.faults
			f.srv.AddLayer("l", l)
			_, _, err := f.fetch(t, source.Layer{PageSize: 10})
			var ie *source.IncompleteError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want an source.IncompleteError with %q", err, c.want)
			}
		})
	}
}

func TestFeedErrorsAreNamed(t *testing.T) {
	const secret = "s3cr3t-token-value"
	cases := []struct {
		name    string
		faults  arcgistest.Faults
		headers map[string]string
		want    string
	}{
		{"token required", arcgistest.Faults{Token: secret}, nil, "the layer needs a token"},
		{"token invalid", arcgistest.Faults{Token: secret}, map[string]string{"X-Esri-Authorization": "Bearer wrong-" + secret}, "token is invalid or expired"},
		{"bad query", arcgistest.Faults{BadQuery: true}, nil, "the query is invalid for this layer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			l := arcgistest.Squares(5)
			l.Faults = c.faults
			f.srv.AddLayer("l", l)
			_, _, err := f.fetch(t, source.Layer{Headers: c.headers})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("error shows the token: %v", err)
			}
		})
	}
	f := newFixture(t)
	l := arcgistest.Squares(5)
	l.Faults.Token = secret
	f.srv.AddLayer("l", l)
	if g, _, err := f.fetch(t, source.Layer{Headers: map[string]string{"X-Esri-Authorization": "Bearer " + secret}}); err != nil || len(g.ids) != 5 {
		t.Fatalf("with the token: %v", err)
	}
}

func TestLayersRefused(t *testing.T) {
	f := newFixture(t)
	f.srv.AddLayer("l", &arcgistest.Layer{GeometryType: esrijson.TypeMultiPatch, Fields: []esrijson.Field{{Name: "OBJECTID", Type: esrijson.FieldOID}}})
	if _, _, err := f.fetch(t, source.Layer{}); !errors.Is(err, arcgis.ErrNotALayer) || !strings.Contains(err.Error(), "multipatch") {
		t.Errorf("multipatch: %v", err)
	}
	curves := arcgistest.Squares(3)
	curves.Features[1].Geometry = map[string]any{"curveRings": []any{[]any{[]float64{0, 0}, map[string]any{"a": []any{[]float64{0, 0}, []float64{1, 1}, 0, 1}}}}}
	f.srv.AddLayer("l", curves)
	if _, _, err := f.fetch(t, source.Layer{}); !errors.Is(err, esrijson.ErrCurve) || !strings.Contains(err.Error(), "returnTrueCurves=false") {
		t.Errorf("curves: %v", err)
	}
}

// Classify: the breaker counts the server's failures only.
func TestClassify(t *testing.T) {
	cases := []struct {
		status int
		body   string
		want   breaker.Outcome
	}{
		{200, `{"error":{"code":500,"message":"Error performing query operation"}}`, breaker.Failure},
		{200, `{"error":{"code":503}}`, breaker.Failure},
		{200, `{"error":{"code":504,"message":"timeout"}}`, breaker.Failure},
		{200, `{"error":{"code":400,"message":"Invalid query"}}`, breaker.Success},
		{200, `{"error":{"code":404,"message":"Invalid URL"}}`, breaker.Success},
		{200, `{"error":{"code":498,"message":"Invalid token"}}`, breaker.Success},
		{200, `{"error":{"code":"499","message":"Token required"}}`, breaker.Success},
		{498, `nope`, breaker.Success},
		{200, `<html><title>Login</title></html>`, breaker.Failure},
		{200, ``, breaker.Failure},
		{502, `<html>bad gateway</html>`, breaker.Failure},
		{404, `not found`, breaker.Success},
		{414, ``, breaker.Success},
		{429, ``, breaker.Throttled},
		{200, `null`, breaker.Success},
	}
	for _, c := range cases {
		resp := &http.Response{StatusCode: c.status, Header: http.Header{}}
		res := arcgis.Classify(resp, bufio.NewReader(strings.NewReader(c.body)), "http://x/", "probe", time.Now())
		if res == nil || res.Outcome != c.want || res.Err == nil {
			t.Errorf("%d %s: %+v, want %s", c.status, c.body, res, c.want)
		}
	}
	if res := arcgis.Classify(&http.Response{StatusCode: 200}, bufio.NewReader(strings.NewReader(`{"features":[]}`)), "u", "q", time.Now()); res != nil {
		t.Errorf("data classified as %+v", res)
	}
}

// A resumed fetch dumps again from the first page (restaging replaces the
// parked pages), and refuses a layer that now fills fewer pages.
func TestResumeStartsOver(t *testing.T) {
	f := newFixture(t)
	f.srv.AddLayer("l", arcgistest.Squares(50))
	var pages []int
	handle := func(_ context.Context, p source.Page, fr feature.FeatureReader) error {
		pages = append(pages, p.Index)
		for {
			if _, err := fr.Next(); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
		}
	}
	layer := source.Layer{Kind: "arcgis", URL: arcgistest.URL(f.base, "l"), PageSize: 10}
	stats, err := f.client.Fetch(context.Background(), layer, 3, handle)
	if err != nil || !slices.Equal(pages, []int{0, 1, 2, 3, 4}) || stats.Pages != 2 {
		t.Fatalf("resume at 3: pages %v, stats %+v, %v", pages, stats, err)
	}
	_, err = f.client.Fetch(context.Background(), layer, 7, handle)
	var ie *source.IncompleteError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "staged 7 pages but the layer now fills 5") {
		t.Fatalf("resume past the end: %v", err)
	}
}

// An id list that times out (the attempt's own timeout) falls back to
// object-id windows, which are fast. The id list never answers, so it times
// out whatever the machine's speed; the request timeout (every request's)
// is a ceiling on the other, small loopback answers, which the test waits
// out once, for the id list.
func TestIDListTimeoutFallsBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	l := arcgistest.Squares(60)
	l.Faults.IDsDelay = time.Hour // until the request is cancelled
	f.srv.AddLayer("l", l)
	g, stats, err := f.fetch(t, source.Layer{RequestTimeout: 5 * time.Second, PageSize: 25})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.ids) != 60 || len(stats.Warnings) == 0 || !strings.Contains(stats.Warnings[0], "timed out") {
		t.Fatalf("%d features, warnings %v", len(g.ids), stats.Warnings)
	}
}
