package config

import (
	"testing"
	"time"
)

// "@every" ticks are the same in every process, whenever it started: several
// instances claim the same tick instead of each firing its own.
func TestEveryIsAnchoredToTheClock(t *testing.T) {
	c, problem := parseCron("@every 2s", time.UTC)
	if problem != "" {
		t.Fatal(problem)
	}
	base := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, started := range []time.Duration{0, 300 * time.Millisecond, time.Second, 1700 * time.Millisecond} {
		if got, want := c.Next(base.Add(started)), base.Add(2*time.Second); !got.Equal(want) {
			t.Errorf("started at +%s: next tick %s, want %s", started, got.Format("15:04:05.000"), want.Format("15:04:05.000"))
		}
	}
	if got := c.Next(base.Add(2 * time.Second)); !got.Equal(base.Add(4 * time.Second)) {
		t.Errorf("next after a tick: %s, want the one after", got.Format("15:04:05.000"))
	}
}
