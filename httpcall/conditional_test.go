package httpcall

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/ingestd/ingestd/breaker"
)

// TestNotModified: a 304 to a conditional request ends the call as the
// origin's success without calling the AttemptFunc, and Call says
// ErrNotModified; the validators go out as If-None-Match and
// If-Modified-Since. A 304 to a request that was not conditional is left
// to the AttemptFunc, like any other status.
func TestNotModified(t *testing.T) {
	t.Parallel()
	var inm, ims string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inm, ims = r.Header.Get("If-None-Match"), r.Header.Get("If-Modified-Since")
		w.WriteHeader(http.StatusNotModified)
	}))
	t.Cleanup(ts.Close)
	u, _ := url.Parse(ts.URL + "/doc.geojson")
	c := New(ts.Client(), nil, nil)

	called := false
	fn := func(a *Attempt) breaker.Result {
		called = true
		return breaker.Result{Outcome: breaker.Success}
	}
	req := Request{URL: u, Home: ts.URL, IfNoneMatch: `W/"abc"`, IfModifiedSince: "Tue, 01 Dec 2026 10:00:00 GMT"}
	if err := c.Call(t.Context(), req, fn); !errors.Is(err, ErrNotModified) || called {
		t.Errorf("conditional 304: err %v, AttemptFunc called %v; want ErrNotModified, not called", err, called)
	}
	if inm != `W/"abc"` || ims != "Tue, 01 Dec 2026 10:00:00 GMT" {
		t.Errorf("sent If-None-Match %q, If-Modified-Since %q", inm, ims)
	}
	if r := c.Attempt(t.Context(), req, fn); r.Outcome != breaker.Success || !errors.Is(r.Err, ErrNotModified) {
		t.Errorf("conditional 304 attempt: %+v; want the origin's success with ErrNotModified", r)
	}

	called = false
	if err := c.Call(t.Context(), Request{URL: u, Home: ts.URL}, fn); err != nil || !called || inm != "" || ims != "" {
		t.Errorf("unconditional 304: err %v, AttemptFunc called %v, sent %q %q; want it handed to the AttemptFunc, no validators sent", err, called, inm, ims)
	}
}
