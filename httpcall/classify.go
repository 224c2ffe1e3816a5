package httpcall

import (
	"bufio"
	"fmt"
	"net/http"
	"time"

	"github.com/ingestd/ingestd/breaker"
)

// The helpers below are the parts of a protocol's response classification
// that do not depend on the protocol (see wfs.ClassifyResponse for the
// rule): a 429, a status whose body is no error document of the protocol,
// and a 2xx body that is not data. What each protocol keeps is its own
// error document (an OGC exception report, an OGC API exception, an ArcGIS
// error object) and what its data may look like.

// Throttled is the verdict on a 429 (Throttled, with the Retry-After
// header read at now), or nil for any other status.
func Throttled(resp *http.Response, redacted string, now time.Time) *breaker.Result {
	if resp.StatusCode != http.StatusTooManyRequests {
		return nil
	}
	ra := ParseRetryAfter(resp.Header.Get("Retry-After"), now)
	return &breaker.Result{Outcome: breaker.Throttled, RetryAfter: ra,
		Err: &HTTPStatusError{Status: resp.StatusCode, URL: redacted, RetryAfter: ra}}
}

// StatusVerdict is the verdict on a status that is not 2xx and whose body
// is not the protocol's error document: a 5xx is the origin's failure,
// anything else (4xx, an unfollowed 3xx, 1xx) the feed's. It is nil for a
// 2xx status.
func StatusVerdict(status int, redacted string) *breaker.Result {
	if status >= 200 && status <= 299 {
		return nil
	}
	return Judged(&HTTPStatusError{Status: status, URL: redacted}, status >= 500)
}

// Judged is the verdict on an error already judged as the origin's
// (serverSide: a Failure) or the feed's (a Success: the server answered),
// such as a protocol's error document.
func Judged(err error, serverSide bool) *breaker.Result {
	if serverSide {
		return &breaker.Result{Outcome: breaker.Failure, Err: err}
	}
	return &breaker.Result{Outcome: breaker.Success, Err: err}
}

// BodyFailure is the origin's failure to send a body that can be trusted:
// a *BodyError wrapping err.
func BodyFailure(redacted string, err error) *breaker.Result {
	return &breaker.Result{Outcome: breaker.Failure, Err: &BodyError{URL: redacted, Err: err}}
}

// NotData names a protocol's sentinel errors for a 2xx body that is not
// data, each prefixed with the protocol's name.
type NotData struct {
	// HTML is an HTML page (a proxy's error page, a login page).
	HTML error
	// Empty is a body with nothing in it.
	Empty error
	// Unrecognized is anything else the protocol did not claim.
	Unrecognized error
}

// HTMLError is n.HTML with the page's <title>, if it has one, so that
// the error says which failure it was.
func (n NotData) HTMLError(br *bufio.Reader) error {
	if t := HTMLTitle(br); t != "" {
		return fmt.Errorf("%w (title %q)", n.HTML, t)
	}
	return n.HTML
}

// Verdict is the verdict on a 2xx body of the given kind that the protocol
// did not claim as data or as its error document: an HTML page, an empty
// body or an unrecognized one is the origin's failure; a read error (rerr,
// from Sniff) before the first bytes said what the body is is judged by
// ReadFailure.
func (n NotData) Verdict(resp *http.Response, br *bufio.Reader, kind Kind, rerr error, redacted string) *breaker.Result {
	switch {
	case kind == KindHTML:
		return BodyFailure(redacted, n.HTMLError(br))
	case kind == KindEmpty:
		return BodyFailure(redacted, n.Empty)
	case kind == KindUnknown && rerr != nil:
		return ReadFailure(resp, rerr, redacted)
	}
	return BodyFailure(redacted, n.Unrecognized)
}
