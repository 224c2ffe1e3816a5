-- The apply of a poll's snapshot to its feed's table (store.go, apply.go).
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
-- Names a staged_features row: its source id, or without one the hex of
-- its content hash.
CASE WHEN feature_id = '' THEN encode(sha256(geom_hash || props_hash), 'hex') ELSE feature_id END

-- name: SnapshotCTEs
-- Reads poll $1's snapshot: staged (every staged row, named by its source
-- id or, without one, its hex content hash) and snapshot (the last row of
-- each id in page and ordinal order). Narrow: ids, hashes and where the row
-- is staged; the geometry and properties are read back (StagedPayload) only
-- for features that are written, so an unchanged layer's payload is never
-- moved again. COLLATE "C": the sort only groups equal ids, so it compares
-- bytes (abbreviated keys) instead of calling strcoll.
WITH staged AS (
	SELECT {{StagedID}} AS id,
		feature_id <> '' AS named, page, ordinal, geom_hash, props_hash
	FROM staged_features
	WHERE poll_id = $1
), snapshot AS MATERIALIZED (
	SELECT DISTINCT ON (id COLLATE "C") id AS feature_id, named, page, ordinal, geom_hash, props_hash
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
SELECT sf.srid, sf.geom_ewkb, sf.geom_broken, sf.properties, sf.invalid_feature FROM staged_features sf
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

-- name: GeometryLost
-- Tells, for ApplyWrites' verdict, whether the snapshot (counts c) lost
-- every geometry: none of its features has a non-empty one, while some
-- feature of the feed's table has. A delta's snapshot is the features it
-- fetched, not the layer, and is not asked. Each probe stops at its first
-- geometry. The table is asked first: a layer with geometries answers at
-- its first row either way, while an attribute table (no geometry stored)
-- is then answered by one scan of its table rather than a staged-row
-- lookup per feature of every poll's snapshot.
CASE WHEN c.delta OR c.features = 0 THEN false
	WHEN NOT EXISTS (SELECT 1 FROM {{table}} f WHERE f.geom IS NOT NULL AND NOT ST_IsEmpty(f.geom)) THEN false
	ELSE NOT EXISTS (SELECT 1 FROM snapshot d CROSS JOIN LATERAL ({{StagedPayload}}) p
		WHERE p.geom_ewkb IS NOT NULL AND NOT ST_IsEmpty(ST_GeomFromEWKB(p.geom_ewkb)))
END

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

-- name: InsertWritten
-- Writes towrite's rows into the feed's table: invalid geometries
-- repaired (RepairedGeometry), the rows SkippedRow skips left out.
INSERT INTO {{table}} AS f (jurisdiction, feed, feature_id, geom, properties, geom_hash, props_hash,
		content_hash, first_seen_at, changed_at, poll_id)
	SELECT $2, $3, t.feature_id,
		{{RepairedGeometry}},
		t.properties::jsonb, t.geom_hash, t.props_hash, t.content_hash, now(), now(), $1
	FROM towrite t
	WHERE NOT t.skipped

-- name: ApplyUpsert
-- Turns an added id that exists into an update (every written row of a
-- table that already holds the feed is added or modified).
ON CONFLICT (jurisdiction, feed, feature_id) DO UPDATE SET
		geom = excluded.geom, properties = excluded.properties, geom_hash = excluded.geom_hash,
		props_hash = excluded.props_hash, content_hash = excluded.content_hash,
		changed_at = CASE WHEN f.geom_hash IS NULL AND f.props_hash = excluded.props_hash THEN f.changed_at ELSE excluded.changed_at END,
		poll_id = CASE WHEN f.geom_hash IS NULL AND f.props_hash = excluded.props_hash THEN f.poll_id ELSE excluded.poll_id END

-- name: SupersededCTE
-- Keeps the versions ApplyDiff's snapshot supersedes in feature_history,
-- unless the feed keeps none ($9 false): a modified feature's old row as
-- the statement's snapshot still shows it (the upsert's change is not
-- visible to its sibling CTEs), read by primary key for the rows written
-- only (LIMIT 1: a probe per row, never a join over the table); a removed
-- one as the DELETE returned it. A legacy row adopting its
-- hashes is no modification, and a skipped row keeps its version.
superseded AS (
	INSERT INTO feature_history (jurisdiction, feed, feature_id, geom, properties, content_hash,
		valid_from, valid_to, from_poll, to_poll, ended_by)
	SELECT $2, $3, o.feature_id, o.geom, o.properties, o.content_hash, o.changed_at, now(), o.poll_id, $1, 'modified'
	FROM towrite t
	CROSS JOIN LATERAL (SELECT f.feature_id, f.geom, f.properties, f.content_hash, f.changed_at, f.poll_id
		FROM {{table}} f WHERE f.feature_id = t.feature_id LIMIT 1) o
	WHERE $9 AND t.existed AND NOT t.skipped AND (t.geom_changed OR t.props_changed)
	  AND NOT (t.legacy AND NOT t.props_changed)
	UNION ALL
	SELECT $2, $3, r.feature_id, r.geom, r.properties, r.content_hash, r.changed_at, now(), r.poll_id, $1, 'removed'
	FROM removed r WHERE $9
)

