package breaker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// Config holds the registry-wide settings.
type Config struct {
	// MaxInFlight bounds the requests in flight across all origins (default 20).
	MaxInFlight int
	// Policy applies to origins without a policy of their own; the zero value
	// means DefaultPolicy().
	Policy Policy
	// OnStateChange, if set, is called once per state change of any origin,
	// after the change is logged. It runs on the goroutine of the call that
	// caused the change, outside every breaker lock, one at a time and in
	// order per origin; it should return quickly (hand slow work such as a
	// database write to its own goroutine).
	OnStateChange func(StateChange)
	// Shared, if set, shares verdicts with the other instances (see Shared;
	// breaker/pgshare keeps them in PostgreSQL); nil keeps every verdict in
	// this process. The registry only reads and writes through it: the
	// caller starts and closes it.
	Shared Shared
	// Observer, if set, is told every attempt, call result and state change
	// (breaker/breakermetrics turns them into Prometheus series).
	Observer Observer
	// Clock, if set, tells the time (see Clock). Nil means Shared's clock
	// with a Shared, the real clock otherwise: the registry and its Shared
	// must share one, because the cached verdicts' times are converted
	// between the store's clock and this one.
	Clock Clock
	// Jitter, if set, is the source of jitter in [0, 1) (cooldowns,
	// backoffs, 429 resumes); nil means math/rand. Tests pin it.
	Jitter func() float64
	// Sleep, if set, is every wait of the registry (backoffs, 429 pauses,
	// pacing): it returns after d, or ctx's error. Nil means a real timer.
	// Tests of the packages above record the waits asked for instead of
	// spending them.
	Sleep func(ctx context.Context, d time.Duration) error
}

// StateChange is one transition of an origin's breaker.
type StateChange struct {
	Origin string
	From   State
	To     State
	At     time.Time
	// Counts are the counts that decided the transition: the window that
	// tripped a closed breaker, or the failed probe of a half-open one.
	Counts Counts
	// RetryAfter is the open duration when To is StateOpen, otherwise 0.
	RetryAfter time.Duration
	// ConsecutiveOpens is the origin's count of consecutive opens after the change.
	ConsecutiveOpens int
	// DecidedBy is the instance whose verdict, read from breaker_state, made
	// this one follow; empty when this instance decided.
	DecidedBy string
}

// OriginState is the state of one origin, as `ingestd status` shows it.
type OriginState struct {
	Origin string
	State  State
	// OpenUntil is when the next probe may go out, while State is StateOpen.
	OpenUntil time.Time
	// Counts are the outcomes in the current window (closed) or of the probes
	// so far (half-open).
	Counts Counts
	// ConsecutiveOpens is the growth factor of the next open duration.
	ConsecutiveOpens int
	// PausedUntil is set while a 429's Retry-After holds the origin back.
	PausedUntil time.Time
	// Override is the manual override in force (with a Shared), until
	// OverrideUntil (zero: until changed), and why.
	Override       Override
	OverrideUntil  time.Time
	OverrideReason string
	// ProbeOwner is the instance holding the cluster's probe lease, if any.
	ProbeOwner string
}

// Registry holds one breaker per origin, with its retries and pacing. Build
// one in main and pass it down; it is safe for concurrent use.
type Registry struct {
	sem           *semaphore.Weighted
	logger        *slog.Logger
	defaultPolicy Policy
	onStateChange func(StateChange)
	shared        Shared
	rand          func() float64                             // jitter source in [0, 1); tests may pin it
	sleep         func(context.Context, time.Duration) error // backoffs and 429 pauses (see Clock); tests may replace it
	clock         Clock
	observer      Observer

	mu       sync.Mutex
	policies map[string]Policy
	origins  map[string]*origin
}

