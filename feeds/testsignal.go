package feeds

import "time"

// testSignal is a hook that a test waits on, as River's testsignal: a
// component signals an event ("a tick ran", "a sweep ended"), a no-op until
// a test initialises the signal, so that the test waits for the event it
// is about instead of for time to pass.
type testSignal[T any] struct {
	ch chan T // nil in production
}

// testSignalBuffer is how many events a test may leave unread; a test that
// leaves more is told so (signal panics) rather than blocking the manager.
const testSignalBuffer = 1000

// init makes the signal record its events (tests only).
func (s *testSignal[T]) init() { s.ch = make(chan T, testSignalBuffer) }

// signal records v for a waiting test; without init it does nothing.
func (s *testSignal[T]) signal(v T) {
	if s.ch == nil {
		return
	}
	select {
	case s.ch <- v:
	default:
		panic("feeds: a test signal's buffer is full: the test does not read its signals")
	}
}

// managerSignals are the Manager's test signals (see export_test.go).
type managerSignals struct {
	// ran: a scheduled tick, a catch-up or a recovery's poll of a feed
	// has ended, and how.
	ran testSignal[tickRun]
	// swept: the recovery loop has ended a heartbeat and its sweep.
	swept testSignal[time.Time]
	// originWaiting: a feed's tick (or poll) waits for its origin's
	// poll slot (WithOriginPollSlots), by the feed's key.
	originWaiting testSignal[string]
}

// tickRun is what a tick (or a catch-up) of a feed came to, as the
// manager's test signal reports it.
type tickRun struct {
	// Key is the feed's "jurisdiction/feed".
	Key string
	// Planned is the tick's planned activation; zero for a catch-up.
	Planned time.Time
	// Outcome is "polled" (whatever the poll's own outcome), or why the
	// tick was skipped: "running", "parked", "claimed", "error",
	// "origin_busy", "stopped".
	Outcome string
}
