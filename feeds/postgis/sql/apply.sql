-- The parts of a poll's apply that the one-copy statements include or run
-- (apply.go, onecopy_apply.go, sql/onecopy.sql).
-- {{table}} is the feed's table (feedTable.sql).

-- name: ApplyPlanner
-- The poll's staged rows were just COPYed and the feed's features may have
-- been written since the last ANALYZE, so the planner estimates both sides
-- at a handful of rows and picks nested loops that compare every staged
-- feature with every current one: minutes for 50k features. Both sides are
-- bulk, so hash joins are right whatever the statistics say.
-- Disabling nested loops adds a huge constant to the cost of every plan
-- that would have used one, which pushes even a 10-feature apply past
-- jit_above_cost: a second of JIT compilation per apply, for a query that
-- then runs in milliseconds. JIT never pays off here.
SET LOCAL enable_nestloop = off; SET LOCAL jit = off

-- name: IndexJoinsPlanner
-- For the statements of an apply that join a few ids with the feed's
-- table or layer (a delta's apply, the layer's refresh): by index, in
-- nested loops, not by hashing the whole table. ApplyPlanner is put back
-- after them.
SET LOCAL enable_nestloop = on

-- name: AdvisoryXactLock
-- The two-int advisory lock of class $1 (ApplyLockClass,
-- partitionLockClass) on the name $2, held until the transaction ends.
SELECT pg_advisory_xact_lock($1, hashtext($2))

-- name: CountInvalidFeatures
-- Sums the invalid features poll $1's pages counted while staging into
-- polls.invalid_features, and returns them.
UPDATE polls SET invalid_features = (
	SELECT jsonb_object_agg(reason, n) FROM (
		SELECT e.key AS reason, sum(e.value::int) AS n
		FROM staged_pages sp CROSS JOIN LATERAL jsonb_each_text(sp.invalid_features) e
		WHERE sp.poll_id = $1
		GROUP BY e.key) r)
WHERE id = $1
RETURNING invalid_features

-- name: StagedID
-- Names a staged row: its source id, or without one the hex of
-- its content hash.
CASE WHEN feature_id = '' THEN encode(sha256(geom_hash || props_hash), 'hex') ELSE feature_id END

-- name: StagedHash
-- A staged row's 16-byte content hash, a layer's ingestd_hash:
-- as staging computed it, or from its two hashes for a row staged before
-- version 44 (NULL).
coalesce(content_hash, substring(sha256(geom_hash || props_hash) for 16))

-- name: SnapshotCTEs
-- Reads poll $1's snapshot: staged (every staged row, named by its source
-- id or, without one, its hex content hash) and snapshot (the last row of
-- each id in page and ordinal order). Narrow: ids, hashes (content_hash
-- is StagedHash) and where the row is staged; the geometry and properties
-- are read back (StagedPayload) only for features that are written, so an
-- unchanged layer's payload is never moved again. COLLATE "C": the sort only groups equal ids, so it compares
-- bytes (abbreviated keys) instead of calling strcoll.
WITH staged AS (
	SELECT {{StagedID}} AS id,
		feature_id <> '' AS named, page, ordinal, geom_hash, props_hash,
		{{StagedHash}} AS content_hash
	FROM {{staged}}
	WHERE poll_id = $1
), snapshot AS MATERIALIZED (
	SELECT DISTINCT ON (id COLLATE "C") id AS feature_id, named, page, ordinal, geom_hash, props_hash, content_hash
	FROM staged
	ORDER BY id COLLATE "C", page DESC, ordinal DESC
)

-- name: SplitIDs
-- The sum of the distinct source ids each page of poll $1 counted while
-- staging; less the snapshot's distinct source ids, it counts the ids
-- staged on more than one page. NULL (unknown) when a page was staged
-- before version 14, or was too large to count in memory (StagePage);
-- callers ask OnePage first.
(SELECT CASE WHEN bool_or(named_ids IS NULL) THEN NULL ELSE sum(named_ids) END
	FROM staged_pages WHERE poll_id = $1)::int

