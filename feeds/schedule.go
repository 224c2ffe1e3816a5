package feeds

import (
	"hash/fnv"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
)

// DefaultMaxJitter bounds the start offset of a feed within its schedule.
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

// everySchedule is "@every D" anchored to the clock: it fires at the
// multiples of D (counted from Go's zero time, the same for every process).
// cron's own ConstantDelaySchedule counts from whenever the process started,
// so instances started a second apart tick out of phase: each fires its own
// tick, the poll claim (which refuses only within half an interval of the
// last claim) lets several of them through, and the cluster polls the feed
// more often than once per interval; the phase would also move with every
// restart. Anchored, every instance fires the same ticks, as with 5-field specs.
type everySchedule struct{ every time.Duration }

func (s everySchedule) Next(t time.Time) time.Time {
	return t.Truncate(s.every).Add(s.every)
}

// startOffset is the feed's deterministic phase inside its schedule, as in
// Prometheus's scrape loop: a hash of the feed's identity, so fifty feeds on
// "0 5 * * *" spread over a window instead of hitting one county at 05:00:00,
// and the spread is the same after every restart. The window is half the
// interval, capped at maxJitter, so "0 5 * * *" still means "shortly after five".
func startOffset(key string, interval, maxJitter time.Duration) time.Duration {
	window := min(interval/2, maxJitter)
	if window <= 0 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return time.Duration(h.Sum64() % uint64(window))
}

// recordingSchedule remembers the activations it hands to cron, so that a
// tick can tell how late it started against the time cron planned for it.
// Cron computes an entry's next activation right after starting its job, so
// the job finds its own activation as the latest recorded one not after now.
type recordingSchedule struct {
	inner cron.Schedule

	mu      sync.Mutex
	pending []time.Time // ascending
}

func (s *recordingSchedule) Next(t time.Time) time.Time {
	next := s.inner.Next(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) >= 8 {
		// Never read (a job that never ran): keep the list bounded.
		s.pending = s.pending[1:]
	}
	s.pending = append(s.pending, next)
	return next
}

// due removes the activations up to now and returns the latest of them.
func (s *recordingSchedule) due(now time.Time) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var planned time.Time
	i := 0
	for ; i < len(s.pending) && !s.pending[i].After(now); i++ {
		planned = s.pending[i]
	}
	s.pending = s.pending[i:]
	return planned, i > 0
}
