package breaker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sony/gobreaker/v2"
	"golang.org/x/sync/semaphore"
	"golang.org/x/time/rate"

	"github.com/ingestd/ingestd/pollbudget"
)

// State is the breaker state of an origin as ingestd sees it.
type State int

const (
	// StateClosed admits calls and counts their outcomes.
	StateClosed State = iota
	// StateOpen refuses calls without touching the network until the cooldown ends.
	StateOpen
	// StateHalfOpen admits up to HalfOpenMaxCalls probes that decide the next state.
	StateHalfOpen
)

// String returns "closed", "open" or "half-open".
func (s State) String() string {
	switch s {
	case StateClosed:
		return "closed"
	case StateOpen:
		return "open"
	case StateHalfOpen:
		return "half-open"
	}
	return "unknown"
}

// Counts are the outcomes of the logical calls in the breaker's current
// window (closed) or generation (half-open), except ConsecutiveFailures:
// the failed calls in a row since the last success while closed, however
// far apart they were (see origin.run).
type Counts struct {
	Requests            uint32
	Successes           uint32
	Failures            uint32
	ConsecutiveFailures uint32
}

func countsOf(c gobreaker.Counts) Counts {
	return Counts{
		Requests:            c.Requests,
		Successes:           c.TotalSuccesses,
		Failures:            c.TotalFailures,
		ConsecutiveFailures: c.ConsecutiveFailures,
	}
}

// callReport is what a logical call reports to gobreaker: its final
// outcome and error. gobreaker's IsSuccessful and IsExcluded read the
// outcome, which the AttemptFunc classified (httpcall: a content error of
// a healthy server, such as a 404 or an undecodable page, is a Success with
// an error), so that only the origin's failures count against it.
type callReport struct {
	outcome Outcome
	err     error
}

func (r *callReport) Error() string {
	if r.err == nil {
		return "breaker: call " + r.outcome.String()
	}
	return "breaker: call " + r.outcome.String() + ": " + r.err.Error()
}

// outcomeOf is the outcome a report to gobreaker carries; nil is a success.
func outcomeOf(err error) Outcome {
	var r *callReport
	switch {
	case err == nil:
		return Success
	case errors.As(err, &r):
		return r.outcome
	}
	return Failure
}

// origin is the state of one origin: its gobreaker (see state.go), what the
// wrapper adds around it, its pacing and, with a Shared, its part of the
// cluster's verdict (see shared_origin.go).
//
// Lock order: gate, then gobreaker's own mutex, then mu. gate serializes
// every use of cb with the checks before it; mu is a leaf lock: nothing
// calls into gobreaker, sleeps or logs while holding it, which is what lets
// gobreaker's hooks (run under gobreaker's mutex) take it.
type origin struct {
	name     string
	policy   Policy
	reg      *Registry
	limiter  *rate.Limiter       // nil: unlimited
	inflight *semaphore.Weighted // nil: no per-origin cap

	// gate guards cb. gobreaker's own cooldown is a nanosecond (see
	// gobreakerTimeout): without gate, a trip by one call between another
	// call's cooldown check and its Allow would let that call in as a probe.
	gate sync.Mutex
	// cb decides the verdict. It is replaced, never reset (gobreaker has no
	// reset), when a verdict from outside forces a state: gen tells the
	// hooks of a replaced breaker that they no longer speak for the origin.
	cb *gobreaker.TwoStepCircuitBreaker[struct{}]

	mu  sync.Mutex
	gen uint64
	// state is cb's state as its OnStateChange last reported it (or as a
	// forced verdict set it): what callers see, except that an open origin
	// refuses until openUntil while gobreaker's nanosecond has long passed.
	state      State
	openUntil  time.Time
	openSeq    uint64 // incremented on every open, so a call can tell it was opened under it
	opens      int    // consecutive opens, the growth factor of the open duration
	closedAt   time.Time
	tripCounts gobreaker.Counts
	// run is the number of logical calls in a row that failed while the
	// origin was closed, whatever the time between them: gobreaker's own
	// ConsecutiveFailures lives in its rolling window and forgets a failure
	// once the window has rolled past it, so a dead origin polled less
	// often than once per Window would never trip. A Success resets it, and
	// so does every change of state; epoch counts those changes, so that a
	// call admitted before one reports to nobody's run.
	run         int
	epoch       uint64
	forced      *forcedOpen // the verdict the next trip of cb stands for (see forceOpenGated)
	pausedUntil time.Time   // origin paused by a 429 until then
	pauseSpan   time.Duration
	pacer       pacer
	budget      budget
	pending     []StateChange
	delivering  bool

	// With a Shared (see shared_origin.go): the last cached row synced into
	// this origin, the probe lease this instance holds, the publications to
	// hand to the Shared, and the error of the last failed call for the
	// verdict's last_error.
	seen       Verdict
	seenGen    uint64
	leaseHeld  bool
	leaseUntil time.Time
	leasing    bool
	leaseStop  func()
	pubs       []Publication
	lastErr    string
}

