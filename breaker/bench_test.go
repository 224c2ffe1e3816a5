package breaker

// Benchmarks that print how long the breaker's timings take on this machine,
// on the real clock: the figures the tests no longer assert (they assert
// order and counts). Run them with `scripts/bench.sh breaker`; each reports
// the mean over b.N rounds, and ns/op is the length of one whole round.

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingestd/ingestd/migrations/pgtest"
)

// realNode is a node on the real clock (newNode's fake clock suits tests).
func realNode(b *testing.B, db, id string, p Policy, opts ...SharedOption) *node {
	return newNode(b, db, id, p, append(opts, WithClock(systemClock{}))...)
}

// pollUntil polls cond every millisecond, the resolution of the figures.
func pollUntil(b *testing.B, what string, cond func() bool) time.Time {
	b.Helper()
	deadline := time.Now().Add(hang)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("%s: not after %s", what, hang)
		}
		time.Sleep(time.Millisecond) // the figures' resolution; a benchmark, not a test

	}
	return time.Now()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkSharedVerdictPropagation: how long after one instance trips an
// origin, or an operator sets an open override, the other instance refuses
// it (NOTIFY, then a re-read of the row).
func BenchmarkSharedVerdictPropagation(b *testing.B) {
	db := pgtest.URL(b)
	p := sharedPolicy(time.Hour)
	x := realNode(b, db, "x:1", p)
	y := realNode(b, db, "y:2", p)
	var trip, override time.Duration
	for i := 0; b.Loop(); i++ {
		up := newUpstream(b, http.StatusServiceUnavailable)
		x.tripOpen(b, up.url())
		tripped := time.Now()
		trip += pollUntil(b, "y refuses the tripped origin", func() bool { ok, _ := y.admitted(b, up.origin(b)); return !ok }).Sub(tripped)

		origin := fmt.Sprintf("http://county%d.example:80", i)
		if ok, _ := y.admitted(b, origin); !ok {
			b.Fatal("refused before the override")
		}
		set := time.Now()
		if _, err := x.shared.SetOverride(b.Context(), OverrideRequest{Origin: origin, Override: OverrideOpen}); err != nil {
			b.Fatal(err)
		}
		override += pollUntil(b, "y honours the override", func() bool { ok, _ := y.admitted(b, origin); return !ok }).Sub(set)
	}
	b.ReportMetric(ms(trip)/float64(b.N), "trip_to_refusal_ms")
	b.ReportMetric(ms(override)/float64(b.N), "override_to_refusal_ms")
}

// BenchmarkSharedCooldowns: two instances under load on a failing origin
// with cooldowns of 80–100 ms: probes per cooldown across the cluster over
// five cooldowns (1 is the design), then, once the origin heals, how long
// after the end of the last cooldown both instances admit calls again (the
// time to close the breaker).
func BenchmarkSharedCooldowns(b *testing.B) {
	db := pgtest.URL(b)
	ctl := poolOn(b, db)
	p := sharedPolicy(100 * time.Millisecond)
	p.OpenMax = p.OpenBase // every cooldown alike
	x := realNode(b, db, "x:1", p)
	y := realNode(b, db, "y:2", p)
	const cooldowns = 5
	var probes int64
	var opens int
	var closing time.Duration
	for b.Loop() {
		up := newUpstream(b, http.StatusServiceUnavailable)
		origin := up.origin(b)
		x.tripOpen(b, up.url())
		y.waitRefused(b, origin) // y never sends a call of its own while closed
		tripped := up.hits.Load()
		l := hammer(b, up.url(), x, y)
		waitRow(b, ctl, origin, func(v Verdict) bool { return v.State == StateOpen && v.ConsecutiveOpens >= 1+cooldowns })
		l.halt()
		v := waitRow(b, ctl, origin, func(v Verdict) bool { return v.ProbeOwner == "" })
		probes += up.hits.Load() - tripped
		opens += v.ConsecutiveOpens - 1
		up.setStatus(http.StatusOK)
		l = hammer(b, up.url(), x, y)
		x.waitVersion(b, origin, v.Version)
		vw := x.shared.view(origin)
		until := vw.local(v.OpenUntil) // the last cooldown's end, on x's clock
		closed := pollUntil(b, "both instances admit again", func() bool {
			return x.state(b, origin).State == StateClosed && y.state(b, origin).State == StateClosed
		})
		l.halt()
		closing += closed.Sub(until)
	}
	b.ReportMetric(float64(probes)/float64(opens), "probes/cooldown")
	b.ReportMetric(ms(closing)/float64(b.N), "close_after_cooldown_ms")
}

