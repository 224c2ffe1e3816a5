package geojsonurl

import (
	"errors"

	"github.com/ingestd/ingestd/source"
)

// Errors of this package.
var (
	// ErrInvalidLayer means a Layer cannot be turned into a request.
	ErrInvalidLayer = errors.New("invalid layer")
)

// IncompleteError is a document that does not hold what it says (its
// numberMatched or numberReturned), or that repeats an id: nothing proves
// it whole, so its snapshot must not be applied.
type IncompleteError = source.IncompleteError

// TimeoutError is a fetch whose context's deadline (the poll's timeout)
// passed, or that the origin's pacing would have carried past it: a
// document is one page, so it reads "after 0 pages … at page 0".
type TimeoutError = source.TimeoutError
