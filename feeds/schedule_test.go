package feeds

import (
	"fmt"
	"slices"
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

// firing is a scheduler on a fake clock whose jobs report their planned
// activation.
type firing struct {
	clock *FakeClock
	s     *scheduler
	fired chan string // "name@15:04:05"
}

func newFiring(t *testing.T, start time.Time) *firing {
	f := &firing{clock: NewFakeClock(start), fired: make(chan string, 100)}
	f.s = newScheduler(f.clock)
	t.Cleanup(func() { f.s.stop(); f.s.wait() })
	return f
}

func (f *firing) add(name string, sched cron.Schedule) int {
	return f.s.add(sched, func(planned time.Time) { f.fired <- name + "@" + planned.Format(time.TimeOnly) })
}

// next waits for the next job (a ceiling that only catches a hang).
func (f *firing) next(t *testing.T) string {
	t.Helper()
	select {
	case s := <-f.fired:
		return s
	case <-time.After(time.Minute): // a hang ceiling: the job is the event awaited
		t.Fatal("no job ran within a minute of moving the clock")
		return ""
	}
}

// The scheduler runs each entry once per activation, at the activation's
// time on its clock; a wake-up late by several activations runs the entry
// once, and its next activation follows the wake-up (cron's rule); a
// removed entry runs no more, an added one runs from its next activation.
func TestSchedulerRunsEachActivationOnceOnItsClock(t *testing.T) {
	f := newFiring(t, time.Date(2026, 6, 1, 12, 0, 10, 0, time.UTC))
	hourly := f.add("hourly", jitteredSchedule{inner: everySchedule{time.Hour}, offset: 90 * time.Second})
	f.s.start()

	// Each step moves the clock; the job that runs next proves that none
	// ran in between (one entry is due at a time here, so jobs report in
	// the order of their activations).
	at := func(hms string) time.Time {
		t.Helper()
		c, err := time.Parse(time.TimeOnly, hms)
		if err != nil {
			t.Fatal(err)
		}
		return time.Date(2026, 6, 1, c.Hour(), c.Minute(), c.Second(), 0, time.UTC)
	}
	for _, step := range []struct{ set, want string }{
		{"12:01:30", "hourly@12:01:30"},
		{"12:30:00", ""}, // no activation: the next job shows that none ran
		{"16:30:00", "hourly@13:01:30"},
		{"17:01:30", "hourly@17:01:30"}, // 14:01:30 to 16:01:30 are not replayed
	} {
		f.clock.Set(at(step.set))
		if step.want == "" {
			continue
		}
		if got := f.next(t); got != step.want {
			t.Fatalf("clock at %s: job %s, want %s", step.set, got, step.want)
		}
	}

	f.s.remove(hourly)
	f.add("quarter", everySchedule{15 * time.Minute}) // at 17:01:30
	for _, step := range []struct{ set, want string }{
		{"18:15:00", "quarter@17:15:00"}, // past hourly's 18:01:30, which is gone
		{"18:30:00", "quarter@18:30:00"},
	} {
		f.clock.Set(at(step.set))
		if got := f.next(t); got != step.want {
			t.Fatalf("clock at %s: job %s, want %s", step.set, got, step.want)
		}
	}

	// Stop returns once the loop has ended: nothing runs after it.
	f.s.stop()
	f.s.wait()
	f.clock.Set(time.Date(2026, 6, 2, 0, 0, 0, 0, time.UTC))
	select {
	case got := <-f.fired:
		t.Errorf("a job ran after stop: %s", got)
	default:
	}
}

// Entries added before start get their first activation from the clock at
// start, not at add; two entries due at one wake-up both run.
func TestSchedulerStartsFromTheClockAtStart(t *testing.T) {
	base := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	f := newFiring(t, base)
	f.add("a", everySchedule{time.Hour})
	f.add("b", everySchedule{30 * time.Minute})
	f.clock.Set(base.Add(3 * time.Hour)) // before start: nothing is due yet
	f.s.start()
	f.clock.Set(base.Add(4 * time.Hour))
	got := []string{f.next(t), f.next(t)}
	slices.Sort(got)
	if want := []string{"a@16:00:00", "b@15:30:00"}; !slices.Equal(got, want) {
		t.Errorf("jobs at 16:00: %v, want %v", got, want)
	}
}

// A heartbeat loop that fell behind beats once at once, then on its grid.
func TestNextBeat(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		now  time.Duration // after t0, the last beat
		want time.Duration
	}{
		{0, time.Minute},
		{30 * time.Second, time.Minute},
		{time.Minute, time.Minute},
		{150 * time.Second, 2 * time.Minute},
		{3 * time.Minute, 3 * time.Minute},
	} {
		if got := nextBeat(t0, t0.Add(c.now), time.Minute); !got.Equal(t0.Add(c.want)) {
			t.Errorf("now at +%s: next beat at +%s, want +%s", c.now, got.Sub(t0), c.want)
		}
	}
}

// everySchedule is what the config makes of "@every D": ticks at the
// multiples of D, the same in every process.
type everySchedule struct{ every time.Duration }

func (s everySchedule) Next(t time.Time) time.Time { return t.Truncate(s.every).Add(s.every) }
