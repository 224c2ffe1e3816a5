// Package testwait is how tests wait for an event: on a channel, with a
// ceiling that only catches a hang. Nothing that uses it asserts how fast
// the machine is; on a busy two-core machine an event may take seconds.
package testwait

import (
	"testing"
	"time"
)

// Hang bounds every wait of a test for an event. A test that reaches it
// has hung (the event never came); it is no measure of speed.
const Hang = 2 * time.Minute

// Await returns the next value of ch, or fails t after Hang.
func Await[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	timer := time.NewTimer(Hang)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("%s: still waiting after %s (a hang ceiling)", what, Hang)
	}
	var zero T
	return zero
}