-- name: ApplyDiff
-- Diffs the poll's staged snapshot ($1) against the feed's features ($2,
-- $3), asks the guards, and — unless they hold it — writes the difference,
-- the superseded versions (SupersededCTE, $9 keeps them) and the change
-- log, all in one statement and one pass over the staging.
-- $4 true bypasses the guards (accept); $5 is max_shrink; $6 the
-- jurisdiction's bbox (float8[4], EPSG:4326) or NULL; $7 skips features
-- with an invalid geometry, $8 those whose id or properties were repaired
-- (SkippedRow).
--
-- The data-modifying CTEs see the same snapshot of features and touch
-- disjoint rows (written: ids in the snapshot; removed: ids not in it);
-- PostgreSQL runs each to completion even though the final SELECT reads
-- only some of them. Each is gated on the verdict, so a held snapshot
-- writes nothing; the verdict's subqueries for the extent and the freeze
-- only run when their CASE branch is reached.
--
-- Guards, in order (the first that trips is the reason):
--   - empty: no features while the feed has some;
--   - shrink: fewer than (1 - max_shrink) × the previous count of distinct
--     features (so a server repeating its first page for every page, which
--     stages many rows but few ids, is caught too);
--   - geometry: not one of the snapshot's features has a geometry (each is
--     missing or empty) while the feed's features have some (GeometryLost):
--     an export gone wrong would otherwise wipe the layer's geometry and
--     the typed view's geom column, a shrink of the layer's meaning;
--   - extent: more than half of the features that have a geometry have a
--     bounding box (after transform to EPSG:4326) that does not intersect
--     the bbox — a swapped axis order or a wrong CRS;
--   - freeze: the snapshot would remove features while the feed is stale
--     (its last success is older than 2 × its expected interval, the
--     feed_freshness rule) or its origin is stuck open (breaker_state.stuck).
--
-- A written row that exists is updated (ApplyUpsert).
--
-- Its row is ApplyWrites'.
{{SnapshotCTEs}}, diff AS MATERIALIZED (
	-- One pass over both sides: present rows are the snapshot's, rows
	-- only in the feed's table (NOT present) are the removed ones.
	SELECT s.*, f.feature_id AS old_id, s.feature_id IS NOT NULL AS present,
		f.feature_id IS NOT NULL AS existed, f.content_hash AS old_hash,
		f.geom_hash IS DISTINCT FROM s.geom_hash AS geom_changed,
		f.props_hash IS DISTINCT FROM s.props_hash AS props_changed,
		-- A row written before geometry hashes: adopt the new hashes
		-- silently when the properties did not change.
		f.feature_id IS NOT NULL AND f.geom_hash IS NULL AS legacy
	FROM snapshot s
	FULL JOIN (SELECT feature_id, content_hash, geom_hash, props_hash FROM {{table}}) f ON f.feature_id = s.feature_id
), counts AS MATERIALIZED (
	SELECT
		count(*) FILTER (WHERE present)::int AS features,
		count(*) FILTER (WHERE present AND NOT existed)::int AS added,
		count(*) FILTER (WHERE present AND existed AND (geom_changed OR props_changed)
			AND NOT (legacy AND NOT props_changed))::int AS modified,
		count(*) FILTER (WHERE present AND existed)::int AS kept,
		count(*) FILTER (WHERE existed)::int AS previous,
		count(*) FILTER (WHERE present AND named)::int AS named,
		count(*) FILTER (WHERE present)::int AS fetched,
		false AS delta
	FROM diff
), {{ApplyWrites}}

