package feeds

import "time"

// TickRun is what a tick or a catch-up of a feed came to (the manager's
// test signal).
type TickRun = tickRun

// Signals are a Manager's test signals, for package feeds_test.
type Signals struct {
	// Ran receives one TickRun for every tick, catch-up and recovery
	// poll that has ended (its poll recorded, its claim released).
	Ran <-chan TickRun
	// Swept receives the beat of every heartbeat and sweep of the
	// recovery loop that has ended.
	Swept <-chan time.Time
	// OriginWaiting receives the key of every feed whose tick or poll
	// begins to wait for its origin's poll slot.
	OriginWaiting <-chan string
}

// WithSignals makes the manager report its events to sig (tests only).
func WithSignals(sig *Signals) Option {
	return func(m *Manager) {
		m.signals.ran.init()
		m.signals.swept.init()
		m.signals.originWaiting.init()
		sig.Ran, sig.Swept, sig.OriginWaiting = m.signals.ran.ch, m.signals.swept.ch, m.signals.originWaiting.ch
	}
}
