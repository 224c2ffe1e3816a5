package breaker

import (
	"context"
	"time"

	"github.com/sony/gobreaker/v2"
)

// An origin's verdict is gobreaker's: its state machine (closed, open,
// half-open), its rolling window of Counts, ReadyToTrip with the origin's
// Policy, IsSuccessful and IsExcluded for what counts, MaxRequests probes in
// half-open, and OnStateChange, which drives the log, the Observer, the
// caller's hook and the shared publication. Around it the wrapper adds only
// what gobreaker cannot do:
//
//   - the cooldown: gobreaker's Timeout is fixed per breaker and read from
//     time.Now, while ingestd's open duration grows with consecutive opens,
//     carries jitter, follows the cluster's open_until and must pass on the
//     Registry's Clock. So gobreaker's Timeout is a nanosecond and the
//     wrapper refuses calls until openUntil without asking gobreaker; the
//     first call after it finds gobreaker ready to go half-open.
//   - a verdict from outside (another instance's open or close, a policy
//     change during a cooldown): gobreaker cannot be reset or set, so the
//     wrapper replaces it, by a fresh closed breaker for a close and by one
//     tripped at once for an open (forceOpenGated).
//   - the run of consecutive failures: gobreaker's ConsecutiveFailures lives
//     in its rolling window and is forgotten when the window rolls, so the
//     wrapper counts the run itself (origin.run) and ReadyToTrip reads it;
//     the failure ratio stays gobreaker's, in its window.
//   - the probe lease with a Shared (shared_origin.go).

// gobreakerTimeout is gobreaker's own open period. It is minimal because
// openUntil decides when the cooldown ends; gobreaker treats Timeout <= 0 as
// 60 s, hence one nanosecond rather than zero.
const gobreakerTimeout = time.Nanosecond

// forcedOpen is a verdict from outside that the next trip of a new
// gobreaker stands for: open until until, decided by by; quiet when the
// origin was open already (a policy change) and no event is due.
type forcedOpen struct {
	until time.Time
	by    string
	quiet bool
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
		// Do reports each call's final outcome (a *callReport): only a
		// Failure counts against the origin; a Success carrying a content
		// error (a 4xx, a page the feed cannot use) is the server's answer.
		IsSuccessful: func(err error) bool { return outcomeOf(err) == Success },
		// Throttled and Ignored calls count as neither; in half-open that
		// also gives the probe slot back (gobreaker v2.4.0 computes free
		// slots as Requests − TotalExclusions).
		IsExcluded: func(err error) bool {
			out := outcomeOf(err)
			return out == Throttled || out == Ignored
		},
	})
}

// readyToTrip runs under gobreaker's mutex after each failure in the closed
// state: the Policy's consecutive failures, counted by the wrapper across
// windows (origin.run, updated by the reporter just before), or its failure
// ratio over the decided calls of gobreaker's window.
func (o *origin) readyToTrip(gen uint64, c gobreaker.Counts) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if gen != o.gen {
		return false // a replaced breaker: its calls no longer decide anything
	}
	if o.forced != nil {
		return true // the synthetic failure of forceOpenGated
	}
	p := o.policy
	trip := p.ConsecutiveFailures > 0 && o.run >= p.ConsecutiveFailures
	if !trip && p.FailureRatio > 0 {
		// Calls still in flight or excluded are in Requests but decided
		// nothing, so the ratio is over decided calls only.
		decided := c.TotalSuccesses + c.TotalFailures
		trip = decided >= uint32(p.MinCalls) && float64(c.TotalFailures) >= p.FailureRatio*float64(decided)
	}
	if trip {
		// gobreaker clears its counts before OnStateChange runs; keep them
		// for the state-change event, with the wrapper's run.
		c.ConsecutiveFailures = uint32(o.run)
		o.tripCounts = c
	}
	return trip
}

// onStateChange runs under gobreaker's mutex, so it must not call back into
// the breaker: it updates the leaf state and queues the event (and the
// shared publication), which flush delivers once the gobreaker call has
// returned.
func (o *origin) onStateChange(gen uint64, from, to gobreaker.State) {
	now := o.reg.clock.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if gen != o.gen {
		return // a replaced breaker: its calls no longer decide anything
	}
	switch to {
	case gobreaker.StateOpen:
		if f := o.forced; f != nil {
			o.openForcedLocked(now, f)
			return
		}
		o.openLocked(now, from == gobreaker.StateClosed)
	case gobreaker.StateHalfOpen:
		// gobreaker's cooldown is a nanosecond and nothing asks it during
		// the wrapper's: this is the first probe after openUntil.
		o.queue(now, StateHalfOpen, Counts{}, 0)
	case gobreaker.StateClosed:
		o.closeLocked(now)
	}
}

