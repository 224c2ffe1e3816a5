-- Feeds removed by an operator (prune.go).

-- name: PruneCandidates
-- Feeds absent from the configuration ($1, $2) that are still configured
-- or have an open dead letter, with those letters.
SELECT s.jurisdiction, s.feed,
	coalesce(array_agg(d.id ORDER BY d.id) FILTER (WHERE d.id IS NOT NULL), '{}')
FROM feed_status s
LEFT JOIN dead_letter d ON d.jurisdiction = s.jurisdiction AND d.feed = s.feed
	AND d.status IN ('pending', 'replaying')
WHERE (s.jurisdiction, s.feed) NOT IN (SELECT * FROM unnest($1::text[], $2::text[]))
GROUP BY s.jurisdiction, s.feed
HAVING bool_or(s.configured) OR count(d.id) > 0
ORDER BY s.jurisdiction, s.feed

-- name: UnconfigureFeeds
UPDATE feed_status SET configured = false
WHERE (jurisdiction, feed) IN (SELECT * FROM unnest($1::text[], $2::text[]))

-- name: AbandonPrunedLetters
UPDATE dead_letter SET status = 'abandoned', finished_at = now(), lease_until = NULL, updated_at = now(),
	last_error = 'pruned: the feed is not in the configuration given to ingestd feeds prune'
WHERE id = ANY($1) AND status IN ('pending', 'replaying')
RETURNING poll_id

-- name: DeletePrunedStagedFeatures
-- A checkpoint being replayed right now is left to its replay.
DELETE FROM {{staged}} WHERE poll_id = $1
  AND NOT EXISTS (SELECT FROM polls WHERE id = $1 AND status = 'running')

-- name: DeletePrunedStagedPages
DELETE FROM staged_pages WHERE poll_id = $1
  AND NOT EXISTS (SELECT FROM polls WHERE id = $1 AND status = 'running')
