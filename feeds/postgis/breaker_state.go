package postgis

import (
	"context"
	"fmt"
	"time"

	"github.com/ingestd/ingestd/feeds"
)

var _ feeds.BreakerStateStore = (*Store)(nil)

// RecordBreakerState implements feeds.BreakerStateStore. The last write wins:
// feeds.OriginWatch writes one origin's changes in order from one goroutine,
// and until breaker verdicts are shared, instances that disagree about an
// origin each describe their own breaker anyway.
func (s *Store) RecordBreakerState(ctx context.Context, st feeds.BreakerState) error {
	var openedAt, openUntil *time.Time
	if st.State == "open" {
		openedAt = &st.At
		openUntil = &st.OpenUntil
	}
	_, err := s.pool.Exec(ctx, `
		INSERT INTO breaker_state AS b (origin, state, opened_at, open_until, consecutive_opens, stuck, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (origin) DO UPDATE SET
			state = excluded.state,
			opened_at = coalesce(excluded.opened_at, CASE WHEN excluded.state = 'closed' THEN NULL ELSE b.opened_at END),
			open_until = excluded.open_until,
			consecutive_opens = excluded.consecutive_opens, stuck = excluded.stuck, updated_at = excluded.updated_at`,
		st.Origin, st.State, openedAt, openUntil, st.ConsecutiveOpens, st.Stuck, st.At)
	if err != nil {
		return fmt.Errorf("postgis: record breaker state of %s: %w", st.Origin, err)
	}
	return nil
}

// RecordOriginStuck implements feeds.BreakerStateStore: only the stuck flag,
// leaving the verdict columns to breaker.SharedState.
func (s *Store) RecordOriginStuck(ctx context.Context, origin string, stuck bool) error {
	// An UPDATE only: a row is the shared verdict's to create, and every
	// change of stuck follows a transition that the verdict wrote first.
	_, err := s.pool.Exec(ctx, `
		UPDATE breaker_state SET stuck = $2 WHERE origin = $1 AND stuck IS DISTINCT FROM $2`, origin, stuck)
	if err != nil {
		return fmt.Errorf("postgis: record stuck flag of %s: %w", origin, err)
	}
	return nil
}