// openLocked starts a cooldown after a trip (tripped) or a failed probe.
// Needs mu.
func (o *origin) openLocked(now time.Time, tripped bool) {
	if tripped && !o.closedAt.IsZero() {
		// A healthy spell forgives earlier opens: halve per OpenDecay.
		if steps := now.Sub(o.closedAt) / o.policy.OpenDecay; steps >= 63 {
			o.opens = 0
		} else {
			o.opens >>= uint(steps)
		}
	}
	o.stopLeaseLocked()
	o.opens++
	d := o.openDuration()
	o.openUntil = now.Add(d)
	o.openSeq++
	c := Counts{Requests: 1, Failures: 1, ConsecutiveFailures: 1} // a failed probe
	if tripped {
		c = countsOf(o.tripCounts)
	}
	o.queue(now, StateOpen, c, d)
	if o.reg.shared != nil {
		o.pubs = append(o.pubs, Publication{Kind: PublishOpen, Origin: o.name, Open: d, Opens: o.opens, LastError: o.lastErr})
	}
}

// openForcedLocked opens the origin for a verdict from outside. Needs mu.
func (o *origin) openForcedLocked(now time.Time, f *forcedOpen) {
	o.forced = nil
	o.stopLeaseLocked()
	o.openUntil = f.until
	o.openSeq++
	if f.quiet {
		o.state = StateOpen
		return
	}
	o.queueBy(now, StateOpen, Counts{}, max(f.until.Sub(now), 0), f.by)
}