func newOrigin(r *Registry, name string, p Policy) *origin {
	o := &origin{name: name, policy: p, reg: r, pacer: pacer{target: p.TargetConcurrency}}
	// Ten buckets make the window roll in tenths rather than reset at once.
	bucket := max(p.Window/10, time.Millisecond)
	o.budget = newBudget(bucket, 10)
	o.gen = 1
	o.cb = o.newBreaker(o.gen)
	if p.RateLimit > 0 {
		o.limiter = rate.NewLimiter(rate.Limit(p.RateLimit), p.Burst)
	}
	if p.MaxInFlightPerOrigin > 0 {
		o.inflight = semaphore.NewWeighted(int64(p.MaxInFlightPerOrigin))
	}
	return o
}

// pause holds back attempts to the origin for d, capped by MaxRetryAfter.
func (o *origin) pause(d time.Duration) {
	d = min(d, o.policy.MaxRetryAfter)
	if d <= 0 {
		return
	}
	until := o.reg.clock.Now().Add(d)
	o.mu.Lock()
	if until.After(o.pausedUntil) {
		o.pausedUntil = until
		o.pauseSpan = d
	}
	o.mu.Unlock()
}

// waitPause sleeps while the origin is paused, each waiter adding its own
// jitter of up to a fifth of the pause so that parallel callers do not all
// resume in the same instant.
func (o *origin) waitPause(ctx context.Context) error {
	for {
		o.mu.Lock()
		until, span := o.pausedUntil, o.pauseSpan
		o.mu.Unlock()
		wait := until.Sub(o.reg.clock.Now())
		if wait <= 0 {
			return nil
		}
		if dl, ok := ctx.Deadline(); pastDeadline(dl, ok, wait) {
			// Sleeping would end the caller's time in a wait: let it park.
			return &ThrottledError{Origin: o.name, RetryAfter: wait}
		}
		wait += time.Duration(o.reg.rand() * float64(span) / 5)
		if err := o.reg.sleep(ctx, wait); err != nil {
			return err
		}
		o.mu.Lock()
		extended := o.pausedUntil.After(until)
		o.mu.Unlock()
		if !extended {
			return nil
		}
	}
}

// acquire waits for the origin's pause, its spacing by response times
// (TargetConcurrency), its rate limiter and an in-flight slot (the origin's first, then the global one, so
// that callers queued on a busy origin hold no global slot). The returned
// func releases the slots and the pacing's count of the attempt.
func (o *origin) acquire(ctx context.Context) (release func(), err error) {
	if err := o.waitPause(ctx); err != nil {
		return nil, err
	}
	// Waiting in line for the origin's rate and the in-flight slots is not
	// the caller's work: a poll's budget stands still meanwhile (its queue
	// bound runs instead), so a poll queued behind others does not time out
	// before it has asked anything. A 429's pause above is the server's
	// word, and counts.
	// Only a real wait is bracketed: a slot free at once costs the poll's
	// budget no bookkeeping, and its row no queue_wait.
	var endWait func()
	wait := func() {
		if endWait == nil {
			endWait = pollbudget.Waiting(ctx)
		}
	}
	defer func() {
		if endWait != nil {
			endWait()
		}
	}()
	if err := o.pace(ctx, wait); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			o.unpace()
		}
	}()
	if o.limiter != nil && !o.limiter.Allow() {
		wait()
		if err := o.limiter.Wait(ctx); err != nil {
			if qe := pollbudget.QueueCause(ctx); qe != nil {
				return nil, qe
			}
			if ctx.Err() == nil {
				// The limiter refuses at once a wait that would pass the
				// deadline (here, the queue bound's); its own message
				// ("rate: Wait(n=1) would exceed context deadline") would
				// read as the cause of a failure.
				return nil, ErrPastDeadline
			}
			return nil, err
		}
	}
	if o.inflight != nil && !o.inflight.TryAcquire(1) {
		wait()
		if err := o.inflight.Acquire(ctx, 1); err != nil {
			return nil, queueErr(ctx, err)
		}
	}
	if !o.reg.sem.TryAcquire(1) {
		wait()
		if err := o.reg.sem.Acquire(ctx, 1); err != nil {
			if o.inflight != nil {
				o.inflight.Release(1)
			}
			return nil, queueErr(ctx, err)
		}
	}
	return func() {
		o.reg.sem.Release(1)
		if o.inflight != nil {
			o.inflight.Release(1)
		}
		o.unpace()
	}, nil
}

