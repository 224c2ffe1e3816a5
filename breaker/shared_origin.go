package breaker

import (
	"context"
	"time"
)

// With a Shared, an origin's gobreaker only detects trips from the
// closed state. Everything after a trip (the cooldown, the one probe, the
// re-open or the close) follows breaker_state: the cooldown ends at the
// cluster's open_until, the probe needs the cluster's lease, and a close
// decided by another instance replaces the gobreaker with a fresh one. While
// the database is unreachable the same half-open logic runs without the
// lease, so each instance's breaker decides alone.

// admitShared is admit with a Shared.
func (o *origin) admitShared(ctx context.Context) (func(error), uint64, error) {
	sh := o.reg.shared
	for range 2 { // once more after losing the lease race, with the winner's row
		vw := sh.View(o.name)
		now := o.reg.clock.Now()
		o.mu.Lock()
		o.syncLocked(vw, now)
		a := o.admitOverrideLocked(vw, now)
		if a == nil {
			a = o.admitCooldownLocked(vw, now)
		}
		if a != nil {
			o.mu.Unlock()
			o.flush()
			return a.done, a.seq, a.err
		}
		if o.eff == StateClosed {
			o.mu.Unlock()
			o.flush()
			return o.admitLocal()
		}
		// Half-open, the cooldown is over, and this instance may probe if
		// it holds the lease or can take it.
		if vw.Reachable && !(o.leaseHeld && now.Before(o.leaseUntil)) {
			if lost := o.takeLeaseLocked(ctx); lost {
				o.mu.Unlock()
				continue // the cache now holds the winner's row
			}
			now = o.reg.clock.Now()
		}
		if o.eff == StateOpen {
			o.queue(now, StateHalfOpen, Counts{}, 0)
		}
		o.probing++
		seq := o.openSeq
		o.budget.addCall(now)
		o.mu.Unlock()
		o.flush()
		return func(final error) { o.probeDone(seq, final) }, seq, nil
	}
	return nil, 0, o.lostLeaseRefusal()
}

// admission is admit's answer, when a step of admitShared decides it.
type admission struct {
	done func(error)
	seq  uint64
	err  error
}

// refused is the admission of a call refused with err.
func refused(err error) *admission { return &admission{err: err} }

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

