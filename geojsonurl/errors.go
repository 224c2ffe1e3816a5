package geojsonurl

import (
	"errors"
	"fmt"
)

// Errors of this package.
var (
	// ErrInvalidLayer means a Layer cannot be turned into a request.
	ErrInvalidLayer = errors.New("invalid layer")
	// ErrHTMLBody, ErrEmptyBody and ErrUnrecognizedBody are a 2xx body
	// that is not a JSON document: the origin's failure.
	ErrHTMLBody         = errors.New("HTML page instead of a GeoJSON document")
	ErrEmptyBody        = errors.New("empty response body")
	ErrUnrecognizedBody = errors.New("unrecognized response body")
)

// IncompleteError is a document that does not hold what it says (its
// numberMatched or numberReturned), or that repeats an id: nothing proves
// it whole, so its snapshot must not be applied. The server answered, so
// the breaker counts the call as a success.
type IncompleteError struct {
	// URL is the (redacted) document URL.
	URL string
	// Expected is the number of features promised, -1 if unknown; Got the
	// number delivered.
	Expected, Got int
	// Reason says what did not add up.
	Reason string
}

func (e *IncompleteError) Error() string {
	msg := fmt.Sprintf("%s: incomplete result from %s: %s", Kind, e.URL, e.Reason)
	if e.Expected >= 0 {
		msg += fmt.Sprintf(" (expected %d features, got %d)", e.Expected, e.Got)
	}
	return msg
}

// TimeoutError is a fetch whose context's deadline (the poll's timeout)
// passed, or that the origin's pacing would have carried past it.
type TimeoutError struct {
	// URL is the (redacted) document URL; Features counts those delivered.
	URL      string
	Features int
	Err      error
}

func (e *TimeoutError) Error() string {
	// The shape of every kind's timeout: a document is one page.
	return fmt.Sprintf("%s: poll timeout after 0 pages (%d features), at page 0 (%s): %v", Kind, e.Features, e.URL, e.Err)
}

func (e *TimeoutError) Unwrap() error { return e.Err }
