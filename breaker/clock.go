package breaker

import "time"

// Clock tells the breaker the time: open deadlines, cooldown decay, retry
// budgets, 429 pauses, probe leases and the estimate of the database's clock
// all read it. The real clock is the default; tests pass a fake one so that
// a cooldown passes when they move the clock, not when they have slept
// through it.
//
// Waits (backoff, a 429's pause) sleep on real timers through the
// Registry's unexported sleep func, which the package's tests replace with
// one that waits on their fake clock; a context's deadline is always
// compared with the real clock, because that is the clock it was set on.
type Clock interface {
	Now() time.Time
}

// systemClock is the real clock.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// orSystem returns c, or the real clock when c is nil.
func orSystem(c Clock) Clock {
	if c == nil {
		return systemClock{}
	}
	return c
}

// pastDeadline reports whether waiting d would end after ctx's deadline.
// Deadlines are set on the real clock, whatever the breaker's Clock says.
func pastDeadline(deadline time.Time, hasDeadline bool, d time.Duration) bool {
	return hasDeadline && d > time.Until(deadline)
}
