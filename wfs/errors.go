package wfs

import (
	"errors"
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
