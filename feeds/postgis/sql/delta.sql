-- Incremental refresh (delta.go): a poll that fetched only the
-- features changed since the feed's last applied snapshot is proved
-- against the server's id list (in Go, from StoredIDs and FetchedIDs)
-- and recorded as a delta (staged_deltas);
-- its apply (ApplyDelta) diffs only what it fetched and removes what the
-- list lacks. {{table}} is the feed's table.

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
SELECT DISTINCT feature_id FROM staged_features WHERE poll_id = $1

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
FROM (SELECT DISTINCT feature_id FROM staged_features WHERE poll_id = $1
	UNION SELECT unnest(removed) FROM staged_deltas WHERE poll_id = $1) d
CROSS JOIN LATERAL (SELECT t.properties, t.geom FROM {{table}} t WHERE t.feature_id = d.feature_id LIMIT 1) f

-- name: TableProfile
-- Every stored feature's properties and geometry type: the profile of a
-- feed applied before version 33, read once by its first delta.
SELECT f.properties::text, coalesce(get_byte(ST_AsEWKB(f.geom), 1), 0) FROM {{table}} f

-- name: ApplyDelta
-- ApplyDiff for a delta (staged_deltas): the snapshot is the staged
-- (fetched) features, the feed's features the server still lists and the
-- poll did not fetch (kept as they are, never read), less the removed
-- ones the proof found. Only the fetched and removed rows are read, by
-- index: a refresh costs ApplyDiff's share of what it changed, not of the
-- layer. Arguments, the guards, the writes and the row are
-- ApplyDiff's (ApplyWrites); the extent guard sees the fetched features
-- only (the kept ones passed it when they were applied). The counts
-- follow from the proof (ComposeDelta): every listed id is fetched or
-- kept, so the snapshot has as many features as the list has ids, and
-- the table held the kept, the fetched it had, and the removed.
--
-- The stored rows are read by key, in LATERAL subqueries with LIMIT 1
-- (feature_id is the key of {{table}}, which holds the feed's rows
-- only): PostgreSQL never turns those into joins, so it probes the key
-- once per id whatever its estimates, which for a table loaded in the
-- last apply are those of a table never analysed (a join that hashes or
-- sorts the whole layer).
{{SnapshotCTEs}}, diff AS MATERIALIZED (
	SELECT s.*, f.feature_id AS old_id, true AS present,
		f.feature_id IS NOT NULL AS existed, f.content_hash AS old_hash,
		f.geom_hash IS DISTINCT FROM s.geom_hash AS geom_changed,
		f.props_hash IS DISTINCT FROM s.props_hash AS props_changed,
		f.feature_id IS NOT NULL AND f.geom_hash IS NULL AS legacy
	FROM snapshot s
	LEFT JOIN LATERAL (SELECT t.feature_id, t.content_hash, t.geom_hash, t.props_hash
		FROM {{table}} t WHERE t.feature_id = s.feature_id LIMIT 1) f ON true
	UNION ALL
	SELECT NULL::text, NULL::boolean, NULL::integer, NULL::integer, NULL::bytea, NULL::bytea,
		f.feature_id, false, true, f.content_hash, true, true, false
	FROM staged_deltas sd
	CROSS JOIN LATERAL unnest(sd.removed) AS r(feature_id)
	CROSS JOIN LATERAL (SELECT t.feature_id, t.content_hash FROM {{table}} t WHERE t.feature_id = r.feature_id LIMIT 1) f
	WHERE sd.poll_id = $1
), counts AS MATERIALIZED (
	SELECT x.*, x.features - x.fetched + x.fetched_existing + x.gone AS previous,
		x.features - x.fetched + x.fetched_existing AS kept, true AS delta
	FROM (
		SELECT
			(SELECT features FROM staged_deltas WHERE poll_id = $1) AS features,
			count(*) FILTER (WHERE present AND NOT existed)::int AS added,
			count(*) FILTER (WHERE present AND existed AND (geom_changed OR props_changed)
				AND NOT (legacy AND NOT props_changed))::int AS modified,
			count(*) FILTER (WHERE present AND existed)::int AS fetched_existing,
			count(*) FILTER (WHERE NOT present)::int AS gone,
			count(*) FILTER (WHERE present AND named)::int AS named,
			count(*) FILTER (WHERE present)::int AS fetched
		FROM diff) x
), {{ApplyWrites}}

-- name: ReconcileDrift
-- A full dump (poll $1) that reconciles an incremental state: its
-- features that are new or differ from the stored ones while their edit
-- date (property $2) is at most $3 (Unix ms) or unknown, which the
-- incremental path would not have fetched.
WITH snapshot AS (
	SELECT DISTINCT ON (feature_id COLLATE "C") feature_id, page, ordinal, geom_hash, props_hash
	FROM staged_features WHERE poll_id = $1
	ORDER BY feature_id COLLATE "C", page DESC, ordinal DESC
)
SELECT count(*) FROM snapshot s
LEFT JOIN {{table}} f ON f.feature_id = s.feature_id
JOIN staged_features sf ON sf.poll_id = $1 AND sf.page = s.page AND sf.ordinal = s.ordinal
WHERE (f.feature_id IS NULL OR f.geom_hash IS DISTINCT FROM s.geom_hash OR f.props_hash IS DISTINCT FROM s.props_hash)
	AND coalesce(ingestd_as_timestamptz(sf.properties::jsonb -> $2) <= to_timestamp($3::float8 / 1000), true)

-- name: RecordFetchMode
-- How poll $1 read its layer ($2) and the drift it found ($3, NULL: none
-- compared).
UPDATE polls SET fetch_mode = $2, drift = $3 WHERE id = $1
