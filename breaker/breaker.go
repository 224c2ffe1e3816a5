package breaker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// Outcome classifies one attempt of a logical call.
type Outcome int

const (
	// Success means the upstream answered (2xx data, or a 4xx other than 429). A
	// non-nil Err is returned to the caller as is and never retried.
	Success Outcome = iota
	// Failure means the upstream failed (transport error, timeout, 5xx, a body cut
	// short, a server-side exception or an HTML error page). It is retried while
	// attempts remain; only the final outcome of the call reaches the breaker.
	Failure
	// Throttled means the upstream answered 429. It is neither success nor
	// failure; the attempt's RetryAfter pauses the origin.
	Throttled
	// Ignored means the result is not the origin's doing (the caller cancelled, or
	// a local error such as the database failing). It is neither success nor
	// failure and is not retried.
	Ignored
)

// String returns the lower-case name used in logs and metrics labels.
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
// The context it receives carries the per-attempt timeout, if the origin's
// policy sets one.
type AttemptFunc func(ctx context.Context, attempt int) Result

// OpenError is returned when the origin's breaker refuses a call without
// touching the network. RetryAfter is the time until the next probe.
type OpenError struct {
	Origin     string
	RetryAfter time.Duration
	// Override is true when an operator's override (ingestd breaker open)
	// refused the call rather than the breaker; Reason is the operator's.
	Override bool
	Reason   string
}

// Error describes the refusal; sub-second waits keep millisecond precision so
// that short cooldowns do not read as "0s".
func (e *OpenError) Error() string {
	if e.Override {
		msg := fmt.Sprintf("breaker: %s is held open by an operator, retry after %s", e.Origin, roundDuration(e.RetryAfter))
		if e.Reason != "" {
			msg += " (" + e.Reason + ")"
		}
		return msg
	}
	return fmt.Sprintf("breaker: %s is open, retry after %s", e.Origin, roundDuration(e.RetryAfter))
}

// RetryError is returned when a logical call ends without a success because
// its attempts ran out, or because the origin's retry budget refused another
// attempt. Err is the last attempt's error, so
// errors.Is and errors.As see through it.
type RetryError struct {
	Origin string
	// Attempts is the number of attempts made.
	Attempts int
	// Outcome is the last attempt's outcome: Failure or Throttled.
	Outcome Outcome
	// BudgetExhausted is true when the retry budget, not MaxAttempts, stopped
	// the call.
	BudgetExhausted bool
	Err             error
}

// Error names the origin, the number of attempts and why the call stopped.
func (e *RetryError) Error() string {
	why := "attempts exhausted"
	if e.BudgetExhausted {
		why = "retry budget exhausted"
	}
	if e.Err == nil {
		return fmt.Sprintf("breaker: %s: %s after %d attempt(s), last %s", e.Origin, why, e.Attempts, e.Outcome)
	}
	return fmt.Sprintf("breaker: %s: %s after %d attempt(s), last %s: %v", e.Origin, why, e.Attempts, e.Outcome, e.Err)
}

// Unwrap returns the last attempt's error.
func (e *RetryError) Unwrap() error { return e.Err }

// ThrottledError is returned, without sleeping, when a 429's Retry-After
// would hold the call past its context's deadline or past the policy's
// MaxRetryAfter, or when the pause another call's 429 put on the origin
// outlasts the deadline. Sleeping would only burn the caller's time (a
// `Retry-After: 999999999` held a poll for its whole timeout); ending at
// once lets the caller park its work until RetryAfter. The call counts as
// neither success nor failure: the origin answered, it asked us to wait.
type ThrottledError struct {
	Origin string
	// RetryAfter is when to try again: the server's Retry-After (or what is
	// left of the origin's pause), capped by the policy's MaxRetryAfter so
	// that a hostile header cannot park work for days.
	RetryAfter time.Duration
	// Requested is the server's own Retry-After (0: an earlier call's pause).
	Requested time.Duration
	// Err is the 429's error (nil for an earlier call's pause).
	Err error
}

// Error names the origin and the wait, and why the call did not sleep.
func (e *ThrottledError) Error() string {
	msg := fmt.Sprintf("breaker: %s asked to retry after %s", e.Origin, roundDuration(e.RetryAfter))
	switch {
	case e.Requested > e.RetryAfter:
		msg += fmt.Sprintf(" (Retry-After %s, capped by max_retry_after)", roundDuration(e.Requested))
	case e.Requested == 0:
		msg = fmt.Sprintf("breaker: %s is paused by a 429 for another %s", e.Origin, roundDuration(e.RetryAfter))
	}
	msg += ", longer than the call may wait"
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the 429's error.
func (e *ThrottledError) Unwrap() error { return e.Err }

// ErrPastDeadline is returned (wrapped) when the origin's rate limiter would
// make an attempt wait past the caller's deadline. It wraps
// context.DeadlineExceeded: the caller ran out of time, which is neither the
// origin's failure nor something a retry inside the call can fix.
var ErrPastDeadline = fmt.Errorf("breaker: waiting for the origin's pacing would outlast the deadline: %w", context.DeadlineExceeded)

// ErrAttemptTimeout is wrapped into the error of an attempt that hit the
// policy's AttemptTimeout; such an attempt counts as a Failure.
var ErrAttemptTimeout = errors.New("breaker: attempt timed out")

// errUnspecifiedFailure stands in for a Failure reported without an error, so
// that a failed call never returns nil.
var errUnspecifiedFailure = errors.New("breaker: attempt failed")

func roundDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
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
		case "ftp":
			port = "21"
		default:
			port = "80"
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// ErrBadOrigin is wrapped by ParseOrigin's errors.
var ErrBadOrigin = errors.New("breaker: not an origin")

// ParseOrigin accepts a URL (or an origin) and returns its breaker key,
// scheme://host:port, as Origin does.
func ParseOrigin(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fmt.Errorf("%w: %q: %w", ErrBadOrigin, raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "ftp") || u.Hostname() == "" {
		return "", fmt.Errorf("%w: %q (want a URL such as https://host[:port]/... or ftp://host[:port]/...)", ErrBadOrigin, raw)
	}
	return Origin(u), nil
}
