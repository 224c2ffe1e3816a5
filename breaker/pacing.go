package breaker

import "time"

// maxPacingGap bounds the adaptive gap between two starts, so that one
// pathological answer (a 10-minute page) cannot space an origin's requests
// by minutes once it is over; Scrapy's AutoThrottle caps its delay at 60 s.
const maxPacingGap = 30 * time.Second

// pacer spaces the attempts to one origin by the origin's own response
// times (Policy.TargetConcurrency), as Scrapy's AutoThrottle does: an
// attempt may start no sooner than latency/TargetConcurrency after the
// previous start, where latency is the mean of the origin's recent
// successful attempts. By Little's law that holds the origin, on average,
// at TargetConcurrency requests in flight from this instance, whatever its
// speed: a server answering in 5 s sees 0.2 requests/s at 1, one answering
// in 50 ms up to 20/s. An attempt to an origin with nothing reserved or in
// flight goes at once: a lone sequential poll sends one request at a time,
// which no target of 1 or more would slow, so pacing binds only when several
// polls share the origin.
//
// Its fields are guarded by the origin's mu.
type pacer struct {
	target    float64       // Policy.TargetConcurrency; 0: off
	latency   time.Duration // smoothed duration of successful attempts; 0: none yet
	lastStart time.Time     // the latest start handed out
	active    int           // attempts holding a start: waiting for it, or in flight
}

// gap is the spacing between two starts the latency asks for.
func (p *pacer) gap() time.Duration {
	if p.target <= 0 || p.latency <= 0 {
		return 0
	}
	return min(time.Duration(float64(p.latency)/p.target), maxPacingGap)
}

// reserve hands out the next start at or after now, counts the attempt as
// active and returns the wait until that start and the previous last start
// (for unreserve).
func (p *pacer) reserve(now time.Time) (wait time.Duration, prev time.Time) {
	prev = p.lastStart
	start := now
	if p.active > 0 {
		if s := p.lastStart.Add(p.gap()); s.After(start) {
			start = s
		}
	}
	p.lastStart = start
	p.active++
	return start.Sub(now), prev
}

// unreserve takes back a start that will not be used (its wait would pass
// the caller's deadline), unless a later one was handed out meanwhile.
func (p *pacer) unreserve(start, prev time.Time) {
	if p.lastStart.Equal(start) {
		p.lastStart = prev
	}
	p.active--
}

// observe adds the duration of an attempt to the latency: the mean of the
// last estimate and the new sample (AutoThrottle's smoothing), so that a
// server that slows down is spaced within a few answers, and one that
// recovers is let go as fast. A failed attempt may only raise it
// (AutoThrottle's rule for errors): a refused connection says nothing of
// the server's pace, a timeout says it is struggling.
func (p *pacer) observe(d time.Duration, ok bool) {
	if d <= 0 || (!ok && d <= p.latency) {
		return
	}
	if p.latency <= 0 {
		p.latency = d
		return
	}
	p.latency = (p.latency + d) / 2
}
