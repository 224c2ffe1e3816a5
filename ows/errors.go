package ows

import (
	"fmt"
	"strings"
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
