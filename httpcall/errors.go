package httpcall

import (
	"fmt"
	"net/http"
	"time"
)

// HTTPStatusError is a response whose status is not 2xx and whose body is not
// a protocol's error report (an OGC exception report for WFS).
type HTTPStatusError struct {
	Status int
	// URL is the request URL with credentials redacted.
	URL string
	// RetryAfter is the parsed Retry-After header of a 429 (0: none given).
	RetryAfter time.Duration
}

func (e *HTTPStatusError) Error() string {
	msg := fmt.Sprintf("GET %s: HTTP %d %s", e.URL, e.Status, http.StatusText(e.Status))
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	return msg
}

// BodyError is a body that could not be read or trusted: cut short,
// malformed, over a limit, an HTML page. Whose fault it is follows the rule
// of wfs.ClassifyResponse, which every protocol follows: a body cut short or an error page is the origin's
// (the breaker counts a failure), a whole document that does not decode as
// the layer or exceeds a limit is the feed's (the breaker counts a success:
// the server answered). Handlers passed to a protocol's Fetch (wfs.Client.Fetch) must wrap the errors
// of the FeatureReader with %w so that Fetch can tell them from their own
// (database) errors.
type BodyError struct {
	URL  string // redacted
	Page int
	Err  error
}

func (e *BodyError) Error() string {
	return fmt.Sprintf("body of page %d from %s: %v", e.Page, e.URL, e.Err)
}

func (e *BodyError) Unwrap() error { return e.Err }

// TransportError is a request that got no response: DNS, dial, TLS, reset
// before the headers, the attempt's timeout. It replaces net/http's *url.Error,
// whose message would carry the URL's credentials.
type TransportError struct {
	URL string // redacted
	Err error
}

func (e *TransportError) Error() string {
	return fmt.Sprintf("GET %s: %v", e.URL, e.Err)
}

func (e *TransportError) Unwrap() error { return e.Err }

// RedirectError is a redirect the client refused to follow: to another
// origin while the layer does not allow it (Request.CrossOriginRedirects, the
// feed's `redirects: same_origin`), to a scheme other than http and https,
// or one hop past MaxRedirects. The server answered, so the breaker counts
// a success and the poll fails without being parked: the feed's URL or its
// redirect policy must change, and retrying would be refused the same way.
type RedirectError struct {
	// URL is the request that was redirected, redacted.
	URL string
	// Target is where the server sent us, redacted.
	Target string
	// Reason says why the redirect was refused.
	Reason string
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("GET %s: redirect to %s refused: %s", e.URL, e.Target, e.Reason)
}
