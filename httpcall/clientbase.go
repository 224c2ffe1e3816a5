package httpcall

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/ingestd/ingestd/breaker"
)

// ClientBase is the part of every kind's Client that reaches its sources:
// the logical calls through the breakers, the logger and the clock. A kind
// keeps one in an unexported field, its Options set it through Use,
// UserAgent and SetClock, and its NewClient is BuildClient.
type ClientBase struct {
	// Calls makes the logical calls (set by BuildClient).
	Calls *Client
	// Logger is never nil once built.
	Logger *slog.Logger
	// Now is the clock of Retry-After dates: time.Now unless SetClock.
	Now func() time.Time
	// opts are gathered by the kind's options, for BuildClient only.
	opts []Option
}

// Use adds options of the Client that BuildClient builds.
func (b *ClientBase) Use(opts ...Option) { b.opts = append(b.opts, opts...) }

// UserAgent sets the User-Agent header of every request; "" keeps the
// default.
func (b *ClientBase) UserAgent(ua string) {
	if ua != "" {
		b.Use(WithUserAgent(ua))
	}
}

// SetClock replaces time.Now, for Retry-After dates in tests; nil keeps it.
func (b *ClientBase) SetClock(now func() time.Time) {
	if now != nil {
		b.Now = now
	}
}

// BuildClient finishes a kind's client c, whose ClientBase is b and whose
// own defaults are set: it applies opts to c in order, then builds b's
// calls through New(httpClient, breakers, logger): nil httpClient means
// http.DefaultClient, nil breakers a single attempt with no breaker, nil
// logger discards.
func BuildClient[C any, O ~func(C)](c C, b *ClientBase, httpClient *http.Client, breakers *breaker.Registry, logger *slog.Logger, opts []O) C {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	b.Logger, b.Now = logger, time.Now
	for _, o := range opts {
		o(c)
	}
	b.Calls = New(httpClient, breakers, logger, b.opts...)
	b.opts = nil
	return c
}