// closeLocked closes the origin after its probes succeeded. With a Shared,
// a close decided under the cluster's lease closes the origin for
// everyone; one decided without it (the store was away) leaves the
// cluster's verdict to a probe under the lease. Needs mu.
func (o *origin) closeLocked(now time.Time) {
	o.closedAt = now
	o.openUntil = time.Time{}
	if o.reg.shared != nil {
		if o.leaseHeld && now.Before(o.leaseUntil) {
			o.pubs = append(o.pubs, Publication{Kind: PublishClose, Origin: o.name})
		} else {
			o.reg.shared.DropPending(o.name)
		}
	}
	o.stopLeaseLocked()
	o.queue(now, StateClosed, Counts{}, 0)
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

// forceOpenGated makes the origin open until until for a verdict from
// outside: gobreaker cannot be set, so a new one replaces cb and fails one
// synthetic call at once, which its ReadyToTrip turns into a trip; the
// first call after until then finds it ready to go half-open. Calls in
// flight report to the old breaker, whose hooks decide nothing. Needs gate,
// not mu.
func (o *origin) forceOpenGated(f forcedOpen) {
	o.mu.Lock()
	o.gen++
	gen := o.gen
	o.forced = &f
	o.endRunLocked()
	o.mu.Unlock()
	o.cb = o.newBreaker(gen)
	if done, err := o.cb.Allow(); err == nil {
		done(&callReport{outcome: Failure})
	}
}

// resetClosedLocked closes the origin with a fresh gobreaker (and so a fresh
// window) for a verdict from outside: gobreaker has no reset, and its open
// or half-open state must not outlive the verdict. Needs gate and mu.
func (o *origin) resetClosedLocked(now time.Time, by string) {
	o.stopLeaseLocked()
	o.gen++
	o.cb = o.newBreaker(o.gen)
	o.endRunLocked()
	o.forced = nil
	o.openUntil = time.Time{}
	o.closedAt = now
	o.openSeq++
	if o.state != StateClosed {
		o.queueBy(now, StateClosed, Counts{}, 0, by)
	}
}

// queue records a transition of state for delivery by flush. Needs mu.
func (o *origin) queue(now time.Time, to State, c Counts, retryAfter time.Duration) {
	o.queueBy(now, to, c, retryAfter, "")
}

// queueBy is queue for a transition decided by another instance (by), as
// read from the shared verdict. Needs mu.
func (o *origin) queueBy(now time.Time, to State, c Counts, retryAfter time.Duration, by string) {
	o.pending = append(o.pending, StateChange{
		Origin:           o.name,
		From:             o.state,
		To:               to,
		At:               now,
		Counts:           c,
		RetryAfter:       retryAfter,
		ConsecutiveOpens: o.opens,
		DecidedBy:        by,
	})
	o.state = to
	o.endRunLocked()
}

// endRunLocked forgets the run of failures at a change of state, and makes
// the calls admitted before it report to nobody's run. Needs mu.
func (o *origin) endRunLocked() {
	o.run = 0
	o.epoch++
}

// countRunGated adds a closed-state call's final outcome to the run of
// failures, before gobreaker hears of it (so that its ReadyToTrip reads the
// run): a Failure lengthens the run, a Success ends it, the other outcomes
// leave it be. A call admitted by a replaced breaker or before a change of
// state counts for nothing, as gobreaker drops it too. Needs gate.
func (o *origin) countRunGated(cb *gobreaker.TwoStepCircuitBreaker[struct{}], epoch uint64, final error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if cb != o.cb || epoch != o.epoch || o.state != StateClosed {
		return
	}
	switch outcomeOf(final) {
	case Failure:
		o.run++
	case Success:
		o.run = 0
	}
}

// tripOnRunGated trips cb when the run of failures has reached the
// Policy's count and cb is still closed: gobreaker drops the outcome of a
// call that began in an earlier window of its own (its generation rolled
// while the call ran), so a long failed call would not reach ReadyToTrip
// and the origin would wait for one more failure. One synthetic failure in
// the current window lets ReadyToTrip read the run; the trip is then an
// ordinary one (cooldown growth, state change, shared verdict). Needs gate.
func (o *origin) tripOnRunGated(cb *gobreaker.TwoStepCircuitBreaker[struct{}]) {
	o.mu.Lock()
	due := cb == o.cb && o.state == StateClosed && o.policy.ConsecutiveFailures > 0 && o.run >= o.policy.ConsecutiveFailures
	o.mu.Unlock()
	if !due || cb.State() != gobreaker.StateClosed {
		return
	}
	if done, err := cb.Allow(); err == nil {
		done(&callReport{outcome: Failure})
	}
}

// flush delivers queued state changes outside every lock. One goroutine
// delivers at a time, in order; a flush that finds another one delivering
// leaves its events to it, which also keeps a hook that calls back into the
// registry from deadlocking.
func (o *origin) flush() {
	o.mu.Lock()
	if pubs := o.pubs; len(pubs) > 0 {
		// Shared publications go out first and never wait: Publish does not block.
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
	o.gate.Lock()
	a := o.allowGated()
	o.gate.Unlock()
	o.flush()
	return a.done, a.seq, a.err
}

// allowGated refuses a call during the cooldown, and otherwise asks
// gobreaker, which refuses only half-open calls beyond its probe slots.
// Needs gate.
func (o *origin) allowGated() admission {
	now := o.reg.clock.Now()
	o.mu.Lock()
	if now.Before(o.openUntil) {
		err := &OpenError{Origin: o.name, RetryAfter: o.openUntil.Sub(now)}
		o.mu.Unlock()
		return admission{err: err}
	}
	o.mu.Unlock()
	cb := o.cb
	gbDone, err := cb.Allow()
	now = o.reg.clock.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil { // half-open with every probe slot taken
		return admission{err: &OpenError{Origin: o.name, RetryAfter: o.probeRefusalRetryAfter(now)}}
	}
	o.budget.addCall(now)
	return admission{done: o.reporter(cb, gbDone, o.epoch), seq: o.openSeq}
}

// reporter returns the done func of a call admitted by cb at epoch: it
// reports the final outcome to the run of failures and to cb under gate,
// then delivers what that changed.
func (o *origin) reporter(cb *gobreaker.TwoStepCircuitBreaker[struct{}], gbDone func(error), epoch uint64) func(error) {
	return func(final error) {
		o.gate.Lock()
		o.countRunGated(cb, epoch, final)
		gbDone(final)
		o.tripOnRunGated(cb)
		if out := outcomeOf(final); (out == Throttled || out == Ignored) && o.reg.shared != nil && cb == o.cb {
			o.releaseIdleLeaseGated()
		}
		o.gate.Unlock()
		o.flush()
	}
}

// stillAdmitted returns an *OpenError if the origin was declared open after
// the call was admitted (by other calls) and has not closed since.
func (o *origin) stillAdmitted(seq uint64) error {
	defer o.flush()
	var vw SharedView
	if o.reg.shared != nil {
		vw = o.reg.shared.View(o.name)
	}
	now := o.reg.clock.Now()
	if o.reg.shared != nil {
		o.gate.Lock()
		vw = o.syncGated(vw, now)
		o.gate.Unlock()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	switch vw.Verdict.EffectiveOverride(vw.DBNow(now)) {
	case OverrideOpen:
		return o.overrideRefusal(vw, now)
	case OverrideClosed:
		return nil
	}
	if o.openSeq != seq && o.state != StateClosed {
		return &OpenError{Origin: o.name, RetryAfter: o.refusalRetryAfter(now)}
	}
	return nil
}