-- name: OnePage
-- Tells whether poll $1 staged a single page: no id is then on two pages,
-- whatever SplitIDs knows (a whole document is one page).
(SELECT count(*) = 1 FROM staged_pages WHERE poll_id = $1)

-- name: StagedPayload
-- Reads back the geometry and properties of the snapshot row d (page,
-- ordinal) from staging: one primary-key lookup, done only for rows that
-- need them. The writes (ApplyWrites' towrite) add LIMIT 1 (the key makes
-- it one row anyway), which keeps PostgreSQL from turning the lookup into
-- a join: with the staging's estimates (a table COPYed into since it was
-- analysed: one row) it hashed every staged row of the poll, payload and
-- all, to write 500 of 100,000 (spilling to disk), or looped over the
-- fetched rows once per staged row (a delta's 550: 276,000 comparisons).
-- The extent guard reads every row, so a join is
-- right there.
SELECT sf.srid, sf.geom_ewkb, sf.geom_broken, sf.properties, sf.invalid_feature FROM {{staged}} sf
		WHERE sf.poll_id = $1 AND sf.page = d.page AND sf.ordinal = d.ordinal

-- name: StagedGeometry
-- g.geom: the staged payload p's geometry as stored, in EPSG:4326 (SRID 0
-- taken as 4326) and 2D.
CROSS JOIN LATERAL (SELECT CASE
			WHEN p.geom_ewkb IS NULL THEN NULL
			WHEN p.srid IN (0, 4326) THEN ST_Force2D(ST_SetSRID(ST_GeomFromEWKB(p.geom_ewkb), 4326))
			ELSE ST_Force2D(ST_Transform(ST_GeomFromEWKB(p.geom_ewkb), 4326))
		END AS geom) g

-- name: InRange
-- Tells whether the geometry g.geom (StagedGeometry: in EPSG:4326) lies
-- within longitudes [-180, 180] and latitudes [-90, 90]: lon 500 or lat 100
-- is no place on Earth, whatever the source's CRS (a geographic one passes
-- it through ST_Transform as it is). By bounding box (@): a tenth of the
-- cost of ST_XMin and its kin, and exact here, as the bounds are floats the
-- box's single precision holds (it rounds outward). An empty geometry (no
-- box) is in range; a NaN coordinate passes the box test but fails
-- ST_IsValid.
coalesce(g.geom @ ST_MakeEnvelope(-180, -90, 180, 90, 4326) OR ST_IsEmpty(g.geom), true)

-- name: InvalidGeometry
-- Tells whether the staged row p's geometry g.geom is invalid: it could not
-- be parsed (geom_broken) or transformed, lies out of range, or is not
-- valid for ST_IsValid. A CASE, so that ST_IsValid only sees geometries in
-- range.
CASE
		WHEN p.geom_broken THEN true
		-- No geometry from a staged one: its transform failed (runApply).
		WHEN g.geom IS NULL THEN p.geom_ewkb IS NOT NULL
		WHEN NOT {{InRange}} THEN true
		ELSE NOT ST_IsValid(g.geom)
	END

-- name: StoredGeometry
-- The geometry stored for g.geom before repair: none when it lies out of
-- range (there is no faithful repair for lon 500).
CASE WHEN {{InRange}} THEN g.geom END

-- name: SkippedRow
-- Tells whether the towrite row w is left out: its geometry is invalid and
-- the feed skips those ($7, invalid_geometry: skip), its properties have no
-- faithful repair, or they (or its id) were repaired and the feed skips
-- those ($8, invalid_feature: skip). A skipped feature keeps its previous
-- version, and a new one is not added.
((w.invalid AND $7) OR w.invalid_feature = 2 OR (w.invalid_feature = 1 AND $8::boolean))

