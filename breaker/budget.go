package breaker

import (
	"math"
	"time"
)

// budget counts an origin's logical calls and retries over a rolling window
// of buckets, so that retries can be held to a share of the calls. It is
// guarded by the origin's mu.
type budget struct {
	period  time.Duration
	buckets []budgetBucket
	head    int       // index of the current bucket
	start   time.Time // start of the current bucket
}

type budgetBucket struct {
	calls, retries int
}

func newBudget(period time.Duration, n int) budget {
	return budget{period: period, buckets: make([]budgetBucket, n)}
}

// advance moves the window to now, clearing the buckets that fell out of it.
func (b *budget) advance(now time.Time) {
	if b.start.IsZero() {
		b.start = now
		return
	}
	steps := int(now.Sub(b.start) / b.period)
	if steps <= 0 {
		return
	}
	if steps >= len(b.buckets) {
		clear(b.buckets)
		b.start = now
		return
	}
	for range steps {
		b.head = (b.head + 1) % len(b.buckets)
		b.buckets[b.head] = budgetBucket{}
	}
	b.start = b.start.Add(time.Duration(steps) * b.period)
}

func (b *budget) addCall(now time.Time) {
	b.advance(now)
	b.buckets[b.head].calls++
}

// tryRetry takes one retry from the budget if the window allows it: at most
// ratio × calls retries, and always minimum.
func (b *budget) tryRetry(now time.Time, ratio float64, minimum int) bool {
	b.advance(now)
	var calls, retries int
	for _, bk := range b.buckets {
		calls += bk.calls
		retries += bk.retries
	}
	allowed := max(minimum, int(math.Floor(ratio*float64(calls))))
	if retries >= allowed {
		return false
	}
	b.buckets[b.head].retries++
	return true
}
