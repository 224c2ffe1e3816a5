-- Statements of OriginWatch on breaker_state.

-- name: record_state
-- The whole state of one origin, without a SharedState: the last write wins,
-- since the watch writes one origin's changes in order from one goroutine
-- and each instance describes its own breaker anyway.
INSERT INTO breaker_state AS b (origin, state, opened_at, open_until, consecutive_opens, stuck, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (origin) DO UPDATE SET
    state = excluded.state,
    opened_at = coalesce(excluded.opened_at, CASE WHEN excluded.state = 'closed' THEN NULL ELSE b.opened_at END),
    open_until = excluded.open_until,
    consecutive_opens = excluded.consecutive_opens, stuck = excluded.stuck, updated_at = excluded.updated_at;

-- name: record_stuck
-- Only the stuck flag, leaving the verdict to SharedState. An UPDATE only: a
-- row is the shared verdict's to create, and every change of stuck follows a
-- transition that the verdict wrote first.
UPDATE breaker_state SET stuck = $2 WHERE origin = $1 AND stuck IS DISTINCT FROM $2;
