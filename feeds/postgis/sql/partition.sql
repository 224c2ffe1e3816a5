-- The old partition layout's lookup of a feed's table (partition.go): only
-- tableOf names it, for a store that is not one-copy, and every store is.

-- name: LookupFeedTable
-- Names the feed's ($2, $3) partition and its jurisdiction's, tells
-- whether the feed's exists, and counts the features poll $1 staged and
-- those the feed held after its last apply, and whether that apply changed
-- anything.
SELECT ingestd_feed_partition($2, $3), ingestd_jurisdiction_partition($2),
	to_regclass(quote_ident(ingestd_feed_partition($2, $3))) IS NOT NULL,
	(SELECT coalesce(sum(features), 0) FROM staged_pages WHERE poll_id = $1),
	coalesce((SELECT feature_count FROM feed_status WHERE jurisdiction = $2 AND feed = $3), 0),
	coalesce((SELECT modified = 0 AND removed = 0 AND added IN (0, features) FROM polls
		WHERE jurisdiction = $2 AND feed = $3 AND status = 'succeeded' ORDER BY started_at DESC LIMIT 1), true)
