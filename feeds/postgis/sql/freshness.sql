-- What operators read: every feed's freshness (freshness.go, for `ingestd status`).

-- name: Freshness
-- Not-fresh feeds first, grouped by status; age as "3d 04:05:06"; why is the
-- hold reason of a held feed, the last error of any other.
SELECT jurisdiction || '/' || feed, status, coalesce(feature_count, 0),
	coalesce(to_char(date_trunc('second', age), 'FMDD"d" HH24:MI:SS'), '-'),
	coalesce(CASE WHEN status = 'held' THEN held_reason ELSE last_error END, '')
FROM feed_freshness
ORDER BY status = 'fresh', status, jurisdiction, feed
