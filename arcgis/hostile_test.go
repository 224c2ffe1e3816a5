package arcgis_test

import (
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
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/source"
)

// Every document around the features has its own bound, and the error
// names the document and the bound. The bombs are served gzip, and read no
// further than the bound (scripts or BenchmarkArcGISBombs in
// arcgis/interop measure the memory of the full-size ones).
func TestDocumentBombs(t *testing.T) {
	cases := []struct {
		name   string
		layer  func(*arcgistest.Layer)
		want   string
		target any
	}{
		{"a layer description with a 20 MiB name", func(l *arcgistest.Layer) { l.Faults.DescriptionBomb = 20 << 20 },
			"the layer description answer is larger than 16777216 bytes decompressed (the bound of a layer's description)", new(*arcgis.DocumentLimitError)},
		{"a count padded to 2 MiB", func(l *arcgistest.Layer) { l.Faults.CountBomb = 2 << 20 },
			"the count answer is larger than 1048576 bytes decompressed", new(*arcgis.DocumentLimitError)},
		{"statistics padded to 2 MiB", func(l *arcgistest.Layer) { l.Faults.IDsFail, l.Faults.StatisticsBomb = true, 2<<20 },
			"the statistics answer is larger than 1048576 bytes decompressed", new(*arcgis.DocumentLimitError)},
		// The case was 50 million ids (97 KB of gzip); 5 million
		// say the same, and the list is read no further than the count.
		{"an id list of 5 million ids for a count of 30", func(l *arcgistest.Layer) { l.Faults.IDListBomb = 5_000_000 },
			"the count is 30 but the id list holds more ids (reading stopped at id number 31", new(*source.IncompleteError)},
		{"an id list padded past its bound", func(l *arcgistest.Layer) { l.Faults.IDListPadding = 2 << 20 },
			"the id list answer is larger than 1049536 bytes decompressed (1048576 bytes and 32 for each of the 30 features counted)", new(*arcgis.DocumentLimitError)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			l := arcgistest.Squares(30)
			c.layer(l)
			f.srv.AddLayer("l", l)
			g, _, err := f.fetch(t, source.Layer{PageSize: 10})
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, c.target) {
				t.Fatalf("error %v\nwant %T with %q", err, c.target, c.want)
			}
			if g.pages != 0 {
				t.Errorf("%d pages handed over", g.pages)
			}
		})
	}
}

// A count larger than limits.poll_features is refused before the id list:
// the count bounds the id list.
func TestCountBeyondPollFeatures(t *testing.T) {
	f := newFixture(t)
	f.srv.AddLayer("l", arcgistest.Squares(30))
	_, _, err := f.fetch(t, source.Layer{Limits: feature.Limits{PollFeatures: 20}})
	var le *feature.LimitError
	if !errors.As(err, &le) || le.Name != "poll_features" || !strings.Contains(err.Error(), "is 30 features") {
		t.Fatalf("error %v, want limits.poll_features naming the count", err)
	}
	if slices.Contains(f.srv.Requests("l"), "ids") {
		t.Errorf("the id list was read: %v", f.srv.Requests("l"))
	}
}

// An objectIds answer streams to the PageFunc: its first feature arrives
// while the server still holds the rest of the answer (which it sends
// only once the PageFunc has that feature). A page held whole would wait
// for the answer's end, which never comes.
func TestAnswerStreamsToThePage(t *testing.T) {
	f := newFixture(t)
	l := arcgistest.Squares(30)
	hold := make(chan struct{})
	// Padded past the 4 KB the client sniffs before it decodes.
	l.Faults.Hold, l.Faults.Padding = hold, 8<<10
	f.srv.AddLayer("l", l)
	var n int
	// The ceiling only bounds a hang (the old code's).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stats, err := f.client.Fetch(ctx, source.Layer{Kind: "arcgis", URL: arcgistest.URL(f.base, "l"), PageSize: 30},
		0, func(_ context.Context, _ source.Page, fr feature.FeatureReader) error {
			for {
				_, err := fr.Next()
				if err == io.EOF {
					return nil
				}
				if err != nil {
					return err
				}
				if n++; n == 1 {
					close(hold)
				}
			}
		})
	if err != nil || n != 30 || stats.Features != 30 {
		t.Fatalf("%d features, %+v, %v", n, stats, err)
	}
}

