package breaker

// Observer is told what the registry does, for metrics: every attempt, every
// logical call's result and every state change. The core calls it outside its
// locks and never waits for it; breaker/breakermetrics implements it with
// Prometheus collectors, so that the core imports no metrics client.
type Observer interface {
	// Attempt is called once per attempt with its (corrected) outcome.
	Attempt(origin string, outcome Outcome)
	// Call is called once per logical call with its result.
	Call(origin string, result CallResult)
	// StateChange is called once per state change, after it is logged.
	StateChange(ev StateChange)
}

// CallResult is what became of a logical call, as the breaker saw it.
type CallResult string

// Results of a logical call.
const (
	// CallSuccess and CallFailure are what the breaker counted.
	CallSuccess CallResult = "success"
	CallFailure CallResult = "failure"
	// CallNeither is a call that counted as neither (429s, cancellations).
	CallNeither CallResult = "neither"
	// CallRefused is a call the breaker refused: no request was sent.
	CallRefused CallResult = "refused"
)

// nopObserver is the Observer of a registry without one.
type nopObserver struct{}

func (nopObserver) Attempt(string, Outcome) {}
func (nopObserver) Call(string, CallResult) {}
func (nopObserver) StateChange(StateChange) {}
