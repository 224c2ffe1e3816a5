package pgshare

// Benchmarks that print how long the breaker's timings take on this machine,
// on the real clock: the figures the tests no longer assert (they assert
// order and counts). Run them with `scripts/bench.sh breaker`; each reports
// the mean over b.N rounds, and ns/op is the length of one whole round.

import (
	. "github.com/ingestd/ingestd/breaker"
	. "github.com/ingestd/ingestd/breaker/internal/breakertest"

	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingestd/ingestd/migrations/pgtest"
)

// realNode is a node on the real clock (newNode's fake clock suits tests).
func realNode(b *testing.B, db, id string, p Policy, opts ...Option) *node {
	return newNode(b, db, id, p, append(opts, WithClock(RealClock{}))...)
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
		up := NewUpstream(b, http.StatusServiceUnavailable)
		x.TripOpen(b, up.URL())
		tripped := time.Now()
		trip += PollUntil(b, "y refuses the tripped origin", func() bool { ok, _ := y.admitted(b, up.Origin(b)); return !ok }).Sub(tripped)

		origin := fmt.Sprintf("http://county%d.example:80", i)
		if ok, _ := y.admitted(b, origin); !ok {
			b.Fatal("refused before the override")
		}
		set := time.Now()
		if _, err := x.shared.SetOverride(b.Context(), OverrideRequest{Origin: origin, Override: OverrideOpen}); err != nil {
			b.Fatal(err)
		}
		override += PollUntil(b, "y honours the override", func() bool { ok, _ := y.admitted(b, origin); return !ok }).Sub(set)
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
		up := NewUpstream(b, http.StatusServiceUnavailable)
		origin := up.Origin(b)
		x.TripOpen(b, up.URL())
		y.waitRefused(b, origin) // y never sends a call of its own while closed
		tripped := up.Hits.Load()
		l := hammer(b, up.URL(), x, y)
		waitRow(b, ctl, origin, func(v Verdict) bool { return v.State == StateOpen && v.ConsecutiveOpens >= 1+cooldowns })
		l.halt()
		v := waitRow(b, ctl, origin, func(v Verdict) bool { return v.ProbeOwner == "" })
		probes += up.Hits.Load() - tripped
		opens += v.ConsecutiveOpens - 1
		up.SetStatus(http.StatusOK)
		l = hammer(b, up.URL(), x, y)
		x.waitVersion(b, origin, v.Version)
		vw := x.shared.View(origin)
		until := vw.Local(v.OpenUntil) // the last cooldown's end, on x's clock
		closed := PollUntil(b, "both instances admit again", func() bool {
			return x.State(b, origin).State == StateClosed && y.State(b, origin).State == StateClosed
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
		up := NewUpstream(b, http.StatusServiceUnavailable)
		x.TripOpen(b, up.URL())
		y.waitRefused(b, up.Origin(b))
		// x probes once its cooldown ends, and hangs at the origin.
		hung, release := make(chan struct{}), make(chan struct{})
		var probedAt atomic.Int64
		up.Set(func(n int64, w http.ResponseWriter, r *http.Request) {
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
				if _, refused := AsOpen(x.Do(context.Background(), b, up.URL())); !refused {
					return
				}
				time.Sleep(time.Millisecond) // x calls until its cooldown (real time) ends
			}
		}()
		<-hung
		x.kill()
		killed := time.Now()
		PollUntil(b, "y probes", func() bool {
			_ = y.Do(b.Context(), b, up.URL())
			return probedAt.Load() != 0
		})
		stall += time.Unix(0, probedAt.Load()).Sub(killed)
		close(release)
		y.kill()
	}
	b.ReportMetric(ms(stall)/float64(b.N), "stall_ms")
	b.ReportMetric(ms(lease), "lease_ms")
}
