package httpcall

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/ingestd/ingestd/breaker"
)

// Kit is what every kind's Client holds to reach its sources: the logical
// calls through the breakers, the logger and the clock. A kind keeps one in
// an unexported field, its Options set it through Use and SetClock, and its
// NewClient is Assemble.
type Kit struct {
	// Calls makes the logical calls (set by Assemble).
	Calls *Client
	// Logger is never nil once assembled.
	Logger *slog.Logger
	// Now is the clock of Retry-After dates: time.Now unless SetClock.
	Now func() time.Time
	// opts are gathered by the kind's options, for Assemble only.
	opts []Option
}

// Use adds options of the Client that Assemble builds.
func (k *Kit) Use(opts ...Option) { k.opts = append(k.opts, opts...) }

// UserAgent sets the User-Agent header of every request; "" keeps the
// default.
func (k *Kit) UserAgent(ua string) {
	if ua != "" {
		k.Use(WithUserAgent(ua))
	}
}

// SetClock replaces time.Now, for Retry-After dates in tests; nil keeps it.
func (k *Kit) SetClock(now func() time.Time) {
	if now != nil {
		k.Now = now
	}
}

// Assemble finishes a kind's client c, whose Kit is k and whose own
// defaults are set: it applies opts to c in order, then builds k's calls
// through New(httpClient, breakers, logger): nil httpClient means
// http.DefaultClient, nil breakers a single attempt with no breaker, nil
// logger discards.
func Assemble[C any, O ~func(C)](c C, k *Kit, httpClient *http.Client, breakers *breaker.Registry, logger *slog.Logger, opts []O) C {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	k.Logger, k.Now = logger, time.Now
	for _, o := range opts {
		o(c)
	}
	k.Calls = New(httpClient, breakers, logger, k.opts...)
	k.opts = nil
	return c
}
