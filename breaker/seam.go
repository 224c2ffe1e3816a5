package breaker

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Shared is the seam to verdicts shared with other instances (Config.Shared).
// The core asks it only for what it caches and hands it what to publish;
// breaker/pgshare implements it on PostgreSQL. Every method but
// AcquireLease returns at once: a caller's path never waits on I/O except
// for the probe lease, which its implementation bounds.
type Shared interface {
	// Clock is the clock the shared state times its cache with; a Registry
	// without a Clock of its own uses it, since cached times are converted
	// between the shared store's clock and this one.
	Clock() Clock
	// InstanceID is this instance's name in the shared verdicts.
	InstanceID() string
	// View returns the cached verdict of origin.
	View(origin string) SharedView
	// AcquireLease tries to take origin's half-open probe lease and reports
	// whether it won; either way the cache then holds the row as it stands.
	// seen is the Version of the row the caller decided from: a row that
	// is closed is taken only at that version (the caller's own open never
	// reached the store), not when another instance closed it since. An
	// error means the store is unreachable.
	AcquireLease(ctx context.Context, origin string, opens int, seen int64) (won bool, err error)
	// RenewLease keeps origin's lease alive while the probe runs; the
	// returned func stops renewing.
	RenewLease(origin string) (stop func())
	// LeaseDuration is how long a lease lasts unless renewed.
	LeaseDuration() time.Duration
	// Publish hands a verdict to the store without blocking.
	Publish(Publication)
	// DropPending forgets an unwritten publication of origin that a local
	// decision made moot.
	DropPending(origin string)
	// RedactError is err's text as the store may keep it.
	RedactError(err error) string
}

// PublicationKind is what an instance tells the cluster about an origin.
type PublicationKind int

const (
	// PublishOpen: the origin tripped here, or its probe failed: open it for everyone.
	PublishOpen PublicationKind = iota
	// PublishClose: this instance's probe succeeded under its lease: close it for everyone.
	PublishClose
	// PublishRelease: this instance's probe decided nothing: give the lease back.
	PublishRelease
)

// Publication is one verdict handed to Shared.Publish.
type Publication struct {
	Kind   PublicationKind
	Origin string
	// Open is the open duration and Opens the count of consecutive opens
	// (PublishOpen only); LastError is the failed call's redacted error.
	Open      time.Duration
	Opens     int
	LastError string
}

// SharedView is what an origin needs from the shared cache for one decision.
type SharedView struct {
	Verdict Verdict
	// Exists is true when a row exists (or existed: a deleted row reads as closed).
	Exists bool
	// Gen grows whenever the cached row changes: of two views of one
	// origin, the one with the lower Gen is the older.
	Gen uint64
	// Skew is the store's clock minus the local clock.
	Skew      time.Duration
	Reachable bool
}

// DBNow is the store clock's now, estimated from the local clock.
func (vw SharedView) DBNow(local time.Time) time.Time { return local.Add(vw.Skew) }

// Local converts a store timestamp to the local clock.
func (vw SharedView) Local(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Add(-vw.Skew)
}

// Override is an operator's manual verdict on an origin.
type Override int

const (
	// OverrideNone lets the breaker decide.
	OverrideNone Override = iota
	// OverrideOpen refuses every call to the origin.
	OverrideOpen
	// OverrideClosed admits every call to the origin without consulting the
	// breaker (pacing and in-flight caps still apply).
	OverrideClosed
)

// String returns "none", "open" or "closed", as stored in breaker_state.override.
func (o Override) String() string {
	switch o {
	case OverrideNone:
		return "none"
	case OverrideOpen:
		return "open"
	case OverrideClosed:
		return "closed"
	}
	return fmt.Sprintf("override(%d)", int(o))
}

// ErrBadOverride is wrapped by errors about an override value or request.
var ErrBadOverride = errors.New("breaker: bad override")

// ParseOverride parses "none" (or "auto"), "open" or "closed".
func ParseOverride(s string) (Override, error) {
	switch s {
	case "none", "auto", "":
		return OverrideNone, nil
	case "open":
		return OverrideOpen, nil
	case "closed":
		return OverrideClosed, nil
	}
	return OverrideNone, fmt.Errorf("%w: %q (want none, open or closed)", ErrBadOverride, s)
}

// Verdict is the cluster's verdict on an origin (one row of breaker_state).
// Times are the shared store's clock.
type Verdict struct {
	Origin           string
	State            State
	OpenedAt         time.Time
	OpenUntil        time.Time
	ConsecutiveOpens int
	// ProbeOwner holds the probe lease until ProbeUntil.
	ProbeOwner string
	ProbeUntil time.Time
	// Override as stored; see EffectiveOverride for whether it has lapsed.
	Override       Override
	OverrideUntil  time.Time
	OverrideReason string
	OverrideBy     string
	OverrideAt     time.Time
	UpdatedAt      time.Time
	UpdatedBy      string
	LastError      string
	// Version grows with every write of the row.
	Version int64
}

// EffectiveOverride returns the override in force at now (store clock):
// OverrideNone once OverrideUntil has passed.
func (v Verdict) EffectiveOverride(now time.Time) Override {
	if v.Override != OverrideNone && (v.OverrideUntil.IsZero() || now.Before(v.OverrideUntil)) {
		return v.Override
	}
	return OverrideNone
}

// open reports whether the verdict holds the origin open or half-open.
func (v Verdict) open() bool { return v.Origin != "" && v.State != StateClosed }