// NewRegistry returns an empty registry; logger may be nil. An invalid
// Config.Policy is logged and replaced by DefaultPolicy, because a breaker
// that could never trip is worse than one with the defaults.
func NewRegistry(cfg Config, logger *slog.Logger) *Registry {
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 20
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := cfg.Policy
	if p == (Policy{}) {
		p = DefaultPolicy()
	} else if err := p.Validate(); err != nil {
		logger.Error("breaker: default policy rejected, using built-in defaults", "error", err)
		p = DefaultPolicy()
	}
	clock := cfg.Clock
	if clock == nil && cfg.Shared != nil {
		clock = cfg.Shared.Clock()
	}
	var observer Observer = nopObserver{}
	if cfg.Observer != nil {
		observer = cfg.Observer
	}
	jitter := cfg.Jitter
	if jitter == nil {
		jitter = rand.Float64
	}
	wait := cfg.Sleep
	if wait == nil {
		wait = sleep
	}
	return &Registry{
		clock:         orSystem(clock),
		sem:           semaphore.NewWeighted(int64(cfg.MaxInFlight)),
		logger:        logger,
		defaultPolicy: p,
		onStateChange: cfg.OnStateChange,
		shared:        cfg.Shared,
		rand:          jitter,
		sleep:         wait,
		observer:      observer,
		policies:      make(map[string]Policy),
		origins:       make(map[string]*origin),
	}
}

// SetPolicy sets origin's policy; call it before the origin's first use. A
// later call with a different policy replaces the origin's breaker: its window
// and counts start afresh, but an open verdict and its count of consecutive
// opens carry over, so that reconfiguring cannot be used to reach a host that
// is being spared. Calls in flight finish under the old policy.
func (r *Registry) SetPolicy(origin string, p Policy) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("breaker: policy for %s: %w", origin, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.policies[origin] = p
	old, ok := r.origins[origin]
	if !ok || old.policy == p {
		return nil
	}
	o := newOrigin(r, origin, p)
	old.mu.Lock()
	openUntil, openSeq := old.openUntil, old.openSeq
	o.opens = old.opens
	o.closedAt = old.closedAt
	o.pausedUntil, o.pauseSpan = old.pausedUntil, old.pauseSpan
	old.mu.Unlock()
	if r.clock.Now().Before(openUntil) {
		// The new breaker starts open for the rest of the cooldown, as the
		// old one was: no event, since callers see no change.
		o.gate.Lock()
		o.forceOpenGated(forcedOpen{until: openUntil, quiet: true})
		o.gate.Unlock()
		o.mu.Lock()
		o.openSeq = openSeq
		o.mu.Unlock()
	}
	r.origins[origin] = o
	return nil
}

// Policy returns the policy in force for origin.
func (r *Registry) Policy(origin string) Policy {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.policies[origin]; ok {
		return p
	}
	return r.defaultPolicy
}

func (r *Registry) origin(name string) *origin {
	r.mu.Lock()
	defer r.mu.Unlock()
	o, ok := r.origins[name]
	if !ok {
		p, ok := r.policies[name]
		if !ok {
			p = r.defaultPolicy
		}
		o = newOrigin(r, name, p)
		r.origins[name] = o
	}
	return o
}

// Snapshot returns the state of every origin used so far, sorted by origin.
func (r *Registry) Snapshot() []OriginState {
	r.mu.Lock()
	os := make([]*origin, 0, len(r.origins))
	for _, o := range r.origins {
		os = append(os, o)
	}
	r.mu.Unlock()
	out := make([]OriginState, 0, len(os))
	for _, o := range os {
		out = append(out, o.snapshot())
		o.flush()
	}
	slices.SortFunc(out, func(a, b OriginState) int { return strings.Compare(a.Origin, b.Origin) })
	return out
}

