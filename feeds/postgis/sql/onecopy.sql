-- One copy of each layer (onecopy_apply.go; docs/decisions/0200): the
-- feed's layer table <schema>.<name> holds its current features, typed,
-- with the bookkeeping the poll needs. The placeholders in lower case are
-- filled per layer by oneCopyLayer.sql: {{layer}} the layer table,
-- {{row_cols}} and {{row_exprs}} its columns and their values for a row
-- (typed over t.props, the geometry over r.g and x.tg), {{as_geometry}}
-- the layer's geometry type applied to r.g, {{old_props}} and {{old_geom}}
-- a stored row o rebuilt in its generic form, {{any_geom}} a stored row
-- f's geometry, whichever column holds it.

-- name: OneCopyLookup
-- Whether the feed's ($2, $3) one-copy layer exists (its table has the
-- content hash column), the layer as {schema, name}, the features poll
-- $1 staged, those the feed held after its last apply, whether that
-- apply changed anything, and whether the layer's schema has its history
-- table.
SELECT coalesce((SELECT true FROM pg_attribute a WHERE a.attrelid = to_regclass(ingestd_feed_view($2, $3))
		AND a.attname = 'ingestd_hash' AND NOT a.attisdropped), false),
	ingestd_feed_layer($2, $3),
	(SELECT coalesce(sum(features), 0) FROM staged_pages WHERE poll_id = $1),
	coalesce((SELECT feature_count FROM feed_status WHERE jurisdiction = $2 AND feed = $3), 0),
	coalesce((SELECT modified = 0 AND removed = 0 AND added IN (0, features) FROM polls
		WHERE jurisdiction = $2 AND feed = $3 AND status = 'succeeded' ORDER BY started_at DESC LIMIT 1), true),
	to_regclass(format('%I.ingestd_history', (ingestd_feed_layer($2, $3))[1])) IS NOT NULL

-- name: OneCopyMovedLayer
-- The feed's ($1, $2) one-copy layer table under the name it had before
-- its layer was renamed (feed_layers), as {schema, name}; NULL when it
-- has none elsewhere.
SELECT ARRAY[n.nspname::text, c.relname::text]
FROM feed_layers l
JOIN pg_class c ON c.oid = to_regclass(l.layer)
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE l.jurisdiction = $1 AND l.feed = $2 AND c.oid IS DISTINCT FROM to_regclass(ingestd_feed_view($1, $2))
  AND EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'ingestd_hash' AND NOT a.attisdropped)

-- name: OneCopyStoredColumns
-- The attribute columns the feed's ($1, $2) layer table has, in its
-- order: each column's attribute, its layer column, its type as the table
-- has it and the scale a double precision column renders at; and the
-- table's geometry type ('' for no geom column). The table, not
-- feed_columns, says which: a layer a user's view kept from being
-- reshaped has its old columns.
SELECT DISTINCT ON (a.attnum) c.name, c.view_column,
	CASE format_type(a.atttypid, a.atttypmod) WHEN 'timestamp with time zone' THEN 'timestamptz'
		ELSE format_type(a.atttypid, a.atttypmod) END,
	c.scale,
	coalesce((SELECT postgis_typmod_type(g.atttypmod) FROM pg_attribute g
		WHERE g.attrelid = a.attrelid AND g.attname = 'geom' AND NOT g.attisdropped), '')
FROM feed_columns c
JOIN pg_attribute a ON a.attrelid = to_regclass(ingestd_feed_view($1, $2)) AND a.attname = c.view_column
	AND a.attnum > 0 AND NOT a.attisdropped
WHERE c.jurisdiction = $1 AND c.feed = $2
ORDER BY a.attnum, c.removed_at DESC NULLS FIRST

-- name: OneCopyStoredGeometry
-- The geometry type of the feed's ($1, $2) layer table ('' for no geom
-- column).
SELECT coalesce((SELECT postgis_typmod_type(g.atttypmod) FROM pg_attribute g
	WHERE g.attrelid = to_regclass(ingestd_feed_view($1, $2)) AND g.attname = 'geom' AND NOT g.attisdropped), '')

