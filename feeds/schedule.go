package feeds

import (
	"cmp"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/ingestd/ingestd/config"
)

// DefaultMaxJitter bounds the start offset of a feed within a cron-spec
// schedule ("@every" schedules are spread over their whole interval).
const DefaultMaxJitter = 2 * time.Minute

// jitteredSchedule shifts every activation of a schedule by a fixed offset.
// Shifting the input by -offset and the output by +offset keeps Next strictly
// after t, which cron relies on.
type jitteredSchedule struct {
	inner  cron.Schedule
	offset time.Duration
}

func (s jitteredSchedule) Next(t time.Time) time.Time {
	next := s.inner.Next(t.Add(-s.offset))
	if next.IsZero() {
		return next
	}
	return next.Add(s.offset)
}

// startOffset is the feed's deterministic phase inside its schedule, as in
// Prometheus's scrape loop: a hash of the feed's identity, so fifty feeds on
// "0 5 * * *" spread over a window instead of hitting one county at 05:00:00,
// and the spread is the same after every restart. The window is half the
// interval, capped at maxJitter, so "0 5 * * *" still means "shortly after five".
func startOffset(key string, interval, maxJitter time.Duration) time.Duration {
	return keyPhase(key, min(interval/2, maxJitter))
}

// everyOffset is the phase of a feed on "@every D" inside D: spread over
// the whole interval, not over a window at its start. "@every 5m" promises
// a poll every five minutes, not at a time of day, so nothing is lost by
// placing a feed anywhere in the five; capped like a cron spec's offset,
// five thousand feeds would fall into the first two minutes of every five
// and leave three idle. The phase depends on the key and D only: every
// instance gives the feed the same one (the ticks are anchored to the
// clock, see config's everySchedule), and so does a restart. A maxJitter
// of 0 turns the offset off for these schedules as well.
func everyOffset(key string, every, maxJitter time.Duration) time.Duration {
	if maxJitter <= 0 {
		return 0
	}
	return keyPhase(key, every)
}

// keyPhase hashes key to a duration in [0, window); 0 when window is not
// positive.
func keyPhase(key string, window time.Duration) time.Duration {
	if window <= 0 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return time.Duration(h.Sum64() % uint64(window))
}

// feedSchedule is f's schedule as the scheduler runs it: its activations
// shifted by the feed's phase (everyOffset for "@every D", startOffset for
// a cron spec).
func feedSchedule(f *config.Feed, now time.Time, maxJitter time.Duration) jitteredSchedule {
	interval := f.ExpectedInterval(now)
	offset := startOffset(f.Key(), interval, maxJitter)
	if isEvery(f.Schedule) {
		offset = everyOffset(f.Key(), interval, maxJitter)
	}
	return jitteredSchedule{inner: f.Cron, offset: offset}
}

// isEvery reports whether spec is an "@every D" schedule (config reads
// it, spaces included, the same way).
func isEvery(spec string) bool {
	return strings.HasPrefix(strings.TrimSpace(spec), "@every ")
}

// Clock is the time a Manager reads and waits on: the scheduler's ticks,
// the heartbeat, and every time a poll records or compares (see
// WithClock). The default is the real clock; a test passes a fake one and
// moves it, so that a tick comes when the test says, not when the machine
// gets there.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// At returns a channel that receives once the clock reads t or later
	// (at once when it already does). An absolute time, not a duration:
	// a fake clock moved between reading Now and calling At still fires.
	At(t time.Time) <-chan time.Time
}

// systemClock is the real clock.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// At waits on a runtime timer; one abandoned before it fires is collected
// (Go 1.23 timers), so the scheduler need not stop it.
func (systemClock) At(t time.Time) <-chan time.Time { return time.After(time.Until(t)) }

// scheduler runs jobs at the activations of their cron.Schedule, on a
// Clock. It does for ingestd what robfig/cron's runner did (the parser and
// the Schedule interface are still cron's): each entry's next activation
// is computed when the entry is added (or at start), a job runs in its own
// goroutine at its activation, the next one is computed from the time the
// scheduler woke up (so a wake-up late by several activations fires the
// entry once, not once per activation missed), and stop waits for the jobs.
// Unlike cron's runner it waits on the injected Clock, not on timers of the
// real one, and tells the job which activation it was planned for.
type scheduler struct {
	clock Clock

	mu      sync.Mutex
	entries map[int]*entry
	lastID  int
	started bool

	wake     chan struct{} // the entries changed: compute the next wake-up
	halt     chan struct{} // closed by stop
	done     chan struct{} // closed when the loop has returned
	stopOnce sync.Once
	jobs     sync.WaitGroup
}

// entry is one scheduled job.
type entry struct {
	id    int
	sched cron.Schedule
	job   func(planned time.Time)
	next  time.Time // zero until the scheduler starts, or after the schedule's end
}

func newScheduler(c Clock) *scheduler {
	return &scheduler{clock: c, entries: map[int]*entry{},
		wake: make(chan struct{}, 1), halt: make(chan struct{}), done: make(chan struct{})}
}

// add schedules job at every activation of sched and returns the entry's id.
func (s *scheduler) add(sched cron.Schedule, job func(planned time.Time)) int {
	s.mu.Lock()
	s.lastID++
	e := &entry{id: s.lastID, sched: sched, job: job}
	if s.started {
		e.next = sched.Next(s.clock.Now())
	}
	s.entries[e.id] = e
	s.mu.Unlock()
	s.nudge()
	return e.id
}

// remove unschedules an entry; a job of it already running goes on.
func (s *scheduler) remove(id int) {
	s.mu.Lock()
	delete(s.entries, id)
	s.mu.Unlock()
	s.nudge()
}

func (s *scheduler) nudge() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// start computes every entry's next activation, before it returns, and
// starts the loop.
func (s *scheduler) start() {
	s.mu.Lock()
	s.started = true
	now := s.clock.Now()
	for _, e := range s.entries {
		e.next = e.sched.Next(now)
	}
	s.mu.Unlock()
	go s.loop()
}

func (s *scheduler) loop() {
	defer close(s.done)
	for {
		wakeAt := s.fire()
		var at <-chan time.Time // nil without an activation to wait for
		if !wakeAt.IsZero() {
			at = s.clock.At(wakeAt)
		}
		select {
		case <-at:
		case <-s.wake:
		case <-s.halt:
			return
		}
	}
}

// fire starts the jobs of the entries due now, in the order of their
// activations, and returns the earliest activation to come (zero if none).
func (s *scheduler) fire() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	var due []*entry
	for _, e := range s.entries {
		if !e.next.IsZero() && !e.next.After(now) {
			due = append(due, e)
		}
	}
	slices.SortFunc(due, func(a, b *entry) int {
		return cmp.Or(a.next.Compare(b.next), cmp.Compare(a.id, b.id))
	})
	for _, e := range due {
		planned := e.next
		s.jobs.Add(1)
		go func() {
			defer s.jobs.Done()
			e.job(planned)
		}()
		e.next = e.sched.Next(now)
	}
	var earliest time.Time
	for _, e := range s.entries {
		if !e.next.IsZero() && (earliest.IsZero() || e.next.Before(earliest)) {
			earliest = e.next
		}
	}
	return earliest
}

// stop ends the loop (no job starts after it returns); jobs already
// started go on, and wait waits for them.
func (s *scheduler) stop() {
	s.stopOnce.Do(func() { close(s.halt) })
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if started {
		<-s.done
	}
}

// wait waits for the jobs started so far to return.
func (s *scheduler) wait() { s.jobs.Wait() }
