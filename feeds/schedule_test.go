package feeds

import (
	"fmt"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

func TestStartOffsetIsStableBoundedAndSpread(t *testing.T) {
	const interval = 24 * time.Hour
	seen := map[time.Duration]bool{}
	for i := range 50 {
		key := fmt.Sprintf("wake/layer%d", i)
		off := startOffset(key, interval, 2*time.Minute)
		if off != startOffset(key, interval, 2*time.Minute) {
			t.Fatalf("%s: offset differs between calls", key)
		}
		if off < 0 || off >= 2*time.Minute {
			t.Fatalf("%s: offset %s outside [0, 2m)", key, off)
		}
		seen[off.Truncate(time.Second)] = true
	}
	// Fifty feeds on one schedule must not land in a handful of seconds.
	if len(seen) < 30 {
		t.Errorf("50 feeds spread over only %d distinct seconds", len(seen))
	}
	// A short interval caps the window at half of it.
	if off := startOffset("wake/fast", 10*time.Second, 2*time.Minute); off >= 5*time.Second {
		t.Errorf("offset %s for a 10s interval, want < 5s", off)
	}
	if off := startOffset("wake/any", time.Hour, 0); off != 0 {
		t.Errorf("offset %s with jitter disabled", off)
	}
}

func TestJitteredScheduleShiftsEveryActivation(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	inner, err := cron.ParseStandard("0 5 * * *")
	if err != nil {
		t.Fatal(err)
	}
	inner.(*cron.SpecSchedule).Location = ny
	s := jitteredSchedule{inner: inner, offset: 90 * time.Second}

	now := time.Date(2026, 3, 1, 4, 0, 0, 0, ny)
	next := s.Next(now)
	if want := time.Date(2026, 3, 1, 5, 1, 30, 0, ny); !next.Equal(want) {
		t.Errorf("Next(%s) = %s, want %s", now, next, want)
	}
	// Between the cron time and the shifted time, the shifted time is next.
	if got := s.Next(time.Date(2026, 3, 1, 5, 0, 30, 0, ny)); !got.Equal(next) {
		t.Errorf("Next inside the offset = %s, want %s", got, next)
	}
	// Next is always strictly after its argument, which cron relies on.
	if got := s.Next(next); !got.After(next) {
		t.Errorf("Next(%s) = %s, not after it", next, got)
	}
}

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
