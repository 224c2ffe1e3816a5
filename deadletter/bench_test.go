package deadletter_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/ingestd/ingestd/deadletter"
	"github.com/ingestd/ingestd/migrations/pgtest"
)

// BenchmarkDispatchLateness prints, for a running replayer with a 200 ms
// interval, how late a letter of another origin starts when it becomes due
// while a slow replay runs (the design: within about one interval), and how
// long after the slow replay ends the next letter of its origin starts (the
// design: at once). The tests assert only the order
// (TestSlowReplayHoldsOnlyItsOrigin, TestEndedReplayClaimsItsOriginsNextAtOnce);
// run this with `scripts/bench.sh breaker`. Each figure is the mean over b.N
// rounds.
func BenchmarkDispatchLateness(b *testing.B) {
	const interval = 200 * time.Millisecond
	pool := pgtest.Pool(b)
	q := deadletter.NewQueue(pool)
	var otherLate, nextLate time.Duration
	for b.Loop() {
		if _, err := pool.Exec(b.Context(), `TRUNCATE dead_letter`); err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		otherDue := now.Add(300 * time.Millisecond)
		other := parking("other", otherDue)
		other.Origin = "http://city.example:80"
		for _, p := range []deadletter.Parking{parking("slow", now.Add(-2*time.Second)), parking("next", now.Add(-time.Second)), other} {
			if _, err := q.Park(b.Context(), p); err != nil {
				b.Fatal(err)
			}
		}
		release := make(chan struct{})
		began := map[string]chan time.Time{"slow": make(chan time.Time, 1), "next": make(chan time.Time, 1), "other": make(chan time.Time, 1)}
		r := deadletter.NewReplayer(pool, func(ctx context.Context, l *deadletter.Letter) error {
			began[l.Feed] <- time.Now()
			if l.Feed == "slow" {
				select {
				case <-release:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		}, deadletter.WithInterval(interval), deadletter.WithLogger(slog.New(slog.DiscardHandler)))
		if err := r.Start(b.Context()); err != nil {
			b.Fatal(err)
		}
		await(b, "slow", began["slow"])
		otherLate += await(b, "other", began["other"]).Sub(otherDue)
		released := time.Now()
		close(release)
		nextLate += await(b, "next", began["next"]).Sub(released)
		r.Stop()
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(b.N) }
	b.ReportMetric(ms(otherLate), "other_origin_late_ms")
	b.ReportMetric(ms(nextLate), "next_after_slow_ms")
	b.ReportMetric(float64(interval/time.Millisecond), "interval_ms")
}
