package file

import (
	"errors"

	"github.com/ingestd/ingestd/httpcall"
)

// expected is what a 2xx body should be, in the words of the errors on a
// body that is no file (an HTML page, nothing): the origin's failure.
const expected httpcall.Expected = "a file"

// Errors of this package.
var (
	// ErrShortBody is a body shorter than its Content-Length.
	ErrShortBody = errors.New("body shorter than its Content-Length")
)
