package breaker

import (
	"context"
	"sync"
	"sync/atomic"
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
// window (closed) or generation (half-open).
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

// errNeither is reported to gobreaker for calls that must not count: it is
// excluded, which in half-open also gives the probe slot back
// (gobreaker v2.4.0 computes free slots as Requests − TotalExclusions).
var errNeither = errOutcome("neither")

// errFailed is reported to gobreaker for a call whose final outcome is Failure.
var errFailed = errOutcome("failure")

type errOutcome string

func (e errOutcome) Error() string { return "breaker: outcome " + string(e) }

// origin is the state of one origin. Lock order: gobreaker's own mutex, then
// mu. mu is a leaf lock: nothing calls into gobreaker, sleeps or logs while
// holding it, which is what lets gobreaker's hooks (run under gobreaker's
// mutex) take it.
type origin struct {
	name   string
	policy Policy
	reg    *Registry
	// cb is replaced (never mutated from outside) when a shared verdict
	// closes the origin, because gobreaker cannot be reset; cbGen tells the
	// hooks of a replaced breaker that they no longer speak for the origin.
	cb       atomic.Pointer[gobreaker.TwoStepCircuitBreaker[struct{}]]
	limiter  *rate.Limiter       // nil: unlimited
	inflight *semaphore.Weighted // nil: no per-origin cap

	mu    sync.Mutex
	cbGen uint64
	// eff is the state callers see. It differs from gobreaker's while the
	// cooldown runs: gobreaker's Timeout is fixed per breaker, so it is set to
	// almost nothing and openUntil, which grows with repeated opens, gates
	// admission instead.
	eff         State
	openUntil   time.Time
	openSeq     uint64 // incremented on every trip, so a call can tell it was opened under it
	opens       int    // consecutive opens, the growth factor of the open duration
	closedAt    time.Time
	tripCounts  gobreaker.Counts
	pausedUntil time.Time // origin paused by a 429 until then
	pauseSpan   time.Duration
	budget      budget
	pending     []StateChange
	delivering  bool

	// With a Shared (see shared_origin.go): the last cached row synced
	// into this origin, the half-open probes this instance runs, the probe
	// lease it holds, the writes to hand to the Shared, and the error
	// of the last failed call for breaker_state.last_error.
	seen       Verdict
	seenGen    uint64
	probing    int
	probeOK    int
	leaseHeld  bool
	leaseUntil time.Time
	leasing    bool
	leaseStop  context.CancelFunc
	pubs       []Publication
	lastErr    string
}

// gobreakerTimeout is gobreaker's own open period. It is minimal because
// openUntil decides when the cooldown ends; gobreaker treats Timeout <= 0 as
// 60 s, hence one nanosecond rather than zero.
const gobreakerTimeout = time.Nanosecond

func newOrigin(r *Registry, name string, p Policy) *origin {
	o := &origin{name: name, policy: p, reg: r}
	// Ten buckets make the window roll in tenths rather than reset at once.
	bucket := max(p.Window/10, time.Millisecond)
	o.budget = newBudget(bucket, 10)
	o.cbGen = 1
	o.cb.Store(o.newBreaker(o.cbGen))
	if p.RateLimit > 0 {
		o.limiter = rate.NewLimiter(rate.Limit(p.RateLimit), p.Burst)
	}
	if p.MaxInFlightPerOrigin > 0 {
		o.inflight = semaphore.NewWeighted(int64(p.MaxInFlightPerOrigin))
	}
	return o
}

// newBreaker returns a closed gobreaker whose hooks act for generation gen.
func (o *origin) newBreaker(gen uint64) *gobreaker.TwoStepCircuitBreaker[struct{}] {
	p := o.policy
	return gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:         o.name,
		MaxRequests:  uint32(p.HalfOpenMaxCalls),
		Interval:     p.Window,
		BucketPeriod: max(p.Window/10, time.Millisecond),
		Timeout:      gobreakerTimeout,
		ReadyToTrip:  func(c gobreaker.Counts) bool { return o.readyToTrip(gen, c) },
		OnStateChange: func(_ string, from, to gobreaker.State) {
			o.onStateChange(gen, from, to)
		},
		IsSuccessful: func(err error) bool { return err == nil },
		IsExcluded:   func(err error) bool { return err == errNeither },
	})
}

