package source

import (
	"errors"
	"fmt"
	"strings"
)

// Named returns err with its text led by kind's name ("arcgis: GET …"),
// unless it already is: the layers below a kind (httpcall's "GET <url>:
// HTTP 503", a decoder's "geojson: feature 17: …", a limit's
// "limits.body_bytes exceeded …") name no kind, so that each kind names
// itself once, at the edge where its errors leave its package. The chain
// is err's (errors.Is and errors.As see through it). A nil err stays nil.
func Named(kind string, err error) error {
	if err == nil || strings.HasPrefix(err.Error(), kind+": ") {
		return err
	}
	return &namedError{kind: kind, err: err}
}

type namedError struct {
	kind string
	err  error
}

func (e *namedError) Error() string { return e.kind + ": " + e.err.Error() }

func (e *namedError) Unwrap() error { return e.err }

// ErrInvalidLayer means a Layer cannot be turned into requests: a kind's
// Validate and Fetch wrap it with what is wrong, and source.Named adds the
// kind's name.
var ErrInvalidLayer = errors.New("invalid layer")

// IncompleteError is a fetch whose pages do not add up to one complete,
// consistent snapshot of the layer: fewer (or more) features than the
// server promised, a page cut short, a count the body does not hold, a
// feature id delivered twice, a layer edited while it was read. Nothing
// fetched may be applied. The server answered, so the breaker counts the
// call as a success: retrying would not change the verdict. Every kind
// reports it with this one type.
type IncompleteError struct {
	// Kind, when set, leads the text ("wfs: incomplete result from …");
	// a kind whose errors all leave through Named may leave it empty.
	Kind string
	// URL is the (redacted) URL of the page, or the layer, where the
	// fetch noticed.
	URL string
	// Expected is the number of features promised (numberMatched, a
	// count), -1 if unknown; Got the number delivered up to the verdict.
	// Set Expected to -1 when there is no count to report: 0 is a count.
	Expected, Got int
	// Reason says what did not add up, in the kind's words.
	Reason string
}

func (e *IncompleteError) Error() string {
	msg := fmt.Sprintf("incomplete result from %s: %s", e.URL, e.Reason)
	if e.Kind != "" {
		msg = e.Kind + ": " + msg
	}
	if e.Expected >= 0 {
		msg += fmt.Sprintf(" (expected %d features, got %d)", e.Expected, e.Got)
	}
	return msg + "; nothing applied"
}

// TimeoutError is a fetch whose context's deadline (the poll's timeout)
// passed before the last page was in, or that the origin's pacing would
// have carried past it. It names how far the fetch got, so that an
// operator can tell a layer that outgrew its timeout from a server that
// pages forever. A kind of one document reports page 0 of 0 pages.
type TimeoutError struct {
	// Kind leads the text ("wfs: poll timeout …").
	Kind string
	// URL is the (redacted) request of the page the fetch was at.
	URL string
	// Page is the page the fetch was at; Pages and Features count what
	// the fetch delivered before it.
	Page, Pages, Features int
	Err                   error
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s: poll timeout after %d pages (%d features), at page %d (%s): %v", e.Kind, e.Pages, e.Features, e.Page, e.URL, e.Err)
}

func (e *TimeoutError) Unwrap() error { return e.Err }
