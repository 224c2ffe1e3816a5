-- onecopy_prototype.sql — decision 0200's hand-built prototype of "one copy
-- of each layer", measured on a feed ingestd loaded with today's layout.
--
--   psql "$DATABASE_URL" -X -v j=bench -v f=parcels_json -v ogr=ogr_parcels -f scripts/onecopy_prototype.sql
--   (-v ogr= for a feed without an ogr2ogr table)
--
-- Builds onecopy_proto.layer (and two variants) from the feed's partition of
-- features and its feed_columns: feature_id key, the typed columns, geom,
-- first_seen_at, changed_at, poll_id, content_hash and props_rest (the
-- properties the typed columns do not reproduce byte for byte, NULL when
-- they all do); then rebuilds every row's properties from it and counts the
-- rows whose SHA-256 of jsonb_send differs from the stored props_hash (must
-- be 0); then prints table/index/TOAST sizes beside today's partition, the
-- typed layer and the ogr2ogr table :ogr.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SET maintenance_work_mem = '256MB';
DROP SCHEMA IF EXISTS onecopy_proto CASCADE;
CREATE SCHEMA onecopy_proto;

-- render(col, type, scale): the JSON value a typed column gives back. A
-- double carries no scale, so a column whose values mostly share one
-- (0.10, 1.25: the source's rendering) renders at that scale.
CREATE FUNCTION onecopy_proto.render_sql(col text, typ text, scale int) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN typ = 'double precision' AND scale IS NOT NULL THEN format('to_jsonb(round(%I::numeric, %s))', col, scale)
        WHEN typ = 'double precision' THEN format('to_jsonb(%I::numeric)', col)
        ELSE format('to_jsonb(%I)', col) END
$$;

CREATE TEMP TABLE cols AS
SELECT c.name, c.view_column AS col, c.type, c.ordinal,
    CASE WHEN c.type = 'double precision' THEN (
        SELECT mode() WITHIN GROUP (ORDER BY scale(((p.properties ->> c.name))::numeric))
        FROM features p WHERE p.jurisdiction = :'j' AND p.feed = :'f' AND jsonb_typeof(p.properties -> c.name) = 'number') END AS scale,
    CASE c.type WHEN 'bigint' THEN 'ingestd_as_bigint' WHEN 'numeric' THEN 'ingestd_as_numeric'
        WHEN 'double precision' THEN 'ingestd_as_double' WHEN 'boolean' THEN 'ingestd_as_boolean'
        WHEN 'date' THEN 'ingestd_as_date' WHEN 'timestamptz' THEN 'ingestd_as_timestamptz'
        WHEN 'jsonb' THEN 'ingestd_as_jsonb' ELSE 'ingestd_as_text' END AS cast_fn
FROM feed_columns c WHERE c.jurisdiction = :'j' AND c.feed = :'f' AND c.removed_at IS NULL;

SELECT format('%I', ingestd_feed_partition(:'j', :'f')) AS part,
    (SELECT string_agg(format('%s(f.properties -> %L) AS %I', cast_fn, name, col), ', ' ORDER BY ordinal) FROM cols) AS typed,
    (SELECT string_agg(format('%L, %s', name, onecopy_proto.render_sql(col, type, scale)), ', ' ORDER BY ordinal) FROM cols) AS rendered,
    (SELECT string_agg(format('%I', col), ', ' ORDER BY ordinal) FROM cols) AS collist,
    (SELECT geometry_type FROM feed_schemas WHERE jurisdiction = :'j' AND feed = :'f') AS gtype
\gset

-- Step 1: the typed row and its rendering, then props_rest: the keys whose
-- rendering differs (by text: jsonb's = calls 0.1 and 0.10 equal) and a
-- key not among the columns; props_absent the columns' keys the row lacks
-- (absent and null differ in props_hash).
CREATE TEMP TABLE typed AS
SELECT f.feature_id, :typed, f.geom AS geom_sent, f.first_seen_at, f.changed_at, f.poll_id, f.content_hash,
    f.geom_hash, f.props_hash, f.properties
FROM :part f;
CREATE TEMP TABLE split AS
SELECT t.*,
    nullif(coalesce((SELECT jsonb_object_agg(k, t.properties -> k) FROM jsonb_each(r.rendered) e(k, v)
        WHERE t.properties ? k AND (t.properties -> k)::text <> v::text), '{}') ||
    coalesce((SELECT jsonb_object_agg(k, v) FROM jsonb_each(t.properties) e(k, v) WHERE NOT r.rendered ? k), '{}'),
        '{}') AS props_rest,
    (SELECT array_agg(k) FROM jsonb_object_keys(r.rendered) k WHERE NOT t.properties ? k) AS props_absent
FROM typed t CROSS JOIN LATERAL (SELECT jsonb_build_object(:rendered) AS rendered) r;

-- The one copy: what QGIS opens, and what the poll needs.
CREATE TABLE onecopy_proto.layer AS
SELECT feature_id, :collist,
    ingestd_as_geometry(geom_sent, upper(:'gtype')) AS geom,
    first_seen_at, changed_at, poll_id, content_hash, props_rest, props_absent,
    -- A single part the layer's multi type promoted: a flag, not a second
    -- geometry (ST_GeometryN(geom, 1) gives it back).
    CASE WHEN ingestd_as_geometry(geom_sent, upper(:'gtype')) IS DISTINCT FROM geom_sent
        AND ST_NumGeometries(ingestd_as_geometry(geom_sent, upper(:'gtype'))) = 1
        AND ST_GeometryN(ingestd_as_geometry(geom_sent, upper(:'gtype')), 1) = geom_sent THEN true END AS geom_single,
    -- Any other geometry the layer's type does not hold as sent.
    CASE WHEN ingestd_as_geometry(geom_sent, upper(:'gtype')) IS NULL AND geom_sent IS NOT NULL THEN geom_sent END AS geom_sent
FROM split;
ALTER TABLE onecopy_proto.layer ADD PRIMARY KEY (feature_id);
CREATE INDEX ON onecopy_proto.layer USING gist (geom);

-- Variants: three hashes as today; the content hash cut to 16 bytes
-- (uuid: fixed length, no varlena header).
CREATE TABLE onecopy_proto.layer_3hash AS
SELECT l.*, s.geom_hash, s.props_hash FROM onecopy_proto.layer l JOIN split s USING (feature_id);
ALTER TABLE onecopy_proto.layer_3hash ADD PRIMARY KEY (feature_id);
CREATE INDEX ON onecopy_proto.layer_3hash USING gist (geom);
CREATE TABLE onecopy_proto.layer_uuid AS
SELECT feature_id, :collist, geom, first_seen_at, changed_at, poll_id,
    encode(substring(content_hash from 1 for 16), 'hex')::uuid AS content_hash, props_rest, props_absent, geom_single, geom_sent
FROM onecopy_proto.layer;
ALTER TABLE onecopy_proto.layer_uuid ADD PRIMARY KEY (feature_id);
CREATE INDEX ON onecopy_proto.layer_uuid USING gist (geom);
-- And the one copy keeping today's layer's constant jurisdiction and feed
-- columns (docs/querying.md joins a layer to feed_freshness on them).
CREATE TABLE onecopy_proto.layer_jf AS
SELECT feature_id, :collist, geom, :'j'::text AS jurisdiction, :'f'::text AS feed, first_seen_at, changed_at, poll_id,
    content_hash, props_rest, props_absent, geom_single, geom_sent
FROM onecopy_proto.layer;
ALTER TABLE onecopy_proto.layer_jf ADD PRIMARY KEY (feature_id);
CREATE INDEX ON onecopy_proto.layer_jf USING gist (geom);
VACUUM ANALYZE onecopy_proto.layer, onecopy_proto.layer_3hash, onecopy_proto.layer_uuid, onecopy_proto.layer_jf;

-- Step 2: exactness. Every row's properties rebuilt from the one copy.
SELECT count(*) AS rows,
    count(*) FILTER (WHERE props_rest IS NOT NULL OR props_absent IS NOT NULL) AS rows_with_rest,
    count(*) FILTER (WHERE geom_single) AS rows_promoted,
    count(*) FILTER (WHERE geom_sent IS NOT NULL) AS rows_with_geom_sent,
    count(*) FILTER (WHERE sha256(jsonb_send(rebuilt)) IS DISTINCT FROM p.props_hash) AS rebuilt_differs,
    count(*) FILTER (WHERE CASE WHEN l.geom_single THEN ST_GeometryN(l.geom, 1) ELSE coalesce(l.geom_sent, l.geom) END
        IS DISTINCT FROM p.geom) AS geom_differs
FROM onecopy_proto.layer l
JOIN :part p USING (feature_id)
CROSS JOIN LATERAL (
    SELECT (jsonb_build_object(:rendered) - coalesce(l.props_absent, '{}')) || coalesce(l.props_rest, '{}') AS rebuilt) r;

-- Step 3: sizes, bytes (table = heap + FSM/VM; TOAST with its index).
SELECT r.label, pg_relation_size(r.rel) AS heap_bytes, pg_indexes_size(r.rel) AS index_bytes,
    coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0) AS toast_bytes,
    pg_total_relation_size(r.rel) AS total_bytes,
    round(pg_total_relation_size(r.rel)::numeric / pg_total_relation_size(to_regclass(nullif(:'ogr', ''))), 2) AS vs_ogr2ogr
FROM (VALUES ('today: feed partition', format('ingestd.%I', ingestd_feed_partition(:'j', :'f'))::regclass),
        ('today: typed layer', to_regclass(ingestd_feed_view(:'j', :'f'))),
        ('one copy (content_hash 32 B)', 'onecopy_proto.layer'::regclass),
        ('one copy, three hashes', 'onecopy_proto.layer_3hash'::regclass),
        ('one copy, content_hash uuid', 'onecopy_proto.layer_uuid'::regclass),
        ('one copy + jurisdiction, feed', 'onecopy_proto.layer_jf'::regclass),
        ('ogr2ogr', to_regclass(nullif(:'ogr', '')))) r(label, rel)
JOIN pg_class c ON c.oid = r.rel;

-- Step 4: what computing the rest row by row would cost the write path:
-- the typed select alone (every column evaluated: the whole row counted),
-- then with every column rendered and compared to the source's text.
SET max_parallel_workers_per_gather = 0;
\timing on
SELECT count(t) AS typed_rows FROM (SELECT f.feature_id, :typed FROM :part f OFFSET 0) t;
SELECT count(t) AS typed_rows_with_rest_check FROM (SELECT x.*,
        (SELECT jsonb_object_agg(k, x.properties -> k) FROM jsonb_each(jsonb_build_object(:rendered)) e(k, v)
            WHERE NOT x.properties ? k OR (x.properties -> k)::text <> v::text) AS rest
    FROM (SELECT f.feature_id, f.properties, :typed FROM :part f OFFSET 0) x) t;
\timing off