// An error object is the server's wherever it sits in the answer: after
// the objectIdFieldName or after the features, it is retried like one
// that comes first (the layer loads, nothing twice), and when every
// answer is one, it is the origin's failure (halved down to one id when
// no feature came; after the features, every id came and the server
// still failed), counted by the breaker.
func TestErrorObjectAnywhereIsTheServers(t *testing.T) {
	newClient := func(f *fixture) *breaker.Registry {
		p := breaker.DefaultPolicy()
		p.BackoffBase, p.BackoffMax, p.RateLimit, p.RetryBudgetMin = time.Millisecond, 5*time.Millisecond, 0, 100
		p.ConsecutiveFailures = 1000
		reg := breaker.NewRegistry(breaker.Config{MaxInFlight: 4, Policy: p}, nil)
		f.client = arcgis.NewClient(nil, reg, nil)
		return reg
	}
	for _, c := range []struct {
		name  string
		every func(n int) arcgistest.Faults
	}{
		{"second member", func(n int) arcgistest.Faults { return arcgistest.Faults{ErrorSecondEvery: n} }},
		{"after the features", func(n int) arcgistest.Faults { return arcgistest.Faults{ErrorAfterFeaturesEvery: n} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			l := arcgistest.Squares(64)
			l.Faults = c.every(2)
			f.srv.AddLayer("l", l)
			newClient(f)
			g, _, err := f.fetch(t, source.Layer{PageSize: 16})
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(g.ids)
			if len(g.ids) != 64 || len(slices.Compact(g.ids)) != 64 {
				t.Fatalf("%d features (%d distinct)", len(g.ids), len(slices.Compact(g.ids)))
			}

			f = newFixture(t)
			l = arcgistest.Squares(8)
			l.Faults = c.every(1)
			f.srv.AddLayer("l", l)
			reg := newClient(f)
			_, _, err = f.fetch(t, source.Layer{PageSize: 8})
			var re *breaker.RetryError
			if !errors.As(err, &re) || re.Outcome != breaker.Failure || !strings.Contains(err.Error(), "server answered error 500") {
				t.Fatalf("every answer an error: %v, want the origin's failure after retries", err)
			}
			if s := reg.Snapshot(); len(s) != 1 || s[0].Counts.Failures == 0 {
				t.Errorf("the breaker counted no failure: %+v", s)
			}
		})
	}
}

// An id list whose error object is its second member is the server's
// error, named, and the windows fallback reads the layer.
func TestIDListErrorSecondFallsBack(t *testing.T) {
	f := newFixture(t)
	l := arcgistest.Squares(30)
	l.Faults.IDsErrorSecond = true
	f.srv.AddLayer("l", l)
	g, stats, err := f.fetch(t, source.Layer{PageSize: 10})
	if err != nil || len(g.ids) != 30 {
		t.Fatalf("%d features, %v", len(g.ids), err)
	}
	if len(stats.Warnings) == 0 || !strings.Contains(stats.Warnings[0], "server answered error 500: Error performing query operation") ||
		!slices.Contains(f.srv.Requests("l"), "window") {
		t.Errorf("warnings %v, requests %v", stats.Warnings, f.srv.Requests("l"))
	}
}

// A wkid the store does not know is a named CRS error before any page.
func TestUnknownSRIDBeforeAnyPage(t *testing.T) {
	for _, wkid := range []int{999999, 12345} {
		f := newFixture(t)
		l := arcgistest.Squares(30)
		l.WKID = wkid
		f.srv.AddLayer("l", l)
		var asked []int
		known := func(_ context.Context, srid int) (bool, error) {
			asked = append(asked, srid)
			return srid == 2264, nil
		}
		g, _, err := f.fetch(t, source.Layer{KnownSRID: known})
		var ce *arcgis.CRSError
		if !errors.As(err, &ce) || ce.SRID != wkid || !strings.Contains(err.Error(), "PostGIS does not know") {
			t.Fatalf("wkid %d: %v, want a CRSError", wkid, err)
		}
		if g.pages != 0 || slices.Contains(f.srv.Requests("l"), "ids") || !slices.Equal(asked, []int{wkid}) {
			t.Errorf("wkid %d: %d pages, requests %v, asked %v", wkid, g.pages, f.srv.Requests("l"), asked)
		}
	}
	// A known one loads, asked once.
	f := newFixture(t)
	f.srv.AddLayer("l", arcgistest.Squares(30))
	asked := 0
	g, _, err := f.fetch(t, source.Layer{PageSize: 10, KnownSRID: func(context.Context, int) (bool, error) { asked++; return true, nil }})
	if err != nil || len(g.ids) != 30 || asked != 1 {
		t.Fatalf("known srid: %d features, asked %d times, %v", len(g.ids), asked, err)
	}
}

