package deadletter

import (
	"errors"
	"fmt"
	"time"
)

// Reason says why a poll was parked.
type Reason string

// Reasons, as stored in dead_letter.reason.
const (
	// ReasonCircuitOpen: the origin's breaker refused a request without
	// touching the network.
	ReasonCircuitOpen Reason = "circuit_open"
	// ReasonFailed: a request failed after its retries on a closed breaker.
	ReasonFailed Reason = "failed"
)

// Status is where a dead letter stands.
type Status string

// Statuses, as stored in dead_letter.status.
const (
	StatusPending   Status = "pending"
	StatusReplaying Status = "replaying"
	StatusDone      Status = "done"
	StatusAbandoned Status = "abandoned"
)

// ParseStatus checks s against the known statuses.
func ParseStatus(s string) (Status, error) {
	switch st := Status(s); st {
	case StatusPending, StatusReplaying, StatusDone, StatusAbandoned:
		return st, nil
	}
	return "", fmt.Errorf("deadletter: unknown status %q (want pending, replaying, done or abandoned)", s)
}

// Checkpoint is where a parked poll resumes: the staged poll whose pages are
// kept, and the first page not staged yet.
type Checkpoint struct {
	// PollID is the staged poll (polls.id); 0 when nothing was staged.
	PollID int64
	// Page is the 0-based page to resume at.
	Page int
	// At is when the staged poll started: a checkpoint too old restarts
	// from the first page rather than mixing old and new pages.
	At time.Time
}

// Letter is one row of dead_letter.
type Letter struct {
	ID           int64
	Jurisdiction string
	Feed         string
	// URL is the refused or failed request, credentials redacted.
	URL        string
	Origin     string
	Reason     Reason
	RetryAfter time.Time
	// Attempts counts the replays tried so far.
	Attempts   int
	Status     Status
	LastError  string
	Checkpoint Checkpoint
	ClaimedBy  string
	LeaseUntil time.Time // zero unless replaying
	CreatedAt  time.Time
	UpdatedAt  time.Time
	FinishedAt time.Time // zero until done or abandoned

	// LastAttempt is set by the Replayer on the letter it hands to a
	// ReplayFunc when a deferral would abandon the row: the replay should
	// then release what the checkpoint holds instead of keeping it.
	LastAttempt bool
}

// Key returns "jurisdiction/feed".
func (l *Letter) Key() string { return l.Jurisdiction + "/" + l.Feed }

// Parking is what Park stores, and what a DeferError asks a replay's row to
// become.
type Parking struct {
	Jurisdiction string
	Feed         string
	URL          string // credentials redacted
	Origin       string
	Reason       Reason
	RetryAfter   time.Time
	Checkpoint   Checkpoint
	// Err is why; its text becomes last_error.
	Err error
}

// DeferError is returned by a ReplayFunc (and by feeds for a first poll)
// when a poll should be parked rather than failed: the replay was refused by
// an open breaker or failed after retries. Unwrap gives the cause, so
// errors.As still finds the *breaker.OpenError or *breaker.RetryError.
type DeferError struct {
	Parking
}

func (e *DeferError) Error() string {
	return fmt.Sprintf("deadletter: %s/%s parked (%s) until %s at page %d: %v", e.Jurisdiction, e.Feed,
		e.Reason, e.RetryAfter.UTC().Format(time.RFC3339), e.Checkpoint.Page, e.Err)
}

// Unwrap returns the cause.
func (e *DeferError) Unwrap() error { return e.Err }

// ErrNotNow is returned (wrapped) by a ReplayFunc that cannot replay the
// letter at this moment for a reason that is nobody's fault (the feed is
// being polled in this process, the instance is stopping): the row goes back
// to pending as it was, without counting an attempt.
var ErrNotNow = errors.New("deadletter: replay cannot run now")

// ErrAlreadyOpen is returned (wrapped) when parking a feed whose open dead
// letter is being replayed by some instance: that replay owns the feed's
// position, and a second one beside it would diverge.
var ErrAlreadyOpen = errors.New("deadletter: the feed's dead letter is being replayed")

// ErrNotFound is returned (wrapped) for an id with no row.
var ErrNotFound = errors.New("deadletter: no such dead letter")

// maxErrorLen bounds last_error: some servers answer with whole HTML pages.
const maxErrorLen = 4000

// errorText is err's text for last_error: redacted (every URL, and every
// secret by value), cut to maxErrorLen bytes.
func (q *Queue) errorText(err error) string {
	if err == nil {
		return ""
	}
	// Redacted before the cut: a cut URL or secret would no longer be
	// recognised.
	msg := q.secrets.Error(err)
	if len(msg) > maxErrorLen {
		cut := maxErrorLen
		for cut > 0 && msg[cut]&0xC0 == 0x80 { // keep UTF-8 whole
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return msg
}
