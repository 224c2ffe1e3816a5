-- A feed's first load into its new table {{table}} (firstload.go).

-- name: FirstLoad
-- ApplyDiff for a feed's first load, into the new table {{table}}: every
-- feature is added, so there is nothing to diff and of the guards only the
-- extent can hold the snapshot. One pass from the snapshot to the table;
-- the change log is one row for the load (FirstLoadLogged). Same parameters
-- and row as ApplyDiff.
{{SnapshotCTEs}}, {{ExtentCTE}}, verdict AS MATERIALIZED (
	SELECT CASE WHEN NOT $4 AND $6::float8[] IS NOT NULL AND (SELECT 2 * e.outside > e.located FROM extent e) THEN
		(SELECT {{ExtentReason}} FROM extent e)
	END AS reason,
	-- max_shrink cannot hold a first load, and it supersedes no version
	-- (history, $9); typed here so that the statement takes ApplyDiff's
	-- parameters.
	$5::float8 AS max_shrink, $9::boolean AS keep_history
), towrite AS MATERIALIZED (
	SELECT w.*, {{SkippedRow}} AS skipped FROM (
	SELECT d.feature_id, d.geom_hash, d.props_hash, sha256(d.geom_hash || d.props_hash) AS content_hash,
		p.properties, p.invalid_feature, {{StoredGeometry}} AS geom, {{InvalidGeometry}} AS invalid
	FROM snapshot d
	-- Each geometry parsed and transformed once: OFFSET 0 keeps the
	-- subqueries from being pulled up (BulkCreate says why).
	JOIN (
		SELECT p.*, g.geom AS geom_4326 FROM staged_features p
		{{StagedGeometry}}
		WHERE p.poll_id = $1
		OFFSET 0
	) p ON p.page = d.page AND p.ordinal = d.ordinal
	CROSS JOIN LATERAL (SELECT p.geom_4326 AS geom) g
	WHERE (SELECT reason FROM verdict) IS NULL
	OFFSET 0
	) w
), written AS (
	{{InsertWritten}}
	RETURNING feature_id, content_hash
), logged AS (
	-- One row for the load (FirstLoadLogged), if it wrote any feature.
	{{FirstLoadLogged}}
	SELECT $1, $2, $3, '', 'loaded', now() WHERE EXISTS (SELECT FROM written)
)
SELECT
	c.features,
	(SELECT count(*) FROM written)::int,
	0, 0, 0,
	(SELECT count(*) FROM staged_pages WHERE poll_id = $1)::int,
	0,
	(SELECT reason FROM verdict),
	(SELECT count(*) FROM towrite WHERE invalid)::int,
	CASE WHEN {{OnePage}} THEN 0 ELSE {{SplitIDs}} - c.named END
FROM (SELECT count(*)::int AS features, count(*) FILTER (WHERE named)::int AS named FROM snapshot) c

-- name: BulkPlanner
-- Staging's statistics are stale (a new poll's rows are estimated at one):
-- without index scans the planner reads the poll's rows with a parallel
-- sequential scan, and zero setup costs let it use workers whatever it
-- thinks the poll's size is.
SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off;
SET LOCAL parallel_setup_cost = 0; SET LOCAL parallel_tuple_cost = 0

