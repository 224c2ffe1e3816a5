package breaker

import (
	"context"
	"time"
)

// With a Shared, an origin's gobreaker still decides what it decides alone
// (trips, probes, closes); the cluster adds three things. A verdict read
// from the cache forces the local breaker (another instance's open opens
// it until the cluster's open_until, its close closes it). A half-open
// probe needs the cluster's lease, so that one instance probes for all.
// And every open or close decided here is published. While the store is
// unreachable the probes go out without the lease, so each instance's
// breaker decides alone.

// admitShared is admit with a Shared.
func (o *origin) admitShared(ctx context.Context) (func(error), uint64, error) {
	sh := o.reg.shared
	for range 2 { // once more after losing the lease race, with the winner's row
		vw := sh.View(o.name)
		now := o.reg.clock.Now()
		o.gate.Lock()
		vw = o.syncGated(vw, now)
		a, needLease := o.admitSharedGated(vw, now)
		if needLease {
			if lost := o.takeLeaseGated(ctx); lost {
				o.gate.Unlock()
				o.flush()
				continue // the cache now holds the winner's row
			}
			a = o.allowGated()
		}
		o.gate.Unlock()
		o.flush()
		return a.done, a.seq, a.err
	}
	return nil, 0, o.lostLeaseRefusal()
}

// admission is admit's answer.
type admission struct {
	done func(error)
	seq  uint64
	err  error
}

// refused is the admission of a call refused with err.
func refused(err error) *admission { return &admission{err: err} }

// admitSharedGated decides a call from the cached verdict, or reports that
// the probe lease must be taken first. Needs gate.
func (o *origin) admitSharedGated(vw SharedView, now time.Time) (a admission, needLease bool) {
	o.mu.Lock()
	decided := o.admitOverrideLocked(vw, now)
	if decided == nil {
		decided = o.admitCooldownLocked(vw, now)
	}
	needLease = decided == nil && o.state != StateClosed && vw.Reachable && !(o.leaseHeld && now.Before(o.leaseUntil))
	o.mu.Unlock()
	switch {
	case decided != nil:
		return *decided, false
	case needLease:
		return admission{}, true
	}
	return o.allowGated(), false
}

// admitOverrideLocked decides a call under an operator's override; nil
// when none is in force. Needs mu.
func (o *origin) admitOverrideLocked(vw SharedView, now time.Time) *admission {
	switch vw.Verdict.EffectiveOverride(vw.DBNow(now)) {
	case OverrideOpen:
		return refused(o.overrideRefusal(vw, now))
	case OverrideClosed:
		// The operator vouches for the origin: no breaker at all, so the
		// call reports nothing (pacing still applies in attempt).
		o.budget.addCall(now)
		return &admission{done: func(error) {}, seq: o.openSeq}
	}
	return nil
}

// admitCooldownLocked refuses a call while the origin cools down, while
// this instance asks for the lease, or while another instance holds the
// cluster's probe lease; nil otherwise. Needs mu.
func (o *origin) admitCooldownLocked(vw SharedView, now time.Time) *admission {
	if now.Before(o.openUntil) {
		return refused(&OpenError{Origin: o.name, RetryAfter: o.openUntil.Sub(now)})
	}
	if o.state == StateClosed {
		return nil
	}
	if o.leasing {
		return refused(&OpenError{Origin: o.name, RetryAfter: o.probeRefusalRetryAfter(now)})
	}
	if vw.Reachable && !(o.leaseHeld && now.Before(o.leaseUntil)) {
		v, dbNow := vw.Verdict, vw.DBNow(now)
		if v.open() && v.ProbeOwner != "" && v.ProbeOwner != o.reg.shared.InstanceID() && dbNow.Before(v.ProbeUntil) {
			return refused(&OpenError{Origin: o.name, RetryAfter: v.ProbeUntil.Sub(dbNow)})
		}
	}
	return nil
}

// takeLeaseGated asks the cluster for the probe lease, releasing gate during
// the query, and reports whether another instance won it. A store that
// cannot be reached lets this instance probe on its own judgement, as a
// breaker without a Shared would. Needs gate; holds it again on return.
func (o *origin) takeLeaseGated(ctx context.Context) (lost bool) {
	sh := o.reg.shared
	o.mu.Lock()
	o.leasing = true
	// The row this call decided from: the query runs without gate, and by
	// the time it does another instance may have probed and closed the
	// origin, which the store must not take for a row this instance's open
	// never reached.
	opens, seen := o.opens, o.seen.Version
	o.mu.Unlock()
	o.gate.Unlock()
	o.flush()
	won, err := sh.AcquireLease(context.WithoutCancel(ctx), o.name, opens, seen)
	o.gate.Lock()
	now := o.reg.clock.Now()
	o.mu.Lock()
	o.leasing = false
	if err == nil && !won {
		o.mu.Unlock()
		return true
	}
	if won {
		o.leaseHeld, o.leaseUntil = true, now.Add(sh.LeaseDuration())
		if o.leaseStop != nil {
			o.leaseStop()
		}
		o.leaseStop = sh.RenewLease(o.name)
	}
	o.mu.Unlock()
	if won {
		// Our own lease row is in the cache: sync it, so that an origin
		// closed meanwhile is open again here too.
		o.syncGated(sh.View(o.name), now)
	}
	return false
}