// pace takes the attempt's start from the origin's pacer and sleeps until
// it, calling waiting first if it has to. A start past ctx's deadline is
// given back at once with ErrPastDeadline, as the rate limiter does.
func (o *origin) pace(ctx context.Context, waiting func()) error {
	now := o.reg.clock.Now()
	o.mu.Lock()
	d, prev := o.pacer.reserve(now)
	o.mu.Unlock()
	if d <= 0 {
		return nil
	}
	if dl, ok := ctx.Deadline(); pastDeadline(dl, ok, d) {
		o.mu.Lock()
		o.pacer.unreserve(now.Add(d), prev)
		o.mu.Unlock()
		return ErrPastDeadline
	}
	waiting()
	if err := o.reg.sleep(ctx, d); err != nil {
		o.mu.Lock()
		o.pacer.unreserve(now.Add(d), prev)
		o.mu.Unlock()
		return queueErr(ctx, err)
	}
	return nil
}

// unpace ends the attempt's count in the pacer.
func (o *origin) unpace() {
	o.mu.Lock()
	o.pacer.active--
	o.mu.Unlock()
}

// observeLatency gives the pacer the duration of an attempt that reached
// the origin and was answered (ok) or failed.
func (o *origin) observeLatency(d time.Duration, ok bool) {
	o.mu.Lock()
	o.pacer.observe(d, ok)
	o.mu.Unlock()
}

// queueErr is err, or the *pollbudget.QueueError that ended ctx while it
// waited for a slot: the semaphore reports only ctx.Err().
func queueErr(ctx context.Context, err error) error {
	if qe := pollbudget.QueueCause(ctx); qe != nil {
		return qe
	}
	return err
}

// snapshot returns the origin's state for Registry.Snapshot.
func (o *origin) snapshot() OriginState {
	var vw SharedView
	if o.reg.shared != nil {
		vw = o.reg.shared.View(o.name)
	}
	now := o.reg.clock.Now()
	o.gate.Lock()
	if o.reg.shared != nil {
		vw = o.syncGated(vw, now)
	}
	o.mu.Lock()
	closed := o.state == StateClosed
	o.mu.Unlock()
	if closed {
		o.cb.State() // rolls the window forward before the counts are read
	}
	c := o.cb.Counts()
	o.gate.Unlock()
	o.mu.Lock()
	defer o.mu.Unlock()
	s := OriginState{
		Origin:           o.name,
		State:            o.state,
		Counts:           countsOf(c),
		ConsecutiveOpens: o.opens,
	}
	if o.state == StateClosed {
		s.Counts.ConsecutiveFailures = uint32(o.run)
	}
	if now.Before(o.openUntil) {
		s.State = StateOpen
		s.OpenUntil = o.openUntil
	} else if o.state == StateOpen {
		s.State = StateHalfOpen // cooldown over; the next call probes
	}
	if now.Before(o.pausedUntil) {
		s.PausedUntil = o.pausedUntil
	}
	if ov := vw.Verdict.EffectiveOverride(vw.DBNow(now)); ov != OverrideNone {
		s.Override = ov
		s.OverrideUntil = vw.Local(vw.Verdict.OverrideUntil)
		s.OverrideReason = vw.Verdict.OverrideReason
	}
	if vw.Verdict.ProbeOwner != "" && vw.DBNow(now).Before(vw.Verdict.ProbeUntil) {
		s.ProbeOwner = vw.Verdict.ProbeOwner
	}
	return s
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