-- name: BulkPlannerReset
-- Back to the defaults for the key and index builds, which sort in
-- maintenance_work_mem (PostgreSQL's default spills a large layer to disk).
RESET enable_indexscan; RESET enable_bitmapscan;
RESET parallel_setup_cost; RESET parallel_tuple_cost;
SET LOCAL maintenance_work_mem = '256MB'

-- name: BulkCreate
-- Creates the feed's table {{table}} from poll $1's staged rows ($2, $3:
-- jurisdiction and feed), with features' columns and four more:
-- load_invalid (the geometry was invalid: repaired here, RepairedGeometry),
-- load_out_of_range (it lay outside ±180°/±90°: stored without it),
-- load_skip (the row's update is skipped: SkippedRow's feature part, $4
-- being invalid_feature: skip) and load_named (the row has a source id).
-- Properties of a skipped row are not parsed: they may be NULL (NULL
-- too in properties). Pages filled as CreateLoadTable's.
CREATE TABLE {{table}} WITH ({{FeedTableFillFactor}}) AS
SELECT $2::text AS jurisdiction, $3::text AS feed, t.feature_id,
	({{RepairedGeometry}})::geometry(Geometry, 4326) AS geom,
	t.properties, t.content_hash,
	now() AS first_seen_at, now() AS changed_at, $1::bigint AS poll_id, t.geom_hash, t.props_hash,
	t.invalid AS load_invalid, t.out_of_range AS load_out_of_range, t.skip AS load_skip, t.named AS load_named
FROM (
	-- StagedID's unqualified columns are p's (g has only geom).
	SELECT {{StagedID}} AS feature_id, p.feature_id <> '' AS named,
		p.geom_hash, p.props_hash, p.properties_jsonb AS properties, p.content_hash, {{StoredGeometry}} AS geom,
		{{InvalidGeometry}} AS invalid,
		g.geom IS NOT NULL AND NOT {{InRange}} AS out_of_range,
		p.invalid_feature = 2 OR (p.invalid_feature = 1 AND $4::boolean) AS skip
	FROM (
		-- Each geometry parsed and transformed once, and the properties
		-- parsed, by the parallel workers that scan staging (see OFFSET 0
		-- below); the levels above run in the leader.
		SELECT p.*, g.geom AS geom_4326,
			(CASE WHEN NOT (p.invalid_feature = 2 OR (p.invalid_feature = 1 AND $4::boolean))
				THEN p.properties END)::jsonb AS properties_jsonb,
			sha256(p.geom_hash || p.props_hash) AS content_hash
		FROM staged_features p
		{{StagedGeometry}}
		WHERE p.poll_id = $1
		OFFSET 0
	) p
	CROSS JOIN LATERAL (SELECT p.geom_4326 AS geom) g
	-- OFFSET 0 keeps each subquery a level of its own. Pulled up, every
	-- mention of g.geom (eight, through InRange, StoredGeometry and
	-- InvalidGeometry) and of t.invalid and t.geom (RepairedGeometry)
	-- would be replaced by the expression behind it and evaluated again:
	-- up to ten transforms and two ST_IsValid per feature. 250k parcels:
	-- 12.1 s with the repeats, 3.3 s without (EXPLAIN ANALYZE, same
	-- sitting; docs/benchmarks.md).
	OFFSET 0
) t

-- name: BulkCounts
-- Counts {{table}}'s rows, invalid geometries, rows skipped and rows with a
-- source id, and gives the extent guard's verdict (NULL: not held) for the
-- bbox $1 (float8[4], EPSG:4326, or NULL), unless $2 accepts the snapshot.
-- As ExtentCTE, a geometry out of range is located and outside, an empty
-- one neither. The reason is ExtentReason's, with the bbox as $1.
SELECT e.rows, e.invalid, e.skipped, e.named,
	CASE WHEN NOT $2 AND $1::float8[] IS NOT NULL AND 2 * e.outside > e.located THEN
		format('extent: %s of %s located features lie outside the jurisdiction''s bbox [%s]',
			e.outside, e.located, array_to_string($1::float8[], ', ')) END
FROM (SELECT count(*)::int AS rows,
		count(*) FILTER (WHERE load_invalid)::int AS invalid,
		count(*) FILTER (WHERE load_skip)::int AS skipped,
		count(*) FILTER (WHERE load_named)::int AS named,
		count(*) FILTER (WHERE load_out_of_range OR NOT ST_IsEmpty(geom)) AS located,
		count(*) FILTER (WHERE $1::float8[] IS NOT NULL AND (load_out_of_range OR NOT ST_IsEmpty(geom) AND NOT geom && ST_MakeEnvelope(
			($1::float8[])[1], ($1::float8[])[2], ($1::float8[])[3], ($1::float8[])[4], 4326))) AS outside
	FROM {{table}}) e

-- name: BulkBuildKey
-- One scan: drops load_named, sets NOT NULL as on features, adds the
-- constraint that implies the partition bound and builds the primary key
-- (which a repeated id fails).
ALTER TABLE {{table}} DROP COLUMN load_named,
	ALTER jurisdiction SET NOT NULL, ALTER feed SET NOT NULL, ALTER content_hash SET NOT NULL,
	ALTER first_seen_at SET NOT NULL, ALTER changed_at SET NOT NULL, ALTER poll_id SET NOT NULL,
	ADD CONSTRAINT {{table_bound}} CHECK (jurisdiction = {{jurisdiction}} AND feed = {{feed}}),
	ADD CONSTRAINT {{table_pkey}} PRIMARY KEY (feature_id, jurisdiction, feed)

-- name: BulkPagesAndSplit
-- Poll $1's pages, and its ids staged on more than one page given the $2
-- distinct source ids loaded.
SELECT (SELECT count(*) FROM staged_pages WHERE poll_id = $1)::int,
	CASE WHEN {{OnePage}} THEN 0 ELSE {{SplitIDs}} - $2 END

-- name: BulkDeleteSkipped
-- Leaves out the rows the feed skips ($1: invalid_geometry: skip).
DELETE FROM {{table}} WHERE load_skip OR (load_invalid AND $1)

-- name: BulkDropLoadColumns
-- Their byte stays in each row until the table is rewritten.
ALTER TABLE {{table}} DROP COLUMN load_invalid, DROP COLUMN load_out_of_range, DROP COLUMN load_skip

-- name: BulkChangeLog
-- The change log of poll $1's bulk first load of feed ($2, $3): one row
-- (FirstLoadLogged) if it loaded any feature.
{{FirstLoadLogged}}
SELECT $1, $2, $3, '', 'loaded', now() WHERE EXISTS (SELECT FROM {{table}})

-- name: FirstLoadLogged
-- The change log of a first load: one row, change 'loaded' (migration 28:
-- feature_changes_expanded lists the features it added).
INSERT INTO feature_changes (poll_id, jurisdiction, feed, feature_id, change, changed_at)
