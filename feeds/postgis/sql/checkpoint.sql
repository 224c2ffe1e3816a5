-- Suspended polls resumed or discarded (checkpoint.go).

-- name: StagedPageNumbers
SELECT page FROM staged_pages WHERE poll_id = $1 ORDER BY page

-- name: DeleteStagedFeaturesFrom
-- Pages past a gap cannot be trusted to belong with the rest.
DELETE FROM {{staged}} WHERE poll_id = $1 AND page >= $2

-- name: DeleteStagedPagesFrom
DELETE FROM staged_pages WHERE poll_id = $1 AND page >= $2

-- name: ResumePoll
UPDATE polls SET status = 'running', finished_at = NULL, error = NULL, retry_after = NULL,
	owner = nullif($2, ''), active_at = now()
WHERE id = $1

-- name: FeedResumed
UPDATE feed_status SET last_attempt_at = now(), last_poll_id = GREATEST(last_poll_id, $3)
WHERE jurisdiction = $1 AND feed = $2

-- name: DiscardPoll
-- Only a poll still running (one an instance died in) is ended.
UPDATE polls SET status = 'failed', finished_at = now(), error = $4
WHERE id = $1 AND jurisdiction = $2 AND feed = $3 AND status = 'running'