// BenchmarkSharedDeadProberStall: an instance dies while it probes under a
// 300 ms lease; how long after its death the other instance's probe reaches
// the origin (the design: at most one lease).
func BenchmarkSharedDeadProberStall(b *testing.B) {
	db := pgtest.URL(b)
	const lease = 300 * time.Millisecond
	p := sharedPolicy(50 * time.Millisecond)
	var stall time.Duration
	for i := 0; b.Loop(); i++ {
		x := realNode(b, db, fmt.Sprintf("x:%d", i), p, WithProbeLease(lease))
		y := realNode(b, db, fmt.Sprintf("y:%d", i), p, WithProbeLease(lease))
		up := newUpstream(b, http.StatusServiceUnavailable)
		x.tripOpen(b, up.url())
		y.waitRefused(b, up.origin(b))
		// x probes once its cooldown ends, and hangs at the origin.
		hung, release := make(chan struct{}), make(chan struct{})
		var probedAt atomic.Int64
		up.set(func(n int64, w http.ResponseWriter, r *http.Request) {
			if n == int64(p.ConsecutiveFailures)+1 {
				close(hung)
				select {
				case <-r.Context().Done():
				case <-release:
				}
			} else {
				probedAt.CompareAndSwap(0, time.Now().UnixNano())
			}
			w.WriteHeader(http.StatusOK)
		})
		go func() {
			for {
				if _, refused := asOpen(x.do(context.Background(), b, up.url())); !refused {
					return
				}
				time.Sleep(time.Millisecond) // x calls until its cooldown (real time) ends
			}
		}()
		<-hung
		x.kill()
		killed := time.Now()
		pollUntil(b, "y probes", func() bool {
			_ = y.do(b.Context(), b, up.url())
			return probedAt.Load() != 0
		})
		stall += time.Unix(0, probedAt.Load()).Sub(killed)
		close(release)
		y.kill()
	}
	b.ReportMetric(ms(stall)/float64(b.N), "stall_ms")
	b.ReportMetric(ms(lease), "lease_ms")
}

// BenchmarkPacing: on the real clock, the delay of a retry after a 429 with
// Retry-After 0.3 (300–360 ms with its jitter), how long a call to another
// origin takes meanwhile (no pause), and six calls at 50/s with a burst of
// one (100 ms).
func BenchmarkPacing(b *testing.B) {
	var retry, other, paced time.Duration
	for b.Loop() {
		p := fastPolicy()
		p.MaxAttempts = 2
		f := setup(b, p, withClock(systemClock{}))
		up := newUpstream(b, 0)
		var first, second atomic.Int64
		up.set(func(n int64, w http.ResponseWriter, _ *http.Request) {
			if n == 1 {
				first.Store(time.Now().UnixNano())
				w.Header().Set("Retry-After", "0.3")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			second.CompareAndSwap(0, time.Now().UnixNano())
			w.WriteHeader(http.StatusOK)
		})
		ok := newUpstream(b, http.StatusOK)
		done := make(chan error, 1)
		go func() { done <- f.do(b.Context(), b, up.url()) }()
		pollUntil(b, "the 429", func() bool {
			for _, s := range f.reg.Snapshot() {
				if s.Origin == up.origin(b) && !s.PausedUntil.IsZero() {
					return true
				}
			}
			return false
		})
		start := time.Now()
		if err := f.do(b.Context(), b, ok.url()); err != nil {
			b.Fatal(err)
		}
		other += time.Since(start)
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		retry += time.Duration(second.Load() - first.Load())

		p = fastPolicy()
		p.RateLimit, p.Burst = 50, 1
		f = setup(b, p, withClock(systemClock{}))
		start = time.Now()
		for range 6 {
			if err := f.do(b.Context(), b, ok.url()); err != nil {
				b.Fatal(err)
			}
		}
		paced += time.Since(start)
	}
	b.ReportMetric(ms(retry)/float64(b.N), "retry_after_429_ms")
	b.ReportMetric(ms(other)/float64(b.N), "other_origin_during_pause_ms")
	b.ReportMetric(ms(paced)/float64(b.N), "six_calls_at_50/s_ms")
}
