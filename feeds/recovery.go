package feeds

import (
	"context"
	"time"
)

// Recovery finds and finishes the work of instances that died (kill -9, an
// OOM kill, a panic, a lost database connection): their claims and the polls
// they left running. *postgis.Store implements it; see WithRecovery.
type Recovery interface {
	// Heartbeat records that owner (host:pid, in PID namespace pidNS) is
	// alive for ttl from now.
	Heartbeat(ctx context.Context, owner, pidNS string, ttl time.Duration) error
	// Retire deletes owner's liveness row: at a clean shutdown, or once a
	// dead owner's work is finished.
	Retire(ctx context.Context, owner string) error
	// Activity lists every claim and every running poll, and every owner
	// whose heartbeat lapsed (with no feed), with their owners' liveness.
	Activity(ctx context.Context) ([]Activity, error)
	// Interrupt ends a: a running poll is recorded as failed with cause and
	// its staging deleted (kept when the poll is an open dead letter's
	// checkpoint, for its replay), and the feed's claim by a.Owner is
	// released. A claim whose tick's poll did not succeed is forgotten
	// whole, so that the feed may be claimed again at once; one whose poll
	// succeeded keeps its claim time, so that the tick is not polled twice.
	// A poll that finished meanwhile is left alone.
	Interrupt(ctx context.Context, a Activity, cause error) (Interruption, error)
}

// Interruption is what Recovery.Interrupt ended.
type Interruption struct {
	// Ended is set when a running poll or a claim was ended.
	Ended bool
	// TickDone is set when the claim's tick had been polled successfully
	// before its owner died (it died before releasing the claim): the feed
	// is fresh and is not polled again.
	TickDone bool
	// Parked is set when the ended poll is an open dead letter's
	// checkpoint: the dead-letter replayer resumes it, and a fresh poll
	// now would only stand in the replay's way.
	Parked bool
}

// Activity is a claim or a running poll as the database records it.
type Activity struct {
	// Owner is the instance (host:pid) holding it; "" for a poll recorded
	// without one.
	Owner              string
	Jurisdiction, Feed string
	// PollID is the running poll; 0 for a claim (or a lapsed owner with
	// nothing to end, Feed "").
	PollID int64
	// Age is, for a poll, the time since it became running; for a claim,
	// since it was claimed.
	Age time.Duration
	// LeaseExpired is set for a claim whose lease ran out.
	LeaseExpired bool
	// Liveness is what the owner's heartbeat says.
	Liveness Liveness
	// PidNS is the owner's PID namespace, from its heartbeat ("" without
	// one): its pid means something only in that namespace.
	PidNS string
}

// Key returns "jurisdiction/feed".
func (a Activity) Key() string { return a.Jurisdiction + "/" + a.Feed }

// Liveness is what an owner's heartbeat row says of it.
type Liveness int

// Liveness values.
const (
	// LivenessUnknown: the owner has no heartbeat row (a one-off command,
	// an older ingestd, or an instance that shut down cleanly).
	LivenessUnknown Liveness = iota
	// LivenessFresh: the owner renewed its heartbeat within its TTL.
	LivenessFresh
	// LivenessLapsed: the owner's heartbeat is older than its TTL.
	LivenessLapsed
)
