-- Incremental refresh (delta.go): a poll that fetched only the
-- features changed since the feed's last applied snapshot is proved
-- against the server's id list (in Go, from StoredIDs and FetchedIDs)
-- and recorded as a delta (staged_deltas);
-- its apply (sql/onecopy.sql) diffs only what it fetched and removes what
-- the list lacks. {{table}} is the feed's table.

-- name: DeltaPlanner
-- Both sides of a reconciliation are bulk (see ApplyPlanner); a merge
-- join would sort the ids as text in the database's collation.
SET LOCAL enable_nestloop = off; SET LOCAL enable_mergejoin = off; SET LOCAL jit = off

-- name: StoredIDs
-- The feed's stored ids, which a delta's proof merges with the server's
-- list (delta.go). Its key's column only, so PostgreSQL may read it from
-- the index.
SELECT t.feature_id FROM {{table}} t

-- name: FetchedIDs
-- The distinct ids poll $1 fetched: what the proof checks against the
-- server's id list.
SELECT DISTINCT feature_id FROM {{staged}} WHERE poll_id = $1

-- name: StageDelta
-- Records poll $1 as a delta of $2 listed ids that removes the feed's
-- features $3 (ProveDelta proved them), since $4 (for the log).
INSERT INTO staged_deltas (poll_id, features, removed, since) VALUES ($1, $2, $3, $4)
ON CONFLICT (poll_id) DO UPDATE SET features = excluded.features, removed = excluded.removed, since = excluded.since, staged_at = now()

-- name: DeleteStagedDelta
DELETE FROM staged_deltas WHERE poll_id = $1

-- name: IsDelta
-- Whether poll $1 is a delta (staged_deltas).
SELECT EXISTS (SELECT FROM staged_deltas WHERE poll_id = $1)

-- name: DeltaSuperseded
-- The feed's features poll $1's delta replaces (the ids it fetched) or
-- removes, each as its properties and the type of its geometry (the
-- EWKB's type byte: ST_AsEWKB writes little-endian; 0: none): what the
-- apply takes out of the stored profile, each read by key (see ApplyDelta).
SELECT f.properties::text, coalesce(get_byte(ST_AsEWKB(f.geom), 1), 0)
FROM (SELECT DISTINCT feature_id FROM {{staged}} WHERE poll_id = $1
	UNION SELECT unnest(removed) FROM staged_deltas WHERE poll_id = $1) d
CROSS JOIN LATERAL (SELECT t.properties, t.geom FROM {{table}} t WHERE t.feature_id = d.feature_id LIMIT 1) f

-- name: TableProfile
-- Every stored feature's properties and geometry type: the profile of a
-- feed applied before version 33, read once by its first delta.
SELECT f.properties::text, coalesce(get_byte(ST_AsEWKB(f.geom), 1), 0) FROM {{table}} f

-- name: RecordFetchMode
-- How poll $1 read its layer ($2) and the drift it found ($3, NULL: none
-- compared).
UPDATE polls SET fetch_mode = $2, drift = $3 WHERE id = $1
