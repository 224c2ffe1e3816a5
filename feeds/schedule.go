package feeds

import (
	"hash/fnv"
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