// The offset fallback stops once it read more than the count and a page,
// and says so, against a server that says exceededTransferLimit forever
// with new ids.
func TestOffsetsStopPastTheCount(t *testing.T) {
	f := newFixture(t)
	l := arcgistest.Squares(30)
	l.NoStatistics = true
	l.Faults.IDsFail, l.Faults.EndlessOffsets = true, true
	f.srv.AddLayer("l", l)
	// The ceiling only bounds a hang (the old code ran to the deadline).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	layer := source.Layer{Kind: "arcgis", URL: arcgistest.URL(f.base, "l"), PageSize: 10}
	_, err := f.client.Fetch(ctx, layer, 0, drain)
	var ie *source.IncompleteError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "read 41 distinct features, more than the count 30 and a page (10)") {
		t.Fatalf("error %v", err)
	}
	if n := countOffsets(f.srv.Requests("l")); n != 5 {
		t.Errorf("%d offset requests, want 5: %v", n, f.srv.Requests("l"))
	}
}

func countOffsets(reqs []string) int {
	n := 0
	for _, r := range reqs {
		if strings.HasPrefix(r, "offset:") {
			n++
		}
	}
	return n
}

func drain(_ context.Context, _ source.Page, fr feature.FeatureReader) error {
	for {
		if _, err := fr.Next(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// A feature id (id_property on a field that is not unique) twice in one
// objectIds answer fails the dump, as it does across pages.
func TestDuplicateIDPropertyInOneBatch(t *testing.T) {
	f := newFixture(t)
	l := arcgistest.Squares(30)
	l.Features[19].Attributes["NAME"] = "parcel 10"
	f.srv.AddLayer("l", l)
	g, _, err := f.fetch(t, source.Layer{IDProperty: "NAME"})
	var ie *source.IncompleteError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), `feature id "parcel 10" (NAME) is that of object ids 10 and 20 of one page (batch of objectIds 1…30)`) {
		t.Fatalf("error %v (%d features handed over)", err, len(g.ids))
	}
}

// A batch is named by its object ids, never "page 0", and its errors say
// arcgis, once.
func TestBatchErrorsNameTheBatch(t *testing.T) {
	f := newFixture(t)
	l := arcgistest.Squares(30)
	l.Features[14].Geometry = map[string]any{"curveRings": []any{}}
	f.srv.AddLayer("l", l)
	_, _, err := f.fetch(t, source.Layer{PageSize: 10})
	if err == nil || !strings.HasPrefix(err.Error(), "arcgis: ") || strings.Count(err.Error(), "arcgis: ") != 1 ||
		!strings.Contains(err.Error(), "the answer to the batch of objectIds 11…20") || strings.Contains(err.Error(), "page 0") {
		t.Fatalf("error %v", err)
	}
}

// In the small documents too (here the count), an error object is judged
// by its code wherever it sits: the same body with the error first or
// second is the same error, the feed's or the origin's alike.
func TestErrorMemberInSmallDocuments(t *testing.T) {
	cases := []struct {
		body       string
		want       string
		serverSide bool
	}{
		{`{"error":{"code":498,"message":"Invalid Token"},"count":30}`, "the feed's token is invalid or expired", false},
		{`{"count":30,"error":{"code":498,"message":"Invalid Token"}}`, "the feed's token is invalid or expired", false},
		{`{"error":{"code":500,"message":"boom"},"count":30}`, "server answered error 500: boom", true},
		{`{"count":30,"error":{"code":500,"message":"boom"}}`, "server answered error 500: boom", true},
	}
	for _, c := range cases {
		srv := arcgistest.New()
		srv.AddLayer("l", arcgistest.Squares(30))
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ParseForm() == nil && r.Form.Get("returnCountOnly") == "true" {
				_, _ = io.WriteString(w, c.body)
				return
			}
			srv.ServeHTTP(w, r)
		}))
		client := arcgis.NewClient(ts.Client(), nil, nil)
		_, err := client.Fetch(context.Background(), source.Layer{Kind: "arcgis", URL: arcgistest.URL(ts.URL, "l")}, 0, drain)
		ts.Close()
		var se *arcgis.ServerError
		if !errors.As(err, &se) || se.ServerSide != c.serverSide || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a ServerError (server side %v) with %q", c.body, err, c.serverSide, c.want)
		}
	}
}
