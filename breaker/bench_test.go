package breaker_test

// Benchmarks that print how long the breaker's timings take on this machine,
// on the real clock: the figures the tests no longer assert (they assert
// order and counts). Run them with `scripts/bench.sh breaker`; each reports
// the mean over b.N rounds, and ns/op is the length of one whole round.

import (
	. "github.com/ingestd/ingestd/breaker/internal/breakertest"

	"github.com/ingestd/ingestd/breaker"

	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkPacing: on the real clock, the delay of a retry after a 429 with
// Retry-After 0.3 (300–360 ms with its jitter), how long a call to another
// origin takes meanwhile (no pause), and six calls at 50/s with a burst of
// one (100 ms).
func BenchmarkPacing(b *testing.B) {
	var retry, other, paced time.Duration
	for b.Loop() {
		p := FastPolicy()
		p.MaxAttempts = 2
		f := Setup(b, p, RegistryClock(RealClock{}))
		up := NewUpstream(b, 0)
		var first, second atomic.Int64
		up.Set(func(n int64, w http.ResponseWriter, _ *http.Request) {
			if n == 1 {
				first.Store(time.Now().UnixNano())
				w.Header().Set("Retry-After", "0.3")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			second.CompareAndSwap(0, time.Now().UnixNano())
			w.WriteHeader(http.StatusOK)
		})
		ok := NewUpstream(b, http.StatusOK)
		done := make(chan error, 1)
		go func() { done <- f.Do(b.Context(), b, up.URL()) }()
		PollUntil(b, "the 429", func() bool {
			for _, s := range f.Reg.Snapshot() {
				if s.Origin == up.Origin(b) && !s.PausedUntil.IsZero() {
					return true
				}
			}
			return false
		})
		start := time.Now()
		if err := f.Do(b.Context(), b, ok.URL()); err != nil {
			b.Fatal(err)
		}
		other += time.Since(start)
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		retry += time.Duration(second.Load() - first.Load())

		p = FastPolicy()
		p.RateLimit, p.Burst = 50, 1
		f = Setup(b, p, RegistryClock(RealClock{}))
		start = time.Now()
		for range 6 {
			if err := f.Do(b.Context(), b, ok.URL()); err != nil {
				b.Fatal(err)
			}
		}
		paced += time.Since(start)
	}
	b.ReportMetric(ms(retry)/float64(b.N), "retry_after_429_ms")
	b.ReportMetric(ms(other)/float64(b.N), "other_origin_during_pause_ms")
	b.ReportMetric(ms(paced)/float64(b.N), "six_calls_at_50/s_ms")
}

// attemptCounter is an Observer that counts the attempts sent.
type attemptCounter struct{ n atomic.Int64 }

func (c *attemptCounter) Attempt(string, breaker.Outcome) { c.n.Add(1) }
func (c *attemptCounter) Call(string, breaker.CallResult) {}
func (c *attemptCounter) StateChange(breaker.StateChange) {}

// BenchmarkDeadOriginOpens: the default policy on the real clock against a
// loopback port that refuses connections, one logical call after another
// (the poll, then the replays of its dead letter): the logical calls that
// failed before the origin opened (the fifth opens it), the time from the
// first call to the open (the backoffs of the retries the retry budget
// allowed), the connection attempts the port received before the open, and
// those of 100 further calls during the cooldown (none: refused without
// touching the network).
func BenchmarkDeadOriginOpens(b *testing.B) {
	var calls, attempts, after int64
	var toOpen time.Duration
	for b.Loop() {
		seen := &attemptCounter{}
		f := Setup(b, breaker.DefaultPolicy(), RegistryClock(RealClock{}), func(c *breaker.Config) { c.Observer = seen })
		target := ClosedAddr(b)
		start := time.Now()
		for {
			err := f.Do(b.Context(), b, target)
			if _, open := AsOpen(err); open {
				break
			}
			if err == nil {
				b.Fatal("a refused port answered")
			}
			calls++
			if calls > 1000 {
				b.Fatal("the origin never opened")
			}
		}
		toOpen += time.Since(start)
		before := seen.n.Load()
		attempts += before
		for range 100 {
			if _, open := AsOpen(f.Do(b.Context(), b, target)); !open {
				b.Fatal("a call went through during the cooldown")
			}
		}
		after += seen.n.Load() - before
	}
	n := float64(b.N)
	b.ReportMetric(float64(calls)/n, "failed_calls_to_open")
	b.ReportMetric(ms(toOpen)/n, "ms_to_open")
	b.ReportMetric(float64(attempts)/n, "attempts_before_open")
	b.ReportMetric(float64(after)/n, "attempts_in_100_calls_after")
}
