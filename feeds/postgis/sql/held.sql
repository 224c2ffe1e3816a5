-- Held snapshots: listed, accepted or rejected by an operator (held.go).

-- name: ListHeld
SELECT jurisdiction, feed, poll_id, held_at, reason,
	coalesce(previous_features, 0)::int, coalesce(snapshot_features, 0)
FROM held_snapshots ORDER BY held_at, jurisdiction, feed

-- name: LockHeldPoll
SELECT p.id FROM feed_status s JOIN polls p ON p.id = s.held_poll_id
WHERE s.jurisdiction = $1 AND s.feed = $2 AND p.status = 'held'
FOR UPDATE OF p

-- name: RejectHeldPoll
-- $2 '' keeps the hold reason, prefixed 'rejected: '.
UPDATE polls SET status = 'rejected',
	error = CASE WHEN $2 = '' THEN 'rejected: ' || error ELSE $2 END WHERE id = $1

-- name: HeldDiscardedError
-- feed_freshness shows last_error: the operator sees why nothing was applied.
UPDATE feed_status SET last_error = $3, last_error_at = now()
WHERE jurisdiction = $1 AND feed = $2

-- name: ClearHold
UPDATE feed_status SET held_poll_id = NULL, held_reason = NULL, held_at = NULL
WHERE jurisdiction = $1 AND feed = $2

-- name: HeldRecorded
-- What was recorded of poll $1 when it was held, and what is staged now.
-- A delta's (staged_deltas) snapshot is mostly stored features: its
-- staging holds what its pages recorded.
SELECT p.pages,
	CASE WHEN EXISTS (SELECT FROM staged_deltas d WHERE d.poll_id = p.id)
		THEN (SELECT coalesce(sum(features), 0) FROM staged_pages WHERE poll_id = p.id)
		ELSE coalesce(p.features, 0) + coalesce(p.duplicate_ids, 0) END,
	(SELECT count(*) FROM staged_pages WHERE poll_id = p.id)::int,
	(SELECT count(*) FROM {{staged}} WHERE poll_id = $1)
FROM polls p WHERE p.id = $1