-- name: OneCopySetScales
-- The scales the feed's ($1, $2) layer table renders its columns ($3) at
-- ($4, NULL: none), set when the table is written whole.
UPDATE feed_columns c SET scale = s.scale
FROM unnest($3::text[], $4::int[]) AS s(name, scale)
WHERE c.jurisdiction = $1 AND c.feed = $2 AND c.name = s.name AND c.scale IS DISTINCT FROM s.scale

-- name: OneCopyCreateSchema
-- The jurisdiction's schema for its first poll or layer, with the table
-- its polls stage into (migration 47, docs/decisions/0226) and the table
-- of its feeds' superseded versions (migration 46, docs/decisions/0225):
-- each a statement of its own, at the top level, which is what Citus
-- distributes in a distributed schema.
CREATE SCHEMA IF NOT EXISTS {{schema}};
CREATE UNLOGGED TABLE IF NOT EXISTS {{staged}} (
	poll_id bigint NOT NULL,
	page integer NOT NULL,
	ordinal integer NOT NULL,
	feature_id text NOT NULL,
	srid integer NOT NULL,
	geom_ewkb bytea,
	properties text,
	geom_hash bytea NOT NULL,
	geom_broken boolean NOT NULL DEFAULT false,
	props_hash bytea NOT NULL,
	invalid_feature smallint NOT NULL DEFAULT 0,
	content_hash bytea,
	PRIMARY KEY (poll_id, page, ordinal));
CREATE TABLE IF NOT EXISTS {{history}} (
	feed text NOT NULL,
	feature_id text NOT NULL,
	geom geometry(Geometry, 4326),
	properties jsonb,
	content_hash bytea NOT NULL,
	valid_from timestamptz NOT NULL,
	valid_to timestamptz NOT NULL,
	from_poll bigint NOT NULL,
	to_poll bigint NOT NULL,
	ended_by text NOT NULL CHECK (ended_by IN ('modified', 'removed')));
CREATE INDEX IF NOT EXISTS ingestd_history_feature ON {{history}} (feed, feature_id, to_poll);
CREATE INDEX IF NOT EXISTS ingestd_history_valid_to ON {{history}} (feed, valid_to)

-- name: OneCopyMoveHistory
-- Feed $1's superseded versions from the history table of its layer's old
-- schema ({{old_history}}) to the new one's, with the layer.
WITH moved AS (DELETE FROM {{old_history}} h WHERE h.feed = $1 RETURNING h.*)
INSERT INTO {{history}} (feed, feature_id, geom, properties, content_hash, valid_from, valid_to, from_poll, to_poll, ended_by)
SELECT feed, feature_id, geom, properties, content_hash, valid_from, valid_to, from_poll, to_poll, ended_by FROM moved

-- name: OneCopyLoadSource
-- Poll $1's staged rows as a first load reads them (BulkCreate's inner
-- levels: each geometry parsed and transformed once, the properties
-- parsed, by the parallel workers that scan staging), {{dedupe}} keeping
-- only each id's last row when the snapshot repeats ids; $2 is
-- invalid_feature: skip.
SELECT {{StagedID}} AS feature_id, p.feature_id <> '' AS named,
	p.geom_hash, p.props_hash, p.properties_jsonb AS props, p.ingestd_hash, {{StoredGeometry}} AS geom,
	{{InvalidGeometry}} AS invalid,
	g.geom IS NOT NULL AND NOT {{InRange}} AS out_of_range,
	p.invalid_feature = 2 OR (p.invalid_feature = 1 AND $2::boolean) AS skip
FROM (
	SELECT p.*, g.geom AS geom_4326,
		(CASE WHEN NOT (p.invalid_feature = 2 OR (p.invalid_feature = 1 AND $2::boolean))
			THEN p.properties END)::jsonb AS properties_jsonb,
		coalesce(p.content_hash, substring(sha256(p.geom_hash || p.props_hash) for 16)) AS ingestd_hash
	FROM {{staged}} p
	{{StagedGeometry}}
	WHERE p.poll_id = $1 {{dedupe}}
	OFFSET 0
) p
CROSS JOIN LATERAL (SELECT p.geom_4326 AS geom) g
OFFSET 0

