package breaker

import (
	"errors"
	"fmt"
	"time"
)

// Policy configures the breaker, retries and pacing of one origin. Start from
// DefaultPolicy and override fields: a zero field is taken literally (see each
// field), not replaced by a default.
type Policy struct {
	// ConsecutiveFailures trips the breaker after this many failed logical
	// calls in a row, however far apart (0 disables the rule): a county
	// server down for hours, polled by its feeds minutes apart, fails one
	// call per Window, and only a success ends the run.
	ConsecutiveFailures int
	// FailureRatio trips the breaker when at least this share of the calls
	// decided within Window failed (0 disables the rule).
	FailureRatio float64
	// MinCalls is the number of decided calls (successes plus failures) the
	// window must hold before FailureRatio is judged, so that one failure out
	// of two calls on a quiet origin does not trip it.
	MinCalls int
	// Window is the length of the rolling window for FailureRatio and for the
	// retry budget.
	Window time.Duration

	// OpenBase is the first open duration; each consecutive re-open adds
	// another OpenBase, up to OpenMax. Both get ±20% jitter (never above OpenMax).
	OpenBase time.Duration
	// OpenMax caps the open duration.
	OpenMax time.Duration
	// OpenDecay is how long the origin must stay closed for its count of
	// consecutive opens to halve; each further OpenDecay halves it again.
	OpenDecay time.Duration
	// HalfOpenMaxCalls is the number of probes admitted after the cooldown;
	// that many consecutive successes close the breaker, one failure re-opens it.
	HalfOpenMaxCalls int

	// MaxAttempts bounds the attempts of one logical call (1: no retries).
	MaxAttempts int
	// BackoffBase and BackoffMax bound the full-jitter exponential backoff
	// between attempts: the k-th retry sleeps a uniform random duration in
	// [0, min(BackoffMax, BackoffBase·2^(k-1))).
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// AttemptTimeout bounds each attempt (0: only the caller's context). An
	// attempt that hits it is a Failure. When set, a whole call (attempts plus
	// backoffs) must fit in Window: gobreaker does not count an outcome that
	// arrives after its call's start has left the window.
	AttemptTimeout time.Duration

	// TargetConcurrency, when set, also spaces the origin's attempts by its
	// response times, as Scrapy's AutoThrottle does (0: off, the default):
	// while other attempts to it are waiting or in flight, an attempt starts
	// no sooner than the origin's recent attempt duration divided by
	// TargetConcurrency after the previous start (see pacer). A lone
	// sequential poll is never held. It is not the default because it
	// follows the origin only once it has timed it, and its mean mixes
	// small requests with pages: eight polls starting on a cold 5 s server
	// still had four pages in flight (scripts/bench.sh pacing), where
	// MaxInFlightPerOrigin holds any server, from the first request.
	TargetConcurrency float64
	// RateLimit is a fixed cap on the request rate towards the origin, in
	// requests per second (0: none, the default); Burst is the bucket size.
	RateLimit float64
	Burst     int
	// MaxInFlightPerOrigin caps the attempts in flight towards the origin
	// (0: only the registry-wide MaxInFlight applies). It is the default
	// pacing: a closed window, so the origin's request rate follows its
	// response time (at most MaxInFlightPerOrigin / response time) and a
	// sequential poll, one request at a time, is never held.
	MaxInFlightPerOrigin int
	// MaxRetryAfter caps how long one 429's Retry-After may pause the origin, so
	// a hostile or buggy header cannot park an origin for a day. A call whose
	// 429 asks for more, or for a wait that would end after the call's
	// deadline, does not sleep: it ends at once with a *ThrottledError
	// carrying the (capped) wait, for the caller to park its work.
	MaxRetryAfter time.Duration

	// RetryBudgetRatio is the share of the origin's calls within Window that
	// retries may add, so fixed retry counts cannot multiply the load on a
	// failing host; RetryBudgetMin retries per window are always allowed.
	RetryBudgetRatio float64
	RetryBudgetMin   int
}

// DefaultPolicy returns the policy used for origins without one of their own:
// trip after 5 consecutive failures or ≥50% failures over 60 s with ≥10 calls;
// open 30 s, growing to 30 min, decaying every 10 min of health; 1 probe;
// 3 attempts with 500 ms..10 s backoff; at most 2 requests in flight, no
// fixed rate (a burst of 10 once one is set), no TargetConcurrency;
// Retry-After capped at 10 min; retries ≤20% of calls (≥3 per window).
func DefaultPolicy() Policy {
	return Policy{
		ConsecutiveFailures:  5,
		FailureRatio:         0.5,
		MinCalls:             10,
		Window:               60 * time.Second,
		OpenBase:             30 * time.Second,
		OpenMax:              30 * time.Minute,
		OpenDecay:            10 * time.Minute,
		HalfOpenMaxCalls:     1,
		MaxAttempts:          3,
		BackoffBase:          500 * time.Millisecond,
		BackoffMax:           10 * time.Second,
		Burst:                10,
		MaxInFlightPerOrigin: 2,
		MaxRetryAfter:        10 * time.Minute,
		RetryBudgetRatio:     0.2,
		RetryBudgetMin:       3,
	}
}

// ErrInvalidPolicy is wrapped by every error Policy.Validate returns.
var ErrInvalidPolicy = errors.New("breaker: invalid policy")

