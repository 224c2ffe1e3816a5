package socrata_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/socrata"
	"github.com/ingestd/ingestd/socrata/socratatest"
	"github.com/ingestd/ingestd/source"
)

// offset matches the page requests at $offset o.
func offset(o int) func(r *http.Request) bool {
	return func(r *http.Request) bool {
		q := r.URL.Query()
		return strings.HasPrefix(q.Get("$select"), ":id, ") && q.Get("$offset") == strconv.Itoa(o)
	}
}

// A row deleted while the dataset is read shifts the pages after it: the
// next page starts one row later, and the row that moved onto the page
// already read is never read. The fetch fails naming that row and the
// update that moved rowsUpdatedAt; nothing is proven, so nothing is to
// be applied.
func TestConcurrentDeleteNamesTheSkippedRow(t *testing.T) {
	t.Parallel()
	s, ts := portal(t, 2500)
	skipped := s.Rows(dsID)[1000].ID // moves onto page 0 when a row of page 0 goes
	s.AddFault(&socratatest.Fault{Match: offset(1000), Times: 1, Before: func(s *socratatest.Server) { s.Delete(dsID, row(10).ID) }})
	_, _, err := fetch(t, layer(ts, 1000), nil)
	var ie *source.IncompleteError
	if !errors.As(err, &ie) {
		t.Fatalf("err %v; want an *source.IncompleteError", err)
	}
	for _, want := range []string{"updated during the read", "read 2499 rows of the 2500", strconv.Quote(skipped)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err %q lacks %q", err, want)
		}
	}
}

// A page that drops a row (no edit: the portal lost it) fails the fetch
// naming the missing id, listed by $select=:id.
func TestDroppedRowIsNamed(t *testing.T) {
	t.Parallel()
	s, ts := portal(t, 2500)
	dropped := s.Rows(dsID)[2000].ID
	s.AddFault(&socratatest.Fault{Match: offset(2000), DropRow: true})
	_, _, err := fetch(t, layer(ts, 1000), nil)
	var ie *source.IncompleteError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "not read: :id "+strconv.Quote(dropped)) || strings.Contains(err.Error(), "updated during") {
		t.Fatalf("err %v; want an *source.IncompleteError naming %q and no update", err, dropped)
	}
}

// A portal that answers an offset past the end with rows (the last page
// again) fails the fetch on the first id it repeats, naming it and both
// pages; a duplicate on one page likewise.
func TestOffsetPastTheEnd(t *testing.T) {
	t.Parallel()
	s, ts := portal(t, 2000)
	s.AddFault(&socratatest.Fault{Match: offset(2000), PastEnd: true})
	_, _, err := fetch(t, layer(ts, 1000), nil)
	first := s.Rows(dsID)[1000].ID
	var ie *source.IncompleteError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), strconv.Quote(first)+" came on page 1 and again on page 2") {
		t.Fatalf("err %v; want an *source.IncompleteError naming %q on pages 1 and 2", err, first)
	}
}

// Without an app token the portal throttles: its 429 and Retry-After
// pause the portal's breaker, and the request is sent again after a wait
// of at least what the portal asked (the registry's waits are recorded,
// not spent); the read completes. With the token, no request is
// throttled, and the token travels in X-App-Token, never in a URL.
func TestThrottledWithoutToken(t *testing.T) {
	t.Parallel()
	s, ts := portal(t, 2500)
	s.FreeRequests, s.RetryAfter = 3, 7
	var mu sync.Mutex
	var waits []time.Duration
	p := breaker.DefaultPolicy()
	p.RateLimit = 0
	p.BackoffBase, p.BackoffMax = time.Millisecond, 10*time.Millisecond
	reg := breaker.NewRegistry(breaker.Config{Policy: p, Sleep: func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return ctx.Err()
	}}, nil)
	got, _, err := fetch(t, layer(ts, 1000), reg)
	if err != nil || len(got.features) != 2500 {
		t.Fatalf("throttled read: %v, %d features; want it whole after the 429", err, len(got.features))
	}
	reqs := s.Requests()
	var throttled int
	for i, r := range reqs {
		if r.Status != http.StatusTooManyRequests {
			continue
		}
		throttled++
		if i+1 >= len(reqs) {
			t.Fatal("no request after the 429")
		}
		if next := reqs[i+1]; next.Path != r.Path || next.Query != r.Query {
			t.Errorf("after the 429 at %s: %+v; want the same request again", r.At, next)
		}
	}
	if throttled == 0 {
		t.Fatal("the portal throttled nothing: the test proves nothing")
	}
	mu.Lock()
	paused := slices.ContainsFunc(waits, func(d time.Duration) bool { return d >= 7*time.Second })
	mu.Unlock()
	if !paused {
		t.Errorf("waits %v: none as long as the portal's Retry-After (7s)", waits)
	}

	s2, ts2 := portal(t, 2500)
	s2.FreeRequests, s2.AppToken = 1, "zqAppTok3n"
	l := layer(ts2, 1000)
	l.Headers = map[string]string{socrata.TokenHeader: "zqAppTok3n"}
	if _, _, err := fetch(t, l, nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range s2.Requests() {
		if r.Status != http.StatusOK || r.Token != "zqAppTok3n" || strings.Contains(r.Query, "zqAppTok3n") {
			t.Errorf("request with the token: %+v; want 200, the token in X-App-Token only", r)
		}
	}
}