// readyToTrip runs under gobreaker's mutex after each failure in the closed state.
func (o *origin) readyToTrip(gen uint64, c gobreaker.Counts) bool {
	p := o.policy
	trip := p.ConsecutiveFailures > 0 && c.ConsecutiveFailures >= uint32(p.ConsecutiveFailures)
	if !trip && p.FailureRatio > 0 {
		// Calls still in flight or excluded are in Requests but decided
		// nothing, so the ratio is over decided calls only.
		decided := c.TotalSuccesses + c.TotalFailures
		trip = decided >= uint32(p.MinCalls) && float64(c.TotalFailures) >= p.FailureRatio*float64(decided)
	}
	if trip {
		// gobreaker clears its counts before OnStateChange runs; keep them
		// for the state-change event.
		o.mu.Lock()
		if gen == o.cbGen {
			o.tripCounts = c
		}
		o.mu.Unlock()
	}
	return trip
}

// onStateChange runs under gobreaker's mutex, so it must not call back into
// the breaker: it updates the leaf state and queues the event, which flush
// delivers once the gobreaker call has returned.
func (o *origin) onStateChange(gen uint64, from, to gobreaker.State) {
	now := o.reg.clock.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if gen != o.cbGen {
		return // a replaced breaker: its calls no longer decide anything
	}
	switch to {
	case gobreaker.StateOpen:
		if o.eff == StateClosed && !o.closedAt.IsZero() {
			// A healthy spell forgives earlier opens: halve per OpenDecay.
			if steps := now.Sub(o.closedAt) / o.policy.OpenDecay; steps >= 63 {
				o.opens = 0
			} else {
				o.opens >>= uint(steps)
			}
		}
		o.opens++
		d := o.openDuration()
		o.openUntil = now.Add(d)
		o.openSeq++
		c := Counts{Requests: 1, Failures: 1, ConsecutiveFailures: 1} // a failed probe
		if from == gobreaker.StateClosed {
			c = countsOf(o.tripCounts)
		}
		o.queue(now, StateOpen, c, d)
		if o.reg.shared != nil {
			o.pubs = append(o.pubs, Publication{Kind: PublishOpen, Origin: o.name, Open: d, Opens: o.opens, LastError: o.lastErr})
		}
	case gobreaker.StateClosed:
		o.closedAt = now
		o.openUntil = time.Time{}
		o.queue(now, StateClosed, Counts{}, 0)
	case gobreaker.StateHalfOpen:
		// gobreaker's own cooldown is a nanosecond; the half-open state callers
		// see begins when admit lets the first probe through after openUntil.
	}
}

// openDuration is OpenBase per consecutive open, capped by OpenMax, with ±20%
// jitter so that origins tripped together do not probe together. Needs mu.
func (o *origin) openDuration() time.Duration {
	p := o.policy
	d := p.OpenMax
	if o.opens <= int(p.OpenMax/p.OpenBase) {
		d = p.OpenBase * time.Duration(o.opens)
	}
	d = time.Duration(float64(d) * (0.8 + 0.4*o.reg.rand()))
	return min(d, p.OpenMax)
}

// queue records a transition of eff for delivery by flush. Needs mu.
func (o *origin) queue(now time.Time, to State, c Counts, retryAfter time.Duration) {
	o.queueBy(now, to, c, retryAfter, "")
}

// queueBy is queue for a transition decided by another instance (by), as
// read from breaker_state. Needs mu.
func (o *origin) queueBy(now time.Time, to State, c Counts, retryAfter time.Duration, by string) {
	o.pending = append(o.pending, StateChange{
		Origin:           o.name,
		From:             o.eff,
		To:               to,
		At:               now,
		Counts:           c,
		RetryAfter:       retryAfter,
		ConsecutiveOpens: o.opens,
		DecidedBy:        by,
	})
	o.eff = to
}

// flush delivers queued state changes outside every lock. One goroutine
// delivers at a time, in order; a flush that finds another one delivering
// leaves its events to it, which also keeps a hook that calls back into the
// registry from deadlocking.
func (o *origin) flush() {
	o.mu.Lock()
	if pubs := o.pubs; len(pubs) > 0 {
		// Shared writes go out first and never wait: enqueue does not block.
		o.pubs = nil
		o.mu.Unlock()
		for _, w := range pubs {
			o.reg.shared.Publish(w)
		}
		o.mu.Lock()
	}
	if o.delivering || len(o.pending) == 0 {
		o.mu.Unlock()
		return
	}
	o.delivering = true
	o.mu.Unlock()
	finished := false
	defer func() {
		if !finished { // a hook panicked: let the next flush deliver
			o.mu.Lock()
			o.delivering = false
			o.mu.Unlock()
		}
	}()
	for {
		o.mu.Lock()
		evs := o.pending
		o.pending = nil
		if len(evs) == 0 {
			o.delivering = false
			o.mu.Unlock()
			finished = true
			return
		}
		o.mu.Unlock()
		for _, ev := range evs {
			o.reg.emit(ev)
		}
	}
}

