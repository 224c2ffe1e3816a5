-- Incremental refresh (issue 27, delta.go): a poll that fetched only the
-- features changed since the feed's last applied snapshot has its whole
-- snapshot composed in its staging before the apply, which then runs as
-- for a full one. {{table}} is the feed's table.

-- name: DeltaPlanner
-- Both sides of the composition are bulk (see ApplyPlanner); a merge join
-- would sort the ids as text in the database's collation.
SET LOCAL enable_nestloop = off; SET LOCAL enable_mergejoin = off; SET LOCAL jit = off

-- name: ComposedPage
-- The page the composed rows of poll $1 go to: after its fetched pages.
SELECT coalesce(max(page) + 1, 0) FROM staged_pages WHERE poll_id = $1

-- name: ComposeDelta
-- Copies into poll $1's staging, as page $3, the feed's features whose ids
-- are in the server's id list $2 (object ids, as the feature ids' decimal
-- text) and that the poll did not fetch: the previous snapshot's unchanged
-- features; a feature not listed was deleted and is left out. A row keeps
-- its stored hashes (those of the source's encoding), so the apply finds
-- it unchanged and never writes it; its geometry is the stored one
-- (EPSG:4326), read only by the extent guard. A row stored before change
-- detection (no geom_hash) is left out, and the proof then falls back to
-- a full dump. Returns each copied row's properties and the type of its
-- geometry (the EWKB's type byte: ST_AsEWKB writes little-endian), for
-- the page's profile (typed layers).
WITH listed AS (
	SELECT id::text AS feature_id FROM unnest($2::bigint[]) AS id
), fetched AS (
	SELECT DISTINCT feature_id FROM staged_features WHERE poll_id = $1
)
INSERT INTO staged_features (poll_id, page, ordinal, feature_id, srid, geom_ewkb, properties, geom_hash, props_hash)
SELECT $1, $3, (row_number() OVER ())::int - 1, f.feature_id, 4326, ST_AsEWKB(f.geom), f.properties::text, f.geom_hash, f.props_hash
FROM {{table}} f JOIN listed l ON l.feature_id = f.feature_id
WHERE f.geom_hash IS NOT NULL
	AND NOT EXISTS (SELECT 1 FROM fetched c WHERE c.feature_id = f.feature_id)
RETURNING properties, coalesce(get_byte(geom_ewkb, 1), 0)

-- name: RecordComposedPage
-- Records page $2 of poll $1: the $3 rows ComposeDelta copied, each with
-- its own id, and their profile $4.
INSERT INTO staged_pages (poll_id, page, features, named_ids, profile) VALUES ($1, $2, $3, $3, $4)

-- name: FetchedIDs
-- The distinct ids poll $1 fetched (its pages before $2): what the proof
-- checks against the server's id list.
SELECT DISTINCT feature_id FROM staged_features WHERE poll_id = $1 AND page < $2

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
