-- Feature history and the change feed (history.go, migrations 26 and 27).

-- name: ApplyHistory
-- Whether feed ($1, $2) keeps superseded versions (history_keep not 0; a
-- feed without a row keeps them), and whether this transaction's time is
-- after the feed's last change (feature_changes_feed_time_idx: one probe).
SELECT coalesce((SELECT history_keep IS NULL OR history_keep > interval '0' FROM feed_status
		WHERE jurisdiction = $1 AND feed = $2), true),
	now() > coalesce((SELECT max(changed_at) FROM feature_changes WHERE jurisdiction = $1 AND feed = $2),
		'-infinity')

-- name: MarkHistoryGap
-- Feed ($1, $2) modified or removed features without keeping their
-- versions: its layer as of a time is exact from now on only.
UPDATE feed_status SET history_from = now() WHERE jurisdiction = $1 AND feed = $2

-- name: NotifyChanges
-- ChangeNotice of poll $3 of feed ($1, $2), delivered at commit.
SELECT pg_notify('ingestd_changes', json_build_object('jurisdiction', $1::text, 'feed', $2::text,
	'poll_id', $3::bigint, 'added', $4::int, 'modified', $5::int, 'removed', $6::int,
	'applied_at', now())::text)

-- name: PruneHistory
-- At most $2 versions older than their feed's retention as of $1.
SELECT ingestd_prune_history($1, $2)

-- name: ChangesSince
-- The changes of feed ($1, $2) after poll $3 as GeoJSON Features, one a
-- row, in poll and id order (ingestd_changes_since).
SELECT json_build_object('type', 'Feature', 'id', c.feature_id,
	'geometry', ST_AsGeoJSON(coalesce(c.new_geom, c.old_geom))::json,
	'properties', json_build_object('change', c.change, 'poll_id', c.poll_id, 'applied_at', c.applied_at,
		'old', c.old_properties, 'new', c.new_properties))::text
FROM ingestd_changes_since($1, $2, $3) c