-- name: ExtentCTE
-- Counts, for the extent guard, the snapshot's features that have a
-- geometry and those whose bounding box (in EPSG:4326) does not intersect
-- the jurisdiction's bbox ($6). Evaluated only when the verdict asks.
extent AS (
	SELECT count(*) AS located, count(*) FILTER (WHERE NOT (
		CASE WHEN p.srid IN (0, 4326) THEN ST_SetSRID(x.geom, 4326)
		     ELSE ST_Transform(ST_Envelope(x.geom), 4326)
		END && ST_MakeEnvelope(($6::float8[])[1], ($6::float8[])[2], ($6::float8[])[3], ($6::float8[])[4], 4326))) AS outside
	FROM snapshot d
	CROSS JOIN LATERAL ({{StagedPayload}}) p
	CROSS JOIN LATERAL (SELECT ST_GeomFromEWKB(p.geom_ewkb) AS geom) x
	-- An empty geometry is nowhere: neither inside nor outside.
	WHERE p.geom_ewkb IS NOT NULL AND NOT ST_IsEmpty(x.geom)
)

-- name: ExtentReason
-- The extent guard's reason, from e's counts and the bbox $6.
format('extent: %s of %s located features lie outside the jurisdiction''s bbox [%s]',
	e.outside, e.located, array_to_string($6::float8[], ', '))

-- name: RepairedGeometry
-- The geometry stored for the row t (towrite, or BulkCreate's s): an
-- invalid one repaired by ingestd_repair_geometry (migration 25), which
-- keeps its family (the polygonal part of a polygon…) and answers NULL
-- when nothing of it is left.
CASE WHEN t.invalid AND t.geom IS NOT NULL THEN ingestd_repair_geometry(t.geom) ELSE t.geom END

-- name: UnchangedLargePlanner
-- Staging's statistics describe whatever it held at its last ANALYZE: a new
-- poll's rows are estimated at one, and the planner would then reach them
-- by index and hash all of them in every parallel worker. Without index
-- scans it hashes them once, in parallel.
SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off

-- name: UnchangedLargePlannerReset
-- ApplyDiff reads the staged payload by index.
RESET enable_indexscan; RESET enable_bitmapscan

-- name: PagesDisjoint
-- Counts the feature ids poll $1 staged on more than one page, with the
-- first of them and its pages.
SELECT count(*)::int, min(feature_id), (array_agg(pages ORDER BY feature_id))[1]
FROM (
	SELECT feature_id, array_to_string(array_agg(DISTINCT page ORDER BY page), ', ') AS pages
	FROM {{staged}} WHERE poll_id = $1 AND feature_id <> ''
	GROUP BY feature_id HAVING min(page) <> max(page)
) d

-- name: HeldPollOfFeed
-- The feed's held poll, if any.
SELECT held_poll_id FROM feed_status WHERE jurisdiction = $1 AND feed = $2

-- name: SupersedeHeld
-- An older held snapshot is moot once a newer one applied or is held.
UPDATE polls SET status = 'superseded' WHERE id = $1 AND status = 'held'

-- name: RecordHeldPoll
UPDATE polls SET status = 'held', finished_at = now(), error = $2, pages = $3, features = $4, duplicate_ids = $5
WHERE id = $1

-- name: RecordHeldFeed
-- last_error too, so that views that do not know 'held' still show the
-- feed as not applying, with the reason. The validators go: the layer the
-- server has now is the held one, and the next poll must fetch it whole.
UPDATE feed_status SET held_poll_id = $3, held_reason = $4, held_at = now(),
	last_error = 'snapshot held: ' || $4, last_error_at = now(),
	last_poll_id = GREATEST(last_poll_id, $3), validators = NULL, validators_for = NULL
WHERE jurisdiction = $1 AND feed = $2

-- name: RecordAppliedPoll
UPDATE polls SET status = 'succeeded', finished_at = now(), pages = $2, features = $3,
	added = $4, modified = $5, removed = $6, unchanged = $7, duplicate_ids = $8, invalid_geometries = $9,
	error = CASE WHEN status = 'held' THEN 'accepted: ' || error ELSE error END
WHERE id = $1

-- name: RecordAppliedFeed
-- The validators are the applied poll's ($4, also an accepted held one's).
UPDATE feed_status SET last_success_at = now(), feature_count = $3, consecutive_failures = 0,
	retry_after = NULL, last_poll_id = GREATEST(last_poll_id, $4),
	held_poll_id = NULL, held_reason = NULL, held_at = NULL,
	(validators, validators_for) = (SELECT validators, validators_for FROM polls WHERE id = $4)
WHERE jurisdiction = $1 AND feed = $2