// releaseIdleLeaseGated gives the lease back when a probe decided nothing
// and no other probe of this instance is in flight or has succeeded: the
// lease must not hold the cluster back for a probe that never came. Needs
// gate.
func (o *origin) releaseIdleLeaseGated() {
	o.mu.Lock()
	halfOpen := o.state == StateHalfOpen
	o.mu.Unlock()
	if !halfOpen {
		return
	}
	if c := o.cb.Counts(); c.Requests > c.TotalExclusions {
		return // a probe is in flight, or has succeeded
	}
	now := o.reg.clock.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.leaseHeld {
		return
	}
	held := now.Before(o.leaseUntil)
	o.stopLeaseLocked()
	if held {
		o.pubs = append(o.pubs, Publication{Kind: PublishRelease, Origin: o.name})
	}
}

// lostLeaseRefusal is the refusal of a call that lost the lease race twice:
// the winner's probe decides within its lease.
func (o *origin) lostLeaseRefusal() error {
	vw := o.reg.shared.View(o.name)
	now := o.reg.clock.Now()
	retry := o.policy.OpenBase
	if dbNow := vw.DBNow(now); vw.Verdict.open() {
		if dbNow.Before(vw.Verdict.ProbeUntil) {
			retry = vw.Verdict.ProbeUntil.Sub(dbNow)
		} else if dbNow.Before(vw.Verdict.OpenUntil) {
			retry = vw.Verdict.OpenUntil.Sub(dbNow)
		}
	}
	return &OpenError{Origin: o.name, RetryAfter: retry}
}

// syncGated brings the origin in line with the cached row when the row
// changed since the last sync, and returns the view the caller is to decide
// with. It acts on changes only: a row that turned open (or was re-opened)
// opens the origin until its open_until; a row that turned closed closes
// it. Comparing with the last row seen, not the local state, keeps a trip
// of this instance that the table has not recorded yet from being undone by
// a stale read.
//
// Callers read vw before they take gate, so another goroutine may have
// synced a newer row meanwhile. A view older than the row last synced is
// history, not news: adopting it would take back what the newer row said
// (a close adopted from the prober would turn into the stale open before
// it, and this instance would take the lease of a closed origin and hold
// the cluster open). It is replaced by the cache as it stands now, read
// under gate and so at least as new. Needs gate, not mu.
func (o *origin) syncGated(vw SharedView, now time.Time) SharedView {
	o.mu.Lock()
	if vw.Gen < o.seenGen {
		o.mu.Unlock()
		vw = o.reg.shared.View(o.name)
		o.mu.Lock()
	}
	if vw.Gen == o.seenGen {
		o.mu.Unlock()
		return vw
	}
	prev := o.seen
	o.seen, o.seenGen = vw.Verdict, vw.Gen
	v := vw.Verdict
	var force *forcedOpen
	switch {
	case v.open():
		o.opens = max(o.opens, v.ConsecutiveOpens)
		until := vw.Local(v.OpenUntil)
		switch {
		case o.state == StateClosed:
			force = &forcedOpen{until: until, by: v.UpdatedBy}
		case !prev.open() || !v.OpenUntil.Equal(prev.OpenUntil):
			if o.state == StateHalfOpen && now.Before(until) {
				// Re-opened elsewhere while this instance was half-open.
				force = &forcedOpen{until: until, by: v.UpdatedBy}
			} else {
				o.openUntil = until
			}
		}
	case prev.open() && o.state != StateClosed:
		o.resetClosedLocked(now, v.UpdatedBy)
	}
	o.mu.Unlock()
	if force != nil {
		o.forceOpenGated(*force)
	}
	return vw
}

// stopLeaseLocked forgets the lease and stops renewing it. Needs mu.
func (o *origin) stopLeaseLocked() {
	o.leaseHeld = false
	if o.leaseStop != nil {
		o.leaseStop()
		o.leaseStop = nil
	}
}

// overrideRefusal is the refusal under an open override: until it lapses,
// or, for an override without end, OpenMax, so that parked work comes back
// at the pace of the longest open rather than never. Needs mu.
func (o *origin) overrideRefusal(vw SharedView, now time.Time) *OpenError {
	retry := o.policy.OpenMax
	if until := vw.Local(vw.Verdict.OverrideUntil); !until.IsZero() {
		retry = until.Sub(now)
	}
	return &OpenError{Origin: o.name, RetryAfter: retry, Override: true, Reason: vw.Verdict.OverrideReason}
}

// probeRefusalRetryAfter is the RetryAfter of a call refused while this
// instance probes: the probe decides within the lease. Needs mu.
func (o *origin) probeRefusalRetryAfter(now time.Time) time.Duration {
	if o.leaseHeld && now.Before(o.leaseUntil) {
		return o.leaseUntil.Sub(now)
	}
	return o.refusalRetryAfter(now)
}

// noteError keeps the error of a failed call for breaker_state.last_error.
func (o *origin) noteError(err error) {
	if o.reg.shared == nil || err == nil {
		return
	}
	msg := o.reg.shared.RedactError(err)
	o.mu.Lock()
	o.lastErr = msg
	o.mu.Unlock()
}
