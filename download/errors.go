package download

import "errors"

// Errors of this package.
var (
	// ErrInvalidLayer means a Layer cannot be turned into a request.
	ErrInvalidLayer = errors.New("invalid layer")
	// ErrHTMLBody and ErrEmptyBody are a 2xx body that is no file: the
	// origin's failure.
	ErrHTMLBody         = errors.New("HTML page instead of a file")
	ErrEmptyBody        = errors.New("empty response body")
	ErrUnrecognizedBody = errors.New("unrecognized response body")
	// ErrShortBody is a body shorter than its Content-Length.
	ErrShortBody = errors.New("body shorter than its Content-Length")
)