// admitCooldownLocked refuses a call while the origin cools down, while this
// instance's probe slots are taken, or while another instance holds the
// cluster's probe lease; nil otherwise. Needs mu.
func (o *origin) admitCooldownLocked(vw SharedView, now time.Time) *admission {
	if now.Before(o.openUntil) {
		return refused(&OpenError{Origin: o.name, RetryAfter: o.openUntil.Sub(now)})
	}
	if o.eff == StateClosed {
		return nil
	}
	if o.probing >= o.policy.HalfOpenMaxCalls || o.leasing {
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

// takeLeaseLocked asks the cluster for the probe lease, releasing mu during
// the query, and reports whether another instance won it. A store that
// cannot be reached lets this instance probe on its own judgement, as a
// breaker without a Shared would. Needs mu; holds it again on return.
func (o *origin) takeLeaseLocked(ctx context.Context) (lost bool) {
	sh := o.reg.shared
	o.leasing = true
	opens := o.opens
	o.mu.Unlock()
	o.flush()
	won, err := sh.AcquireLease(context.WithoutCancel(ctx), o.name, opens)
	now := o.reg.clock.Now()
	o.mu.Lock()
	o.leasing = false
	if err == nil && !won {
		return true
	}
	if won {
		o.leaseHeld, o.leaseUntil = true, now.Add(sh.LeaseDuration())
		if o.leaseStop != nil {
			o.leaseStop()
		}
		o.leaseStop = sh.RenewLease(o.name)
		// Our own lease row is in the cache: sync it, so that an origin
		// closed meanwhile is open again here too.
		o.syncLocked(sh.View(o.name), now)
	}
	return false
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

// probeDone reports the outcome of a half-open probe admitted under seq.
func (o *origin) probeDone(seq uint64, final error) {
	now := o.reg.clock.Now()
	o.mu.Lock()
	o.probing--
	if seq != o.openSeq || o.eff != StateHalfOpen {
		// The verdict changed while the probe ran (another instance closed
		// or re-opened the origin, or an operator did): it no longer decides.
		o.mu.Unlock()
		o.flush()
		return
	}
	held := o.leaseHeld && now.Before(o.leaseUntil)
	switch final {
	case nil:
		o.probeOK++
		if o.probeOK < o.policy.HalfOpenMaxCalls {
			break
		}
		o.resetClosedLocked(now, "")
		if held {
			o.pubs = append(o.pubs, Publication{Kind: PublishClose, Origin: o.name})
		} else {
			// Decided without the lease (the database was away): the
			// cluster's row, if any, is settled by a probe under the lease.
			o.reg.shared.DropPending(o.name)
		}
	case errFailed:
		o.stopLeaseLocked()
		o.opens++
		d := o.openDuration()
		o.openUntil = now.Add(d)
		o.openSeq++
		o.probeOK = 0
		o.queue(now, StateOpen, Counts{Requests: 1, Failures: 1, ConsecutiveFailures: 1}, d)
		o.pubs = append(o.pubs, Publication{Kind: PublishOpen, Origin: o.name, Open: d, Opens: o.opens, LastError: o.lastErr})
	default: // neither: the probe decided nothing, so its slot and lease go back
		if o.probing == 0 && o.probeOK == 0 && o.leaseHeld {
			o.stopLeaseLocked()
			if held {
				o.pubs = append(o.pubs, Publication{Kind: PublishRelease, Origin: o.name})
			}
		}
	}
	o.mu.Unlock()
	o.flush()
}

// syncLocked brings the origin in line with the cached row when the row
// changed since the last sync. It acts on changes only: a row that turned
// open (or was re-opened) opens the origin until its open_until; a row that
// turned closed closes it. Comparing with the last row seen, not the local
// state, keeps a trip of this instance that the table has not recorded yet
// from being undone by a stale read. Needs mu.
func (o *origin) syncLocked(vw SharedView, now time.Time) {
	if vw.Gen == o.seenGen {
		return
	}
	prev := o.seen
	o.seen, o.seenGen = vw.Verdict, vw.Gen
	v := vw.Verdict
	switch {
	case v.open():
		o.opens = max(o.opens, v.ConsecutiveOpens)
		until := vw.Local(v.OpenUntil)
		switch {
		case o.eff == StateClosed:
			o.openSeq++
			o.probeOK = 0
			o.openUntil = until
			o.queueBy(now, StateOpen, Counts{}, max(until.Sub(now), 0), v.UpdatedBy)
		case !prev.open() || !v.OpenUntil.Equal(prev.OpenUntil):
			if o.eff == StateHalfOpen && now.Before(until) {
				// Re-opened elsewhere while this instance was half-open.
				o.stopLeaseLocked()
				o.openSeq++
				o.probeOK = 0
				o.queueBy(now, StateOpen, Counts{}, until.Sub(now), v.UpdatedBy)
			}
			o.openUntil = until
		}
	case prev.open() && o.eff != StateClosed:
		o.resetClosedLocked(now, v.UpdatedBy)
	}
}

// resetClosedLocked closes the origin with a fresh gobreaker (and so a fresh
// window): gobreaker has no reset, and its open or half-open state must not
// outlive the verdict. Needs mu.
func (o *origin) resetClosedLocked(now time.Time, by string) {
	o.stopLeaseLocked()
	o.cbGen++
	o.cb.Store(o.newBreaker(o.cbGen))
	o.openUntil = time.Time{}
	o.closedAt = now
	o.openSeq++
	o.probeOK = 0
	if o.eff != StateClosed {
		o.queueBy(now, StateClosed, Counts{}, 0, by)
	}
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