-- name: ApplyWrites
-- The rest of ApplyDiff and ApplyDelta, after their diff (one row per
-- snapshot feature to judge: present, and per removed one: NOT present)
-- and counts (features, added, modified, kept, previous, named, fetched,
-- delta):
-- the guards' verdict, the writes, the superseded versions and the change
-- log, and the statement's row: distinct features, added, modified,
-- unchanged, removed, pages, previous features, the guards' verdict,
-- invalid geometries, ids staged on more than one page (SplitIDs), and
-- the distinct features the poll staged.
{{ExtentCTE}}, verdict AS MATERIALIZED (
	SELECT CASE
		WHEN $4 THEN NULL
		WHEN c.previous > 0 AND c.features = 0 THEN
			format('empty: the snapshot has no features, the feed has %s', c.previous)
		WHEN c.features < (1 - $5::float8) * c.previous THEN
			format('shrink: the snapshot has %s features, the feed has %s (max_shrink %s allows no fewer than %s)',
				c.features, c.previous, $5::float8, ceil((1 - $5::float8) * c.previous))
		WHEN {{GeometryLost}} THEN
			format('geometry: none of the snapshot''s %s features has a geometry (each is missing or empty), while the feed''s features have them',
				c.features)
		WHEN $6::float8[] IS NOT NULL AND (SELECT 2 * e.outside > e.located FROM extent e) THEN
			(SELECT {{ExtentReason}} FROM extent e)
		WHEN c.previous > c.kept AND fz.stale THEN
			format('freeze: the snapshot would remove %s features while the feed is stale (last success %s)',
				c.previous - c.kept, fz.last_success_at)
		WHEN c.previous > c.kept AND fz.stuck THEN
			format('freeze: the snapshot would remove %s features while its origin %s is stuck open',
				c.previous - c.kept, fz.origin)
	END AS reason
	FROM counts c
	LEFT JOIN (
		SELECT s.last_success_at, s.origin,
			coalesce(s.expected_interval IS NOT NULL AND now() - s.last_success_at > 2 * s.expected_interval, false) AS stale,
			EXISTS (SELECT 1 FROM breaker_state b WHERE b.origin = s.origin AND b.stuck AND b.state <> 'closed') AS stuck
		FROM feed_status s WHERE s.jurisdiction = $2 AND s.feed = $3
	) fz ON true
), towrite AS MATERIALIZED (
	SELECT w.*, {{SkippedRow}} AS skipped FROM (
	-- Only added and modified features are transformed and judged valid:
	-- an unchanged layer costs no geometry work at all.
	-- The content hash too is computed only for rows that are written.
	SELECT d.*, sha256(d.geom_hash || d.props_hash) AS content_hash, p.properties, p.invalid_feature,
		{{StoredGeometry}} AS geom, {{InvalidGeometry}} AS invalid
	FROM diff d
	CROSS JOIN LATERAL ({{StagedPayload}} LIMIT 1) p
	{{StagedGeometry}}
	WHERE d.present AND (NOT d.existed OR d.geom_changed OR d.props_changed)
	  AND (SELECT reason FROM verdict) IS NULL
	) w
), written AS (
	{{InsertWritten}}
	{{ApplyUpsert}}
), removed AS (
	-- The ids come from diff; usually there are none or few. An array
	-- the key is probed with, not a join whose plan depends on the
	-- estimates of a table that may never have been analysed.
	DELETE FROM {{table}} f
	WHERE f.feature_id = ANY (ARRAY(SELECT old_id FROM diff WHERE NOT present))
	  AND (SELECT reason FROM verdict) IS NULL
	RETURNING f.feature_id, f.content_hash, f.geom, f.properties, f.changed_at, f.poll_id
), {{SupersededCTE}}, logged AS (
	INSERT INTO feature_changes (poll_id, jurisdiction, feed, feature_id, change,
		geometry_changed, properties_changed, old_hash, new_hash, changed_at)
	SELECT $1, $2, $3, d.feature_id, CASE WHEN d.existed THEN 'modified' ELSE 'added' END,
		CASE WHEN NOT d.existed THEN true WHEN d.legacy THEN NULL ELSE d.geom_changed END,
		NOT d.existed OR d.props_changed, d.old_hash, d.content_hash, now()
	FROM towrite d
	WHERE (NOT d.existed OR ((d.geom_changed OR d.props_changed) AND NOT (d.legacy AND NOT d.props_changed)))
	  AND NOT d.skipped
	UNION ALL
	SELECT $1, $2, $3, r.feature_id, 'removed', true, true, r.content_hash, NULL, now()
	FROM removed r
)
SELECT
	c.features,
	-- A skipped feature is neither added nor modified: its old version stays.
	c.added - (SELECT count(*) FROM towrite WHERE skipped AND NOT existed)::int,
	c.modified - (SELECT count(*) FROM towrite WHERE skipped AND existed
		AND NOT (legacy AND NOT props_changed))::int,
	c.features - c.added - c.modified,
	(SELECT count(*) FROM removed)::int,
	(SELECT count(*) FROM staged_pages WHERE poll_id = $1)::int,
	c.previous,
	(SELECT reason FROM verdict),
	(SELECT count(*) FROM towrite WHERE invalid)::int,
	CASE WHEN {{OnePage}} THEN 0 ELSE {{SplitIDs}} - c.named END,
	c.fetched
