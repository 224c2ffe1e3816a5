package wfs

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Callers test for them with errors.Is; the typed errors
// below wrap them and add the (redacted) URL. Their texts name no kind: the
// errors that carry them out of this package do ("wfs: page 2 (…): …").
var (
	// ErrResponseTooLarge means a GetCapabilities document exceeded the fixed
	// bound ParseCapabilities holds in memory. Bodies over a feed's
	// limits.body_bytes are a *LimitError instead.
	ErrResponseTooLarge = errors.New("response body too large")
	// ErrStartIndexIgnored means a page beyond the first began with the same
	// feature as the page before it: the server ignores startIndex, and paging
	// would stage the same features again and again.
	ErrStartIndexIgnored = errors.New("server ignores startIndex")
)

// ExceptionReportError is an OGC exception report (ows:ExceptionReport of
// WFS 1.1/2.0, or ServiceExceptionReport of WFS 1.0 and MapServer), whatever
// the HTTP status it came with. Code, Locator and Text are those of the first
// exception of the report. Its text, like httpcall's, names no kind: the
// error that carries it does.
type ExceptionReportError struct {
	Status  int
	URL     string // redacted
	Code    string // exceptionCode ("" when the server gave none)
	Locator string
	Text    string
	// ServerSide is the verdict of the classification rule: true when the
	// code says the server failed, false when it says our request is wrong.
	ServerSide bool
}

func (e *ExceptionReportError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s: HTTP %d: OGC exception", e.URL, e.Status)
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	}
	if e.Locator != "" {
		fmt.Fprintf(&b, " (locator %s)", e.Locator)
	}
	if e.Text != "" {
		b.WriteString(": " + e.Text)
	}
	return b.String()
}