-- name: OneCopyDedupe
-- The last staged row of each id of poll $1 (SnapshotCTEs' rule).
AND (p.page, p.ordinal) IN (
		SELECT DISTINCT ON (id COLLATE "C") page, ordinal
		FROM (SELECT {{StagedID}} AS id, page, ordinal FROM {{staged}} WHERE poll_id = $1) s
		ORDER BY id COLLATE "C", page DESC, ordinal DESC)

-- name: OneCopyFirstLoad
-- Creates the feed's layer table {{layer}} from poll $1's staged rows in
-- one CREATE TABLE … AS, with four load columns BulkCreate has too
-- (dropped once counted). Pages filled whole: decision 0200. $3 is the
-- transaction's now(), the rows' first_seen_at and changed_at.
CREATE TABLE {{layer}} WITH (fillfactor = 100) AS
SELECT {{row_exprs}},
	t.invalid AS ingestd_load_invalid, t.out_of_range AS ingestd_load_out_of_range, t.skip AS ingestd_load_skip, t.named AS ingestd_load_named
FROM (SELECT s.*, $3::timestamptz AS first_seen_at, $3::timestamptz AS changed_at, $1::bigint AS ingestd_poll
	FROM ({{OneCopyLoadSource}}) s) t
CROSS JOIN LATERAL (SELECT {{RepairedGeometry}} AS g OFFSET 0) r
CROSS JOIN LATERAL (SELECT {{as_geometry}} AS tg OFFSET 0) x

-- name: OneCopyCounts
-- BulkCounts over the new layer table: its rows, invalid geometries,
-- skipped rows and rows with a source id, and the extent guard's verdict
-- for the bbox $1 unless $2 accepts the snapshot.
SELECT e.rows, e.invalid, e.skipped, e.named,
	CASE WHEN NOT $2 AND $1::float8[] IS NOT NULL AND 2 * e.outside > e.located THEN
		format('extent: %s of %s located features lie outside the jurisdiction''s bbox [%s]',
			e.outside, e.located, array_to_string($1::float8[], ', ')) END
FROM (SELECT count(*)::int AS rows,
		count(*) FILTER (WHERE ingestd_load_invalid)::int AS invalid,
		count(*) FILTER (WHERE ingestd_load_skip)::int AS skipped,
		count(*) FILTER (WHERE ingestd_load_named)::int AS named,
		count(*) FILTER (WHERE ingestd_load_out_of_range OR NOT ST_IsEmpty({{any_geom}})) AS located,
		count(*) FILTER (WHERE $1::float8[] IS NOT NULL AND (ingestd_load_out_of_range OR NOT ST_IsEmpty({{any_geom}}) AND NOT {{any_geom}} && ST_MakeEnvelope(
			($1::float8[])[1], ($1::float8[])[2], ($1::float8[])[3], ($1::float8[])[4], 4326))) AS outside
	FROM {{layer}} f) e

-- name: OneCopyBuildKey
-- One scan: drops ingestd_load_named, sets NOT NULL and builds the primary key
-- (which a repeated id fails).
ALTER TABLE {{layer}} DROP COLUMN ingestd_load_named,
	ALTER first_seen_at SET NOT NULL, ALTER changed_at SET NOT NULL, ALTER ingestd_poll SET NOT NULL,
	ADD CONSTRAINT {{layer_pkey}} PRIMARY KEY (feature_id)

-- name: OneCopyBuildKeyColumns
-- OneCopyBuildKey less its key, for a database that runs ADD CONSTRAINT
-- only alone (Citus): the key follows in OneCopyBuildKeyOnly, a second scan.
ALTER TABLE {{layer}} DROP COLUMN ingestd_load_named,
	ALTER first_seen_at SET NOT NULL, ALTER changed_at SET NOT NULL, ALTER ingestd_poll SET NOT NULL

-- name: OneCopyBuildKeyOnly
-- The key of a layer table rewritten whole (reshape).
ALTER TABLE {{layer}} ADD CONSTRAINT {{layer_pkey}} PRIMARY KEY (feature_id)

-- name: OneCopyDependents
-- The views that depend on the layer table $1, named; NULL for none. Each
-- rule's view by a subquery on its key, not a join: an apply runs this
-- without nested loops, and a join would hash all of pg_class.
SELECT string_agg(DISTINCT r.view::text, ', ')
FROM (SELECT (SELECT w.ev_class::regclass FROM pg_rewrite w WHERE w.oid = d.objid) AS view
	FROM pg_depend d
	WHERE d.classid = 'pg_rewrite'::regclass AND d.refclassid = 'pg_class'::regclass
	  AND d.refobjid = to_regclass($1)) r
WHERE r.view <> to_regclass($1)

-- name: OneCopyDeleteSkipped
-- Leaves out the rows the feed skips ($1: invalid_geometry: skip).
DELETE FROM {{layer}} WHERE ingestd_load_skip OR (ingestd_load_invalid AND $1)

-- name: OneCopyDropLoadColumns
ALTER TABLE {{layer}} DROP COLUMN ingestd_load_invalid, DROP COLUMN ingestd_load_out_of_range, DROP COLUMN ingestd_load_skip

-- name: OneCopyGeomIndex
CREATE INDEX {{layer_geom}} ON {{layer}} USING gist (geom)

-- name: OneCopyChangeLog
-- The change log of poll $1's first load of feed ($2, $3): one row if it
-- loaded any feature.
{{FirstLoadLogged}}
SELECT $1, $2, $3, '', 'loaded', now() WHERE EXISTS (SELECT FROM {{layer}})

-- name: OneCopyRecordLayer
-- The feed's ($1, $2) entry in the catalog of layers: its table ($3) and
-- the select that rebuilds its rows in the generic form ($4).
INSERT INTO feed_layers AS fl (jurisdiction, feed, layer, select_sql) VALUES ($1, $2, $3, $4)
ON CONFLICT (jurisdiction, feed) DO UPDATE SET layer = excluded.layer, select_sql = excluded.select_sql
WHERE (fl.layer, fl.select_sql) IS DISTINCT FROM (excluded.layer, excluded.select_sql)

-- name: OneCopyReshape
-- The feed's layer rewritten from itself in a new shape, into
-- {{layer_new}}: each stored row rebuilt in the generic form (o: the old
-- table) and typed anew; every column's rest is decided row by row (the
-- stored rows have no profile). $1, unless NULL, retypes the stored
-- values (property → type) as the decoder now types them
-- (ingestd_typed_properties): a row whose properties that changes loses
-- its content hash (a legacy row: the next diff adopts the new hash when
-- the source's properties are the retyped ones).
CREATE TABLE {{layer_new}} WITH (fillfactor = 100) AS
SELECT {{row_exprs}}
FROM (SELECT o.feature_id, o.first_seen_at, o.changed_at, o.ingestd_poll,
		CASE WHEN p.props IS DISTINCT FROM p0.old THEN NULL ELSE o.ingestd_hash END AS ingestd_hash,
		p.props, {{old_geom}} AS geom
	FROM {{layer}} o
	CROSS JOIN LATERAL (SELECT {{old_props}} AS old OFFSET 0) p0
	CROSS JOIN LATERAL (SELECT CASE WHEN $1::jsonb IS NOT NULL AND jsonb_typeof(p0.old) = 'object'
		THEN ingestd_typed_properties(p0.old, $1::jsonb) ELSE p0.old END AS props) p
	OFFSET 0) t
CROSS JOIN LATERAL (SELECT t.geom AS g OFFSET 0) r
CROSS JOIN LATERAL (SELECT {{as_geometry}} AS tg OFFSET 0) x

-- name: OneCopyReshapeAdd
-- OneCopyReshape when the new shape only adds columns: each stored row
-- (o) copied with its columns, geometry, hash and history as they are;
-- a new column's value, its rest and the row's absent keys
-- ({{copy_exprs}}) come from the row's ingestd_rest, where a key that was
-- no column is. The rows are neither rebuilt in the generic form nor
-- typed anew: the same rows as OneCopyReshape's, at the cost of a copy.
CREATE TABLE {{layer_new}} WITH (fillfactor = 100) AS
SELECT {{copy_exprs}}
FROM {{layer}} o

-- name: OneCopyUnchanged
-- Unchanged for the layer table: the pages of poll $1, the snapshot's
-- distinct features, those of them that are new or whose content hash
-- differs from the layer's, the layer's features, and the split ids.
{{SnapshotCTEs}}
SELECT
	(SELECT count(*) FROM staged_pages WHERE poll_id = $1)::int,
	count(*)::int,
	count(*) FILTER (WHERE f.feature_id IS NULL
		OR f.ingestd_hash IS DISTINCT FROM s.content_hash)::int,
	(SELECT count(*) FROM {{layer}})::int,
	CASE WHEN {{OnePage}} THEN 0 ELSE {{SplitIDs}} - count(*) FILTER (WHERE s.named) END
FROM snapshot s
LEFT JOIN {{layer}} f ON f.feature_id = s.feature_id

-- name: OneCopyUnchangedLarge
-- UnchangedLarge for the layer table.
SELECT
	(SELECT count(*) FROM staged_pages WHERE poll_id = $1)::int,
	(SELECT count(*) FROM {{layer}})::int,
	(SELECT count(*) FROM {{layer}} f WHERE EXISTS (
		SELECT FROM {{staged}} s
		WHERE s.poll_id = $1
		  AND {{StagedID}} = f.feature_id
		  AND {{StagedHash}} = f.ingestd_hash))::int

-- name: OneCopyDiff
-- ApplyDiff on the layer table: the same parameters, guards and row. The
-- layer keeps one content hash (16 bytes); for a feature whose hash
-- differs, the stored properties' hash is rebuilt (one key probe) to tell
-- a geometry change from a properties change. A row without a hash was
-- stored before geometry hashes (legacy): it adopts the new one silently
-- when its properties did not change.
{{SnapshotCTEs}}, diff AS MATERIALIZED (
	SELECT j.*,
		NOT j.existed OR (j.changed AND (j.legacy
			OR substring(sha256(j.geom_hash || j.old_props_hash) for 16) <> j.old_hash)) AS geom_changed,
		NOT j.existed OR (j.changed AND j.old_props_hash IS DISTINCT FROM j.props_hash) AS props_changed
	FROM (
		SELECT s.feature_id, s.named, s.page, s.ordinal, s.geom_hash, s.props_hash, s.content_hash,
			f.feature_id AS old_id, s.feature_id IS NOT NULL AS present,
			f.feature_id IS NOT NULL AS existed, f.ingestd_hash AS old_hash,
			f.feature_id IS NOT NULL AND f.ingestd_hash IS NULL AS legacy,
			f.ingestd_hash IS DISTINCT FROM s.content_hash AS changed,
			CASE WHEN s.feature_id IS NOT NULL AND f.feature_id IS NOT NULL AND f.ingestd_hash IS DISTINCT FROM s.content_hash
			THEN (SELECT sha256(jsonb_send({{old_props}})) FROM {{layer}} o WHERE o.feature_id = s.feature_id) END AS old_props_hash
		FROM snapshot s
		FULL JOIN (SELECT feature_id, ingestd_hash FROM {{layer}}) f ON f.feature_id = s.feature_id
		-- OFFSET 0: the stored properties' hash is rebuilt once a row,
		-- not once for each of the three mentions above.
		OFFSET 0
	) j
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
), {{OneCopyWrites}}

-- name: OneCopyDelta
-- ApplyDelta on the layer table: the fetched features diffed against
-- their stored rows read by key (LATERAL, LIMIT 1: a probe per id, never
-- a join), the removed ones the proof found; counts, parameters, writes
-- and row as ApplyDelta's.
{{SnapshotCTEs}}, diff AS MATERIALIZED (
	SELECT j.*,
		NOT j.existed OR (j.changed AND (j.legacy
			OR substring(sha256(j.geom_hash || j.old_props_hash) for 16) <> j.old_hash)) AS geom_changed,
		NOT j.existed OR (j.changed AND j.old_props_hash IS DISTINCT FROM j.props_hash) AS props_changed
	FROM (
		SELECT s.*, f.feature_id AS old_id, true AS present,
			f.feature_id IS NOT NULL AS existed, f.ingestd_hash AS old_hash,
			f.feature_id IS NOT NULL AND f.ingestd_hash IS NULL AS legacy,
			f.ingestd_hash IS DISTINCT FROM s.content_hash AS changed,
			f.props_hash AS old_props_hash
		FROM snapshot s
		LEFT JOIN LATERAL (SELECT o.feature_id, o.ingestd_hash,
				CASE WHEN o.ingestd_hash IS DISTINCT FROM s.content_hash
					THEN sha256(jsonb_send({{old_props}})) END AS props_hash
			FROM {{layer}} o WHERE o.feature_id = s.feature_id LIMIT 1) f ON true
		UNION ALL
		SELECT NULL::text, NULL::boolean, NULL::integer, NULL::integer, NULL::bytea, NULL::bytea, NULL::bytea,
			f.feature_id, false, true, f.ingestd_hash, false, true, NULL::bytea
		FROM staged_deltas sd
		CROSS JOIN LATERAL unnest(sd.removed) AS r(feature_id)
		CROSS JOIN LATERAL (SELECT o.feature_id, o.ingestd_hash FROM {{layer}} o WHERE o.feature_id = r.feature_id LIMIT 1) f
		WHERE sd.poll_id = $1
		OFFSET 0
	) j
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
), {{OneCopyWrites}}

-- name: OneCopyReconcileDrift
-- ReconcileDrift over the layer's rows ({{table}}: rebuilt in the
-- generic form), compared by the 16-byte content hash.
WITH snapshot AS (
	SELECT DISTINCT ON (feature_id COLLATE "C") feature_id, page, ordinal, {{StagedHash}} AS content_hash
	FROM {{staged}} WHERE poll_id = $1
	ORDER BY feature_id COLLATE "C", page DESC, ordinal DESC
)
SELECT count(*) FROM snapshot s
LEFT JOIN {{table}} f ON f.feature_id = s.feature_id
JOIN {{staged}} sf ON sf.poll_id = $1 AND sf.page = s.page AND sf.ordinal = s.ordinal
WHERE (f.feature_id IS NULL OR f.content_hash IS DISTINCT FROM s.content_hash)
	AND coalesce(ingestd_as_timestamptz(sf.properties::jsonb -> $2) <= to_timestamp($3::float8 / 1000), true)

