package feeds

// PollStatus is the state of a poll, as polls.status holds it. The values
// are those the migrations' polls_status_check allows (the store's tests
// compare the two), so Go code names a state the database accepts.
type PollStatus string

// The states of a poll.
const (
	// PollRunning: begun or resumed, pages being staged.
	PollRunning PollStatus = "running"
	// PollSucceeded: applied; its snapshot is the feed's features.
	PollSucceeded PollStatus = "succeeded"
	// PollFailed: ended by an error, or suspended with its staging kept
	// for a resume.
	PollFailed PollStatus = "failed"
	// PollRefused: an open circuit breaker refused it; its staging is
	// kept for a resume.
	PollRefused PollStatus = "refused"
	// PollHeld: a guard holds its snapshot until an operator decides.
	PollHeld PollStatus = "held"
	// PollRejected: an operator rejected its held snapshot, or the
	// snapshot was lost before it could be accepted.
	PollRejected PollStatus = "rejected"
	// PollSuperseded: it was held, and a newer snapshot of the feed
	// applied or was held.
	PollSuperseded PollStatus = "superseded"
)

// PollStatuses lists every PollStatus.
func PollStatuses() []PollStatus {
	return []PollStatus{PollRunning, PollSucceeded, PollFailed, PollRefused, PollHeld, PollRejected, PollSuperseded}
}