FROM counts c

-- name: Unchanged
-- Counts, for unchangedSnapshot, the pages of poll $1, the snapshot's
-- distinct features, those of them that are new or whose hashes differ from
-- the feed's ($2, $3) table, the features the table holds (more than the
-- snapshot's unchanged ones: removals), and the split ids.
{{SnapshotCTEs}}
SELECT
	(SELECT count(*) FROM staged_pages WHERE poll_id = $1)::int,
	count(*)::int,
	count(*) FILTER (WHERE f.feature_id IS NULL OR f.geom_hash IS DISTINCT FROM s.geom_hash
		OR f.props_hash IS DISTINCT FROM s.props_hash)::int,
	(SELECT count(*) FROM {{table}} WHERE jurisdiction = $2 AND feed = $3)::int,
	CASE WHEN {{OnePage}} THEN 0 ELSE {{SplitIDs}} - count(*) FILTER (WHERE s.named) END
FROM snapshot s
LEFT JOIN {{table}} f ON f.jurisdiction = $2 AND f.feed = $3 AND f.feature_id = s.feature_id

-- name: UnchangedLargePlanner
-- Staging's statistics describe whatever it held at its last ANALYZE: a new
-- poll's rows are estimated at one, and the planner would then reach them
-- by index and hash all of them in every parallel worker. Without index
-- scans it hashes them once, in parallel.
SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off

-- name: UnchangedLargePlannerReset
-- ApplyDiff reads the staged payload by index.
RESET enable_indexscan; RESET enable_bitmapscan

-- name: UnchangedLarge
-- Counts the pages of poll $1, the features of the feed's table, and those
-- of them that poll $1 staged with the same id and hashes. When both counts
-- equal the staged count, the staged rows and the table match one to one
-- (the table's ids are unique): the snapshot is the table, with no repeated
-- id and so no id on two pages. No sort and no write: a parallel hash
-- semi-join.
SELECT
	(SELECT count(*) FROM staged_pages WHERE poll_id = $1)::int,
	(SELECT count(*) FROM {{table}})::int,
	(SELECT count(*) FROM {{table}} f WHERE EXISTS (
		-- StagedID's unqualified columns are s's (the innermost scope).
		SELECT FROM staged_features s
		WHERE s.poll_id = $1
		  AND {{StagedID}} = f.feature_id
		  AND s.geom_hash = f.geom_hash AND s.props_hash = f.props_hash))::int

-- name: PagesDisjoint
-- Counts the feature ids poll $1 staged on more than one page, with the
-- first of them and its pages.
SELECT count(*)::int, min(feature_id), (array_agg(pages ORDER BY feature_id))[1]
FROM (
	SELECT feature_id, array_to_string(array_agg(DISTINCT page ORDER BY page), ', ') AS pages
	FROM staged_features WHERE poll_id = $1 AND feature_id <> ''
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