-- name: OneCopyGeometryLost
-- GeometryLost over the layer table.
CASE WHEN c.delta OR c.features = 0 THEN false
	WHEN NOT EXISTS (SELECT 1 FROM {{layer}} f WHERE {{any_geom}} IS NOT NULL AND NOT ST_IsEmpty({{any_geom}})) THEN false
	ELSE NOT EXISTS (SELECT 1 FROM snapshot d CROSS JOIN LATERAL ({{StagedPayload}}) p
		WHERE p.geom_ewkb IS NOT NULL AND NOT ST_IsEmpty(ST_GeomFromEWKB(p.geom_ewkb)))
END

-- name: OneCopyWrites
-- ApplyWrites on the layer table: the verdict, the writes (each written
-- row typed as the layer's columns, the source values they do not give
-- back in its rest), the superseded versions rebuilt in the generic form,
-- into the jurisdiction's history table, and the change log with the
-- 16-byte content hash.
{{ExtentCTE}}, verdict AS MATERIALIZED (
	SELECT CASE
		WHEN $4 THEN NULL
		WHEN c.previous > 0 AND c.features = 0 THEN
			format('empty: the snapshot has no features, the feed has %s', c.previous)
		WHEN c.features < (1 - $5::float8) * c.previous THEN
			format('shrink: the snapshot has %s features, the feed has %s (max_shrink %s allows no fewer than %s)',
				c.features, c.previous, $5::float8, ceil((1 - $5::float8) * c.previous))
		WHEN {{OneCopyGeometryLost}} THEN
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
	SELECT d.*, p.properties, p.invalid_feature,
		{{StoredGeometry}} AS geom, {{InvalidGeometry}} AS invalid
	FROM diff d
	CROSS JOIN LATERAL ({{StagedPayload}} LIMIT 1) p
	{{StagedGeometry}}
	WHERE d.present AND (NOT d.existed OR d.geom_changed OR d.props_changed)
	  AND (SELECT reason FROM verdict) IS NULL
	) w
), superseded_rows AS MATERIALIZED (
	-- The versions the writes below supersede, read before them: every
	-- CTE sees the statement's snapshot on PostgreSQL, but Citus runs
	-- each write as a step of its own, in order, and a read placed after
	-- it would see the new version.
	SELECT v.* FROM towrite t
	CROSS JOIN LATERAL (SELECT o.feature_id, {{old_geom}} AS geom, {{old_props}} AS properties,
			o.ingestd_hash AS content_hash, o.changed_at, o.ingestd_poll AS poll_id
		FROM {{layer}} o WHERE o.feature_id = t.feature_id LIMIT 1) v
	WHERE $9 AND t.existed AND NOT t.skipped AND (t.geom_changed OR t.props_changed)
	  AND NOT (t.legacy AND NOT t.props_changed)
), written AS (
	INSERT INTO {{layer}} AS f ({{row_cols}})
	SELECT {{row_exprs}}
	FROM (SELECT t.feature_id, t.properties::jsonb AS props, t.content_hash AS ingestd_hash, t.invalid, t.geom,
			-- A legacy row adopting its hash keeps its time and poll
			-- (ON CONFLICT below reads the mark).
			CASE WHEN t.legacy AND NOT t.props_changed THEN '-infinity'::timestamptz ELSE now() END AS changed_at,
			now() AS first_seen_at, $1::bigint AS ingestd_poll
		FROM towrite t WHERE NOT t.skipped OFFSET 0) t
	CROSS JOIN LATERAL (SELECT {{RepairedGeometry}} AS g OFFSET 0) r
	CROSS JOIN LATERAL (SELECT {{as_geometry}} AS tg OFFSET 0) x
	ON CONFLICT (feature_id) DO UPDATE SET {{row_update}},
		changed_at = CASE WHEN excluded.changed_at = '-infinity' THEN f.changed_at ELSE excluded.changed_at END,
		ingestd_poll = CASE WHEN excluded.changed_at = '-infinity' THEN f.ingestd_poll ELSE excluded.ingestd_poll END
), removed AS (
	DELETE FROM {{layer}} o
	WHERE o.feature_id = ANY (ARRAY(SELECT old_id FROM diff WHERE NOT present))
	  AND (SELECT reason FROM verdict) IS NULL
	-- The stored columns, rendered below: Citus refuses a RETURNING
	-- that calls a function not IMMUTABLE (jsonb_build_object is STABLE)
	-- on a distributed table.
	RETURNING o.*
), superseded AS (
	INSERT INTO {{history}} (feed, feature_id, geom, properties, content_hash,
		valid_from, valid_to, from_poll, to_poll, ended_by)
	SELECT $3, v.feature_id, v.geom, v.properties, v.content_hash, v.changed_at, now(), v.poll_id, $1, 'modified'
	FROM superseded_rows v
	UNION ALL
	SELECT $3, o.feature_id, {{old_geom}}, {{old_props}}, o.ingestd_hash, o.changed_at, now(), o.ingestd_poll, $1, 'removed'
	FROM removed o WHERE $9
), logged AS (
	INSERT INTO feature_changes (poll_id, jurisdiction, feed, feature_id, change,
		geometry_changed, properties_changed, old_hash, new_hash, changed_at)
	SELECT $1, $2, $3, d.feature_id, CASE WHEN d.existed THEN 'modified' ELSE 'added' END,
		CASE WHEN NOT d.existed THEN true WHEN d.legacy THEN NULL ELSE d.geom_changed END,
		NOT d.existed OR d.props_changed, d.old_hash, d.content_hash, now()
	FROM towrite d
	WHERE (NOT d.existed OR ((d.geom_changed OR d.props_changed) AND NOT (d.legacy AND NOT d.props_changed)))
	  AND NOT d.skipped
	UNION ALL
	SELECT $1, $2, $3, r.feature_id, 'removed', true, true, r.ingestd_hash, NULL, now()
	FROM removed r
)
SELECT
	c.features,
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

-- name: OneCopyCitus
-- Whether the database runs Citus, whose ALTER TABLE refuses ADD
-- CONSTRAINT among other subcommands.
SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus')
