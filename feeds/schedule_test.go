package feeds

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/ingestd/ingestd/config"
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

// everyFleet is a configuration of n feeds on "@every every", fifty to a
// jurisdiction as in the scale benchmark, plus one feed on a cron spec.
func everyFleet(t *testing.T, n int, every time.Duration) *config.Config {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "defaults:\n  schedule: \"@every %s\"\njurisdictions:\n", every)
	for i := range n {
		if i%50 == 0 {
			fmt.Fprintf(&b, "  - id: j%d\n    feeds:\n", i/50)
		}
		fmt.Fprintf(&b, "      - {id: f%d, kind: geojson, url: \"https://data.example.org/f%d.geojson\"}\n", i, i)
	}
	b.WriteString("  - id: daily\n    feeds:\n      - {id: parcels, kind: geojson, url: \"https://data.example.org/p.geojson\", schedule: \"0 5 * * *\"}\n")
	cfg, err := config.Parse("fleet.yaml", []byte(b.String()), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// firstTicks schedules cfg's "@every every" feeds as the manager does on a
// scheduler whose clock reads start, moves the clock one interval on, and
// returns the activation each feed's first tick was planned for: it is the
// tick that comes when the moved clock reaches it, and every feed has one
// within an interval.
func firstTicks(t *testing.T, cfg *config.Config, start time.Time, every time.Duration) map[string]time.Time {
	t.Helper()
	clock := NewFakeClock(start)
	s := newScheduler(clock)
	defer func() { s.stop(); s.wait() }()
	type tick struct {
		key     string
		planned time.Time
	}
	var feeds []*config.Feed
	for _, f := range cfg.Feeds() {
		if isEvery(f.Schedule) {
			feeds = append(feeds, f)
		}
	}
	ticks := make(chan tick, len(feeds))
	for _, f := range feeds {
		key := f.Key()
		s.add(feedSchedule(f, start, DefaultMaxJitter), func(planned time.Time) { ticks <- tick{key, planned} })
	}
	s.start()
	clock.Set(start.Add(every))
	got := make(map[string]time.Time, len(feeds))
	for range feeds {
		select {
		case tk := <-ticks:
			if _, twice := got[tk.key]; twice {
				t.Fatalf("%s ticked twice within one interval", tk.key)
			}
			if !tk.planned.After(start) {
				t.Fatalf("%s: first tick planned at %s, not after the start %s", tk.key, tk.planned, start)
			}
			got[tk.key] = tk.planned
		case <-time.After(time.Minute): // a hang ceiling: the ticks are the events awaited
			t.Fatalf("%d of %d feeds ticked within the first interval", len(got), len(feeds))
		}
	}
	return got
}

// A thousand feeds on "@every 5m" tick at phases spread over the whole
// five minutes, not in a burst at its start; every instance gives a feed
// the same phase whenever it started, and so does a restart days later.
func TestEveryPhasesSpreadOverTheIntervalAndHold(t *testing.T) {
	t.Parallel()
	const n, every = 1000, 5 * time.Minute
	cfg := everyFleet(t, n, every)
	phase := func(at time.Time) time.Duration { return at.Sub(at.Truncate(every)) }

	a := firstTicks(t, cfg, time.Date(2026, 6, 1, 12, 0, 7, 0, time.UTC), every)
	var perMinute [5]int
	for _, at := range a {
		perMinute[phase(at)/time.Minute]++
	}
	t.Logf("first ticks of %d feeds per minute of every 5: %v", n, perMinute)
	for m, c := range perMinute {
		// Even would be 200 a minute; a hash of 1,000 keys strays by a few
		// dozen, a phase capped at two minutes puts 500 in each of the first two.
		if c > n/4 || c < n/10 {
			t.Errorf("minute %d of every 5 holds %d of %d first ticks, want between %d and %d (per minute: %v)",
				m, c, n, n/10, n/4, perMinute)
		}
	}

	// A second instance started 3m34s later, and a restart two days on.
	for _, start := range []time.Time{
		time.Date(2026, 6, 1, 12, 3, 41, 0, time.UTC),
		time.Date(2026, 6, 3, 8, 17, 0, 500, time.UTC),
	} {
		b := firstTicks(t, cfg, start, every)
		if len(b) != len(a) {
			t.Fatalf("started at %s: %d feeds ticked, want %d", start, len(b), len(a))
		}
		for key, at := range a {
			if phase(b[key]) != phase(at) {
				t.Errorf("%s: phase %s when started at %s, %s in the first instance", key, phase(b[key]), start, phase(at))
			}
		}
	}

	// A cron spec keeps its short window: "0 5 * * *" still means shortly after five.
	for _, f := range cfg.Feeds() {
		if isEvery(f.Schedule) {
			continue
		}
		s := feedSchedule(f, time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), DefaultMaxJitter)
		if s.offset != startOffset(f.Key(), 24*time.Hour, DefaultMaxJitter) || s.offset >= DefaultMaxJitter {
			t.Errorf("%s on %q: offset %s, want the cron window's %s", f.Key(), f.Schedule, s.offset, startOffset(f.Key(), 24*time.Hour, DefaultMaxJitter))
		}
	}
	// Jitter off is off for "@every" as well.
	if f := cfg.Feeds()[0]; feedSchedule(f, time.Now(), 0).offset != 0 {
		t.Errorf("%s: offset with jitter disabled", f.Key())
	}
}
