package feeds

import (
	"sync"
	"time"
)

// FakeClock is a Clock that moves only when a test moves it (tests only;
// it is also a breaker.Clock). What waits on it (the scheduler, the
// heartbeat) wakes when Set or Advance reaches the time it waits for.
type FakeClock struct {
	mu     sync.Mutex
	now    time.Time
	alarms []alarm
}

type alarm struct {
	at time.Time
	ch chan time.Time
}

// NewFakeClock returns a clock that reads start (without its monotonic
// reading) until moved.
func NewFakeClock(start time.Time) *FakeClock { return &FakeClock{now: start.Round(0)} }

// Now implements Clock.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// At implements Clock.
func (c *FakeClock) At(t time.Time) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if !t.After(c.now) {
		ch <- c.now
		return ch
	}
	c.alarms = append(c.alarms, alarm{at: t, ch: ch})
	return ch
}

// Set moves the clock to t (never back) and wakes what waits for a time up
// to t. It returns at once: a test waits for the effect it is about (a
// tick's signal) rather than for Set.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.Before(c.now) {
		panic("feeds: FakeClock moved back from " + c.now.String() + " to " + t.String())
	}
	c.now = t
	kept := c.alarms[:0]
	for _, a := range c.alarms {
		if a.at.After(t) {
			kept = append(kept, a)
			continue
		}
		a.ch <- t // buffered, never sent to before
	}
	c.alarms = kept
}

// Advance moves the clock d ahead (see Set).
func (c *FakeClock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }
