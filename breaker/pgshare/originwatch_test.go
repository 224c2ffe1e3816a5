package pgshare

import (
	. "github.com/ingestd/ingestd/breaker"

	"testing"
	"time"
)

// With shared verdicts the watch writes only the stuck flag: a follower's
// late "open, 0 s left" event must not shorten the cluster's verdict.
func TestOriginWatchLeavesSharedVerdictsAlone(t *testing.T) {
	t.Parallel()
	pool := testPool(t)
	const origin = "http://gis.example.org:80"
	until := time.Now().Add(10 * time.Minute).UTC().Truncate(time.Microsecond)
	if _, err := pool.Exec(t.Context(), `INSERT INTO breaker_state (origin, state, opened_at, open_until, consecutive_opens)
		VALUES ($1, 'open', now(), $2, 2)`, origin, until); err != nil {
		t.Fatal(err)
	}
	w := NewOriginWatch(pool, 2, nil)
	w.SharedVerdicts()
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	w.OnStateChange(StateChange{Origin: origin, From: StateClosed, To: StateOpen, At: time.Now(),
		RetryAfter: 0, ConsecutiveOpens: 2, DecidedBy: "other:1"})
	w.Stop()

	var got time.Time
	var stuck bool
	if err := pool.QueryRow(t.Context(), `SELECT open_until, stuck FROM breaker_state WHERE origin = $1`, origin).Scan(&got, &stuck); err != nil {
		t.Fatal(err)
	}
	if !got.Equal(until) {
		t.Errorf("open_until = %s, want the shared verdict's %s untouched", got, until)
	}
	if !stuck {
		t.Error("stuck flag not written")
	}
}
