-- Common layers' history, skipped features and change feed
-- (common_history.go, migration 40). {{layer}} is the common layer's table.

-- name: TrackCommonLayer
-- A new layer's table keeps its past: changed_at, and the triggers that
-- move what an update or delete supersedes to common_history.
SELECT ingestd_common_track($1::regclass)

-- name: DeleteCommonRowsOf
-- The rows of features ($3) the conform could not map this time: their
-- earlier rows would otherwise outlive the features' change.
DELETE FROM {{layer}} WHERE jurisdiction = $1 AND feed = $2 AND feature_id = ANY ($3::text[])

-- name: RecordCommonSkipped
UPDATE polls SET common_skipped = $2 WHERE id = $1

-- name: CommonChangesSince
-- The changes of feed ($1, $2)'s common rows after poll $3 as GeoJSON
-- Features, one a row, in poll and id order (ingestd_common_changes_since).
SELECT json_build_object('type', 'Feature', 'id', c.feature_id,
	'geometry', ST_AsGeoJSON(coalesce(c.new_geom, c.old_geom))::json,
	'properties', json_build_object('change', c.change, 'poll_id', c.poll_id, 'layer', c.layer,
		'applied_at', c.applied_at, 'old', c.old_values, 'new', c.new_values))::text
FROM ingestd_common_changes_since($1, $2, $3) c
