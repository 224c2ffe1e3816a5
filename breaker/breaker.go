// Package breaker guards every request ingestd makes with a circuit breaker per
// origin (scheme://host:port), retries inside one logical call, and paces each
// origin, all under a global bound on requests in flight.
package breaker

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"golang.org/x/sync/semaphore"
)

// Outcome classifies one attempt of a logical call.
type Outcome int

const (
	// Success: the upstream answered (2xx data, or a 4xx other than 429). A
	// non-nil Err is returned to the caller as is and never retried.
	Success Outcome = iota
	// Failure: the upstream failed (transport error, timeout, 5xx, a body cut
	// short, a server-side exception or an HTML error page). Retried while
	// attempts remain; only the final outcome of the call reaches the breaker.
	Failure
	// Throttled: the upstream answered 429. Neither success nor failure; the
	// attempt's RetryAfter pauses the origin.
	Throttled
	// Ignored: not the origin's doing (the caller cancelled, or a local error
	// such as the database failing). Neither success nor failure; not retried.
	Ignored
)

func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Throttled:
		return "throttled"
	case Ignored:
		return "ignored"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// Result is what one attempt of a logical call reports.
type Result struct {
	Outcome Outcome
	Err     error
	// RetryAfter is the server's Retry-After for a Throttled attempt (0: none given).
	RetryAfter time.Duration
}

// AttemptFunc performs one attempt of a logical call; attempt counts from 1.
type AttemptFunc func(ctx context.Context, attempt int) Result

// OpenError is returned when the origin's breaker refuses a call without
// touching the network. RetryAfter is the time until the next probe.
type OpenError struct {
	Origin     string
	RetryAfter time.Duration
}

func (e *OpenError) Error() string {
	return fmt.Sprintf("breaker: %s is open, retry after %s", e.Origin, e.RetryAfter.Round(time.Second))
}

// Config holds the registry-wide settings.
type Config struct {
	// MaxInFlight bounds the requests in flight across all origins (default 20).
	MaxInFlight int
}

// Registry holds one breaker per origin. Build one in main and pass it down.
type Registry struct {
	sem    *semaphore.Weighted
	logger *slog.Logger
}

// NewRegistry returns an empty registry; logger may be nil.
func NewRegistry(cfg Config, logger *slog.Logger) *Registry {
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 20
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Registry{sem: semaphore.NewWeighted(int64(cfg.MaxInFlight)), logger: logger}
}

// Do runs one logical call against origin.
func (r *Registry) Do(ctx context.Context, origin string, fn AttemptFunc) error {
	if err := r.sem.Acquire(ctx, 1); err != nil {
		return err
	}
	defer r.sem.Release(1)
	return fn(ctx, 1).Err
}

// Origin returns the breaker key of u: scheme://host:port, with the scheme's
// default port made explicit so that two spellings of one server share a breaker.
func Origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		switch scheme {
		case "https":
			port = "443"
		default:
			port = "80"
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}