// refusalRetryAfter is the RetryAfter of a refused call. Needs mu.
func (o *origin) refusalRetryAfter(now time.Time) time.Duration {
	if now.Before(o.openUntil) {
		return o.openUntil.Sub(now)
	}
	// Cooldown over but the probe slots are taken: the probes decide within
	// one attempt's time; if they fail, the next probe is at least OpenBase away.
	return o.policy.OpenBase
}

// admit asks the breaker for one logical call. It returns the done func that
// reports the call's final outcome, and the trip sequence at admission.
func (o *origin) admit(ctx context.Context) (func(error), uint64, error) {
	if o.reg.shared != nil {
		return o.admitShared(ctx)
	}
	return o.admitLocal()
}

// admitLocal is admission by this process's breaker alone.
func (o *origin) admitLocal() (func(error), uint64, error) {
	now := o.reg.clock.Now()
	o.mu.Lock()
	if now.Before(o.openUntil) {
		err := &OpenError{Origin: o.name, RetryAfter: o.openUntil.Sub(now)}
		o.mu.Unlock()
		return nil, 0, err
	}
	o.mu.Unlock()

	done, err := o.cb.Load().Allow()
	o.flush()
	now = o.reg.clock.Now()
	o.mu.Lock()
	if err != nil { // half-open with every probe slot taken, or tripped just now
		err := &OpenError{Origin: o.name, RetryAfter: o.refusalRetryAfter(now)}
		o.mu.Unlock()
		return nil, 0, err
	}
	if now.Before(o.openUntil) || (o.reg.shared != nil && o.eff != StateClosed) {
		// Another call tripped the breaker between the check above and Allow,
		// and gobreaker's nanosecond cooldown let this call in as a probe:
		// give the slot back without deciding anything. (With a Shared
		// gobreaker never probes: admitShared runs the half-open state.)
		err := &OpenError{Origin: o.name, RetryAfter: o.openUntil.Sub(now)}
		o.mu.Unlock()
		done(errNeither)
		o.flush()
		return nil, 0, err
	}
	if o.eff == StateOpen {
		// First probe after the cooldown.
		o.queue(now, StateHalfOpen, Counts{}, 0)
	}
	seq := o.openSeq
	o.budget.addCall(now)
	o.mu.Unlock()
	o.flush()
	return done, seq, nil
}

// stillAdmitted returns an *OpenError if the origin was declared open after
// the call was admitted (by other calls) and has not closed since.
func (o *origin) stillAdmitted(seq uint64) error {
	var vw SharedView
	if o.reg.shared != nil {
		vw = o.reg.shared.View(o.name)
	}
	now := o.reg.clock.Now()
	o.mu.Lock()
	defer o.flush()
	defer o.mu.Unlock()
	if o.reg.shared != nil {
		o.syncLocked(vw, now)
		switch vw.Verdict.EffectiveOverride(vw.DBNow(now)) {
		case OverrideOpen:
			return o.overrideRefusal(vw, now)
		case OverrideClosed:
			return nil
		}
	}
	if o.openSeq != seq && o.eff != StateClosed {
		return &OpenError{Origin: o.name, RetryAfter: o.refusalRetryAfter(now)}
	}
	return nil
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

// acquire waits for the origin's pause, its rate limiter and an in-flight
// slot (the origin's first, then the global one, so that callers queued on a
// busy origin hold no global slot). The returned func releases the slots.
func (o *origin) acquire(ctx context.Context) (func(), error) {
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
	}, nil
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
	cb := o.cb.Load()
	cb.State() // rolls the window forward before the counts are read
	c := cb.Counts()
	var vw SharedView
	if o.reg.shared != nil {
		vw = o.reg.shared.View(o.name)
	}
	now := o.reg.clock.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.reg.shared != nil {
		o.syncLocked(vw, now)
	}
	s := OriginState{
		Origin:           o.name,
		State:            o.eff,
		Counts:           countsOf(c),
		ConsecutiveOpens: o.opens,
	}
	if now.Before(o.openUntil) {
		s.State = StateOpen
		s.OpenUntil = o.openUntil
	} else if o.eff == StateOpen {
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