// emit logs one state change and passes it to the caller's hook.
func (r *Registry) emit(ev StateChange) {
	level := slog.LevelInfo
	if ev.To == StateOpen {
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{
		slog.String("origin", ev.Origin),
		slog.String("from", ev.From.String()),
		slog.String("to", ev.To.String()),
		slog.Int("consecutive_failures", int(ev.Counts.ConsecutiveFailures)),
		slog.Int("requests", int(ev.Counts.Requests)),
		slog.Int("failures", int(ev.Counts.Failures)),
		slog.Duration("retry_after", ev.RetryAfter),
		slog.Int("consecutive_opens", ev.ConsecutiveOpens),
	}
	if ev.DecidedBy != "" {
		attrs = append(attrs, slog.String("decided_by", ev.DecidedBy))
	}
	r.logger.LogAttrs(context.Background(), level, "breaker state change", attrs...)
	r.observer.StateChange(ev)
	if r.onStateChange != nil {
		r.onStateChange(ev)
	}
}

// Do runs one logical call against origin: it asks the origin's breaker once,
// runs up to MaxAttempts attempts of fn with backoff, pacing and in-flight
// slots per attempt, and reports only the call's final outcome to the breaker.
//
// It returns nil or the Err of a Success; the Err of an Ignored attempt (or
// the context's error, wrapped, if ctx ended while waiting); an *OpenError if
// the breaker refused the call or was opened by other calls between attempts;
// or a *RetryError wrapping the last attempt's error when attempts or the
// retry budget ran out.
func (r *Registry) Do(ctx context.Context, origin string, fn AttemptFunc) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("breaker: %s: %w", origin, err)
	}
	o := r.origin(origin)
	done, seq, err := o.admit(ctx)
	if err != nil {
		var open *OpenError
		if errors.As(err, &open) {
			r.observer.Call(origin, CallRefused)
		}
		return err
	}
	// Exactly one report per call. Anything but a decided Success or Failure,
	// including a panic in fn, is reported as Ignored (neither), which frees
	// a half-open probe slot without deciding the probe.
	c := &call{o: o, seq: seq, final: Ignored}
	defer c.report(done)
	return c.run(ctx, fn)
}

// call is one logical call admitted by its origin's breaker.
type call struct {
	o   *origin
	seq uint64 // the origin's trip sequence at admission
	// final is the outcome done reports: Success, Failure, or (anything
	// else) Ignored.
	final Outcome
	last  Result
}

// report hands the call's final outcome to the breaker, once.
func (c *call) report(done func(error)) {
	if c.final == Failure {
		c.o.noteError(c.last.Err) // before done: a trip publishes it
	}
	done(&callReport{outcome: c.final, err: c.last.Err})
	c.o.flush()
	result := CallNeither
	switch c.final {
	case Success:
		result = CallSuccess
	case Failure:
		result = CallFailure
	}
	c.o.reg.observer.Call(c.o.name, result)
}

// run runs the attempts of the call and returns its error (see Do).
func (c *call) run(ctx context.Context, fn AttemptFunc) error {
	o, p := c.o, c.o.policy
	attempt := 0
	for attempt < p.MaxAttempts {
		if attempt > 0 {
			if err := c.beforeRetry(ctx, attempt); err != nil {
				return err
			}
		}
		attempt++
		c.last = o.attempt(ctx, attempt, fn)
		switch c.last.Outcome {
		case Success:
			c.final = Success
			return c.last.Err
		case Ignored:
			return c.last.Err
		case Throttled:
			o.pause(c.last.RetryAfter)
			if te := o.throttledTooLong(ctx, c.last); te != nil {
				return te
			}
		case Failure:
			if c.last.Err == nil {
				c.last.Err = errUnspecifiedFailure
			}
		}
	}
	// A call that ran out of attempts on 429s is neither: the origin answered,
	// it only asked us to slow down, and pacing must never trip the breaker.
	if c.last.Outcome == Failure {
		c.final = Failure
	}
	return &RetryError{Origin: o.name, Attempts: attempt, Outcome: c.last.Outcome, Err: c.last.Err}
}

