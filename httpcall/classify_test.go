package httpcall

import (
	"bufio"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/breaker"
)

// TestNotDataVerdict: a 2xx body that is not data is the origin's failure,
// its error found by errors.Is through the *BodyError whichever kind
// judged it, and its text names what the kind expected.
func TestNotDataVerdict(t *testing.T) {
	t.Parallel()
	const x Expected = "a GeoJSON document"
	cases := []struct {
		body     string
		sentinel error
		text     string
	}{
		{"<html><head><title>502 Bad Gateway</title></head></html>", ErrHTMLBody, `HTML page instead of a GeoJSON document (title "502 Bad Gateway")`},
		{" \n ", ErrEmptyBody, "empty response body instead of a GeoJSON document"},
		{"Service Unavailable", ErrUnrecognizedBody, "unrecognized response body instead of a GeoJSON document"},
	}
	for _, c := range cases {
		br := bufio.NewReader(strings.NewReader(c.body))
		s, rerr := Sniff(br)
		r := x.NotDataVerdict(&http.Response{StatusCode: 200}, br, s.Kind, rerr, "http://example.test/x")
		if r.Outcome != breaker.Failure {
			t.Errorf("%q: outcome %v, want Failure", c.body, r.Outcome)
		}
		var be *BodyError
		if !errors.Is(r.Err, c.sentinel) || !errors.As(r.Err, &be) {
			t.Errorf("%q: err %v, want a *BodyError wrapping %v", c.body, r.Err, c.sentinel)
		}
		if !strings.HasSuffix(r.Err.Error(), c.text) {
			t.Errorf("%q: err %q, want it to end %q", c.body, r.Err, c.text)
		}
	}
	if got := Expected("").Empty().Error(); got != "empty response body instead of data" {
		t.Errorf("no words: %q, want data", got)
	}
}