// Validate reports the first field that makes p unusable, wrapping
// ErrInvalidPolicy.
func (p Policy) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidPolicy, fmt.Sprintf(format, args...))
	}
	switch {
	case p.ConsecutiveFailures < 0:
		return bad("ConsecutiveFailures %d is negative", p.ConsecutiveFailures)
	case p.FailureRatio < 0 || p.FailureRatio > 1:
		return bad("FailureRatio %g is outside [0, 1]", p.FailureRatio)
	case p.ConsecutiveFailures == 0 && p.FailureRatio == 0:
		return bad("neither ConsecutiveFailures nor FailureRatio is set, so the breaker could never trip")
	case p.FailureRatio > 0 && p.MinCalls < 1:
		return bad("MinCalls %d must be at least 1 when FailureRatio is set", p.MinCalls)
	case p.Window <= 0:
		return bad("Window %s must be positive", p.Window)
	case p.OpenBase <= 0:
		return bad("OpenBase %s must be positive", p.OpenBase)
	case p.OpenMax < p.OpenBase:
		return bad("OpenMax %s is below OpenBase %s", p.OpenMax, p.OpenBase)
	case p.OpenDecay <= 0:
		return bad("OpenDecay %s must be positive", p.OpenDecay)
	case p.HalfOpenMaxCalls < 1:
		return bad("HalfOpenMaxCalls %d must be at least 1", p.HalfOpenMaxCalls)
	case p.MaxAttempts < 1:
		return bad("MaxAttempts %d must be at least 1", p.MaxAttempts)
	case p.MaxAttempts > 1 && p.BackoffBase <= 0:
		return bad("BackoffBase %s must be positive when retries are allowed", p.BackoffBase)
	case p.BackoffMax < p.BackoffBase:
		return bad("BackoffMax %s is below BackoffBase %s", p.BackoffMax, p.BackoffBase)
	case p.AttemptTimeout < 0:
		return bad("AttemptTimeout %s is negative", p.AttemptTimeout)
	case p.AttemptTimeout > 0 && p.longestCall() >= p.Window:
		// gobreaker drops an outcome whose call began before the window, so
		// the failure ratio would never count a host that hangs every attempt.
		return bad("a call may last %s (attempts × AttemptTimeout + backoffs), not less than Window %s", p.longestCall(), p.Window)
	case p.TargetConcurrency < 0:
		return bad("TargetConcurrency %g is negative", p.TargetConcurrency)
	case p.RateLimit < 0:
		return bad("RateLimit %g is negative", p.RateLimit)
	case p.RateLimit > 0 && p.Burst < 1:
		return bad("Burst %d must be at least 1 when RateLimit is set", p.Burst)
	case p.MaxInFlightPerOrigin < 0:
		return bad("MaxInFlightPerOrigin %d is negative", p.MaxInFlightPerOrigin)
	case p.MaxRetryAfter <= 0:
		return bad("MaxRetryAfter %s must be positive", p.MaxRetryAfter)
	case p.RetryBudgetRatio < 0:
		return bad("RetryBudgetRatio %g is negative", p.RetryBudgetRatio)
	case p.RetryBudgetMin < 0:
		return bad("RetryBudgetMin %d is negative", p.RetryBudgetMin)
	}
	return nil
}

// MoreProtective returns, field by field, the value of a or b that spares the
// origin more: it is meant for two jurisdictions that share an origin, so
// that the gentler policy of one cannot undo the caution of the other. Trip
// thresholds, attempts, rates, caps and budgets take the smaller value (0,
// meaning "disabled" or "unlimited", loses to any set value); waits, windows
// and open durations take the larger one. AttemptTimeout takes the shorter set
// value: a hung attempt ties up the origin's in-flight slots and should count
// as a failure sooner.
func MoreProtective(a, b Policy) Policy {
	return Policy{
		ConsecutiveFailures:  minSet(a.ConsecutiveFailures, b.ConsecutiveFailures),
		FailureRatio:         minSet(a.FailureRatio, b.FailureRatio),
		MinCalls:             minSet(a.MinCalls, b.MinCalls),
		Window:               max(a.Window, b.Window),
		OpenBase:             max(a.OpenBase, b.OpenBase),
		OpenMax:              max(a.OpenMax, b.OpenMax),
		OpenDecay:            max(a.OpenDecay, b.OpenDecay),
		HalfOpenMaxCalls:     min(a.HalfOpenMaxCalls, b.HalfOpenMaxCalls),
		MaxAttempts:          min(a.MaxAttempts, b.MaxAttempts),
		BackoffBase:          max(a.BackoffBase, b.BackoffBase),
		BackoffMax:           max(a.BackoffMax, b.BackoffMax),
		AttemptTimeout:       minSet(a.AttemptTimeout, b.AttemptTimeout),
		TargetConcurrency:    minSet(a.TargetConcurrency, b.TargetConcurrency),
		RateLimit:            minSet(a.RateLimit, b.RateLimit),
		Burst:                minSet(a.Burst, b.Burst),
		MaxInFlightPerOrigin: minSet(a.MaxInFlightPerOrigin, b.MaxInFlightPerOrigin),
		MaxRetryAfter:        max(a.MaxRetryAfter, b.MaxRetryAfter),
		RetryBudgetRatio:     min(a.RetryBudgetRatio, b.RetryBudgetRatio),
		RetryBudgetMin:       min(a.RetryBudgetMin, b.RetryBudgetMin),
	}
}

// longestCall is the longest a logical call can take when AttemptTimeout is
// set, leaving out waits for pacing, which precede no outcome of their own.
func (p Policy) longestCall() time.Duration {
	n := time.Duration(p.MaxAttempts)
	return n*p.AttemptTimeout + (n-1)*p.BackoffMax
}

// minSet returns the smaller of a and b, where zero means "not set" and loses.
func minSet[T int | float64 | time.Duration](a, b T) T {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}