// beforeRetry decides whether retry number attempt may go out: the origin
// must still admit the call, its retry budget must allow one more, and the
// backoff must pass.
func (c *call) beforeRetry(ctx context.Context, attempt int) error {
	o, p, r := c.o, c.o.policy, c.o.reg
	if err := o.stillAdmitted(c.seq); err != nil {
		return err
	}
	o.mu.Lock()
	ok := o.budget.tryRetry(r.clock.Now(), p.RetryBudgetRatio, p.RetryBudgetMin)
	o.mu.Unlock()
	if !ok {
		if c.last.Outcome == Failure {
			c.final = Failure
		}
		return &RetryError{Origin: o.name, Attempts: attempt, Outcome: c.last.Outcome, BudgetExhausted: true, Err: c.last.Err}
	}
	// A 429 with Retry-After has paused the origin; that pause is this
	// retry's wait, so it gets no backoff on top.
	if c.last.Outcome == Failure || c.last.RetryAfter <= 0 {
		if err := r.sleep(ctx, r.backoff(p, attempt)); err != nil {
			return fmt.Errorf("breaker: %s: waiting to retry: %w", o.name, err)
		}
	}
	// The backoff may have been long: look again.
	return o.stillAdmitted(c.seq)
}

// throttledTooLong returns a *ThrottledError when the Retry-After of a 429
// exceeds the policy's MaxRetryAfter or would end after ctx's deadline:
// waiting for it would only hold the caller until its timeout.
func (o *origin) throttledTooLong(ctx context.Context, last Result) *ThrottledError {
	ra := last.RetryAfter
	if ra <= 0 {
		return nil
	}
	capped := min(ra, o.policy.MaxRetryAfter)
	dl, hasDeadline := ctx.Deadline()
	if ra <= o.policy.MaxRetryAfter && !pastDeadline(dl, hasDeadline, capped) {
		return nil
	}
	return &ThrottledError{Origin: o.name, RetryAfter: capped, Requested: ra, Err: last.Err}
}

// attempt runs one attempt inside the origin's pacing and both in-flight
// bounds, and corrects the classification where only Do can tell: a failure
// while the caller's context is done is the caller's doing, and a
// cancellation caused by AttemptTimeout is the origin's.
func (o *origin) attempt(ctx context.Context, n int, fn AttemptFunc) Result {
	release, err := o.acquire(ctx)
	if err != nil {
		var te *ThrottledError
		if errors.As(err, &te) {
			return Result{Outcome: Ignored, Err: te}
		}
		return Result{Outcome: Ignored, Err: fmt.Errorf("breaker: %s: waiting for a slot: %w", o.name, err)}
	}
	defer release()
	actx := ctx
	if t := o.policy.AttemptTimeout; t > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	started := o.reg.clock.Now()
	res := fn(actx, n)
	took := o.reg.clock.Now().Sub(started)
	switch {
	case ctx.Err() != nil && res.Outcome != Success:
		res.Outcome = Ignored
	case (res.Outcome == Ignored || res.Outcome == Failure) && errors.Is(actx.Err(), context.DeadlineExceeded):
		res.Outcome = Failure
		if res.Err == nil {
			res.Err = ErrAttemptTimeout
		} else {
			res.Err = fmt.Errorf("%w after %s: %w", ErrAttemptTimeout, o.policy.AttemptTimeout, res.Err)
		}
	}
	if res.Outcome == Success || res.Outcome == Failure {
		o.observeLatency(took, res.Outcome == Success)
	}
	o.reg.observer.Attempt(o.name, res.Outcome)
	return res
}

// backoff returns the full-jitter wait before retry number k (k ≥ 1).
func (r *Registry) backoff(p Policy, k int) time.Duration {
	ceiling := p.BackoffMax
	if k-1 < 62 {
		if d := p.BackoffBase << (k - 1); d > 0 && d < ceiling {
			ceiling = d
		}
	}
	return time.Duration(r.rand() * float64(ceiling))
}
