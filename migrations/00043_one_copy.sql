-- One copy of each layer (docs/decisions/0200-one-copy-of-each-layer.md):
-- a feed's current features live once, in its layer table <schema>.<name>
-- (feature_id key, typed columns, geom, first_seen_at, changed_at, and the
-- bookkeeping columns ingestd_poll, ingestd_hash, ingestd_rest,
-- ingestd_absent, ingestd_geom_single, ingestd_geom), no longer also in a
-- partition of features.
--
-- features becomes a view of the layer catalog (decision 0201): each row
-- of feed_layers joined to ingestd_layer_features(jurisdiction, feed),
-- which reads that feed's layer table and rebuilds the generic row:
-- properties as the source sent them (every column rendered, less the keys
-- the feature lacked, the rest laid over), geom as sent (a promoted single
-- part taken back out, a geometry the layer's type cannot hold from
-- ingestd_geom), content_hash (16 bytes). geom_hash and props_hash leave
-- it: the layer keeps one hash (0200). A reader that names the feed opens
-- one layer; the view's definition never changes as layers come and go.
-- The history and change-feed functions read the feed's layer by name,
-- with the feature's key pushed into it.
--
-- Each existing feed is moved without being polled again: its layer is
-- rebuilt from its partition (the typed casts, plus the bookkeeping, the
-- rest computed row by row), checked to give every row back exactly,
-- swapped for the old layer, and the partition dropped, one feed a
-- transaction (5,000 feeds in one would need some 50,000 relation locks,
-- the default lock table holds 6,400). Hence NO TRANSACTION: a procedure
-- commits after each feed, and an interrupted migration resumes with the
-- feeds that still have a partition. The statements before and after the
-- procedure are each one explicit transaction.
--
-- Renders are fixed for every reader: TimeZone UTC and extra_float_digits
-- 1 (shortest exact), since a timestamptz or double precision column
-- renders by the session's settings and the rest is decided against that
-- rendering.

-- +goose NO TRANSACTION

-- +goose Up
BEGIN;
SELECT set_config('search_path', 'ingestd, public', true);

-- A user's view on features, features_seen or feature_changes_expanded
-- would be lost with them: stop before any feed is moved.
-- +goose StatementBegin
DO $$
DECLARE
    deps text;
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = to_regclass('ingestd.features')) IS DISTINCT FROM 'p' THEN
        RETURN;
    END IF;
    SELECT string_agg(DISTINCT format('%s.%I', v.relnamespace::regnamespace, v.relname), ', ') INTO deps
    FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid JOIN pg_class v ON v.oid = r.ev_class
    WHERE d.refobjid IN ('ingestd.features'::regclass, 'ingestd.features_seen'::regclass, 'ingestd.feature_changes_expanded'::regclass)
      AND v.oid NOT IN ('ingestd.features'::regclass, 'ingestd.features_seen'::regclass, 'ingestd.feature_changes_expanded'::regclass);
    IF deps IS NOT NULL THEN
        RAISE EXCEPTION 'ingestd: view % depends on ingestd.features, which becomes a view of the layers; drop it, migrate, recreate it', deps;
    END IF;
END
$$;
-- +goose StatementEnd

ALTER TABLE feed_columns ADD COLUMN IF NOT EXISTS scale integer;
COMMENT ON COLUMN feed_columns.scale IS 'For a double precision column, the scale its values render at in properties (round(column::numeric, scale): 0.10 stays 0.10); NULL: no fixed scale, a double renders as itself. Set when the layer is written whole.';
ALTER TABLE feed_layers ALTER COLUMN select_sql DROP NOT NULL;
COMMENT ON TABLE feed_layers IS 'Each feed''s layer table, which holds its current features once (features reads it through ingestd_layer_features); select_sql is NULL for such a layer.';

-- The SQL of a jsonb object of pairs (each "key, value" SQL):
-- jsonb_build_object takes at most 100 arguments, so 50 pairs a call.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_jsonb_object_sql(pairs text[]) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    s text := '';
BEGIN
    IF coalesce(cardinality(pairs), 0) = 0 THEN
        RETURN '''{}''::jsonb';
    END IF;
    FOR i IN 1 .. cardinality(pairs) BY 50 LOOP
        s := s || CASE WHEN i > 1 THEN ' || ' ELSE '' END
            || 'jsonb_build_object(' || array_to_string(pairs[i:i + 49], ', ') || ')';
    END LOOP;
    RETURN s;
END
$$;
-- +goose StatementEnd

-- The SQL of a row's geometry as sent, from the layer table rel's row l: a
-- single part the layer's multi type promoted taken back out, a geometry
-- its type could not hold from ingestd_geom (every one, where the layer
-- has no geom column). ingestd_geom is EWKB, not geometry: QGIS would
-- offer a layer with two geometry columns twice.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_layer_geom_sql(rel regclass) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = rel AND a.attname = 'geom' AND NOT a.attisdropped)
        THEN 'CASE WHEN l.ingestd_geom_single THEN ST_GeometryN(l.geom, 1) ELSE coalesce(ST_GeomFromEWKB(l.ingestd_geom), l.geom) END'
        ELSE 'ST_GeomFromEWKB(l.ingestd_geom)' END
$$;
-- +goose StatementEnd

-- The select of a layer table rel of feed j/f as generic rows: (feature_id,
-- geom, properties, content_hash, first_seen_at, changed_at, poll_id). The
-- layer's columns are the feed's columns (feed_columns, not removed) that
-- rel has; a double precision column with a scale renders at it. An
-- ingestd_rest that is JSON null marks a feature sent without properties;
-- one that is an array holds properties that are no object, whole.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_layer_read_sql(j text, f text, rel regclass) RETURNS text
LANGUAGE plpgsql STABLE AS $$
DECLARE
    pairs text[];
BEGIN
    SELECT array_agg(format('%L, %s', c.name, CASE WHEN c.type = 'double precision' AND c.scale IS NOT NULL
            THEN format('round(l.%I::numeric, %s)', c.view_column, c.scale) ELSE format('l.%I', c.view_column) END)
        ORDER BY a.attnum)
    INTO pairs
    FROM ingestd.feed_columns c
    JOIN pg_attribute a ON a.attrelid = rel AND a.attname = c.view_column AND a.attnum > 0 AND NOT a.attisdropped
    WHERE c.jurisdiction = j AND c.feed = f AND c.removed_at IS NULL;
    RETURN format('SELECT l.feature_id, (%s)::geometry(Geometry, 4326) AS geom, '
        || 'CASE WHEN l.ingestd_rest = ''null'' THEN NULL WHEN jsonb_typeof(l.ingestd_rest) = ''array'' THEN l.ingestd_rest -> 0 '
        || 'ELSE ((%s) - coalesce(l.ingestd_absent, ''{}'')) || coalesce(l.ingestd_rest, ''{}'') END AS properties, '
        || 'l.ingestd_hash AS content_hash, l.first_seen_at, l.changed_at, l.ingestd_poll AS poll_id FROM %s l',
        ingestd.ingestd_layer_geom_sql(rel), ingestd.ingestd_jsonb_object_sql(pairs), rel);
END
$$;
-- +goose StatementEnd

-- The same for the feed's layer (feed_layers); no rows when it has none.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_layer_read_sql(j text, f text) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT coalesce(ingestd.ingestd_layer_read_sql(j, f, (SELECT to_regclass(l.layer) FROM ingestd.feed_layers l
            WHERE l.jurisdiction = j AND l.feed = f)),
        'SELECT NULL::text AS feature_id, NULL::geometry(Geometry, 4326) AS geom, NULL::jsonb AS properties, '
        || 'NULL::bytea AS content_hash, NULL::timestamptz AS first_seen_at, NULL::timestamptz AS changed_at, '
        || 'NULL::bigint AS poll_id WHERE false')
$$;
-- +goose StatementEnd
COMMENT ON FUNCTION ingestd_layer_read_sql(text, text) IS 'The select of a feed''s layer as generic rows (feature_id, geom, properties, content_hash, first_seen_at, changed_at, poll_id), to run as a subquery: a predicate on feature_id reaches the layer''s key.';

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_layer_features(jurisdiction text, feed text)
RETURNS TABLE (feature_id text, geom geometry, properties jsonb, content_hash bytea,
    first_seen_at timestamptz, changed_at timestamptz, poll_id bigint)
LANGUAGE plpgsql STABLE ROWS 1000
SET TimeZone = 'UTC' SET extra_float_digits = 1 AS $$
BEGIN
    RETURN QUERY EXECUTE ingestd.ingestd_layer_read_sql(jurisdiction, feed);
END
$$;
-- +goose StatementEnd
COMMENT ON FUNCTION ingestd_layer_features(text, text) IS 'One feed''s current features as features gives them: its layer table read, properties and geometry as the source sent them. For a lookup or a spatial filter on a large layer, read the layer table (feature_id key, geom GiST) instead.';

-- The features of the feed's layer written by poll (a first load's rows
-- still as it wrote them), without their properties.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_layer_loaded(j text, f text, poll bigint)
RETURNS TABLE (feature_id text, content_hash bytea)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    rel regclass := (SELECT to_regclass(l.layer) FROM ingestd.feed_layers l WHERE l.jurisdiction = j AND l.feed = f);
BEGIN
    IF rel IS NOT NULL THEN
        RETURN QUERY EXECUTE format('SELECT l.feature_id, l.ingestd_hash FROM %s l WHERE l.ingestd_poll = $1', rel) USING poll;
    END IF;
END
$$;
-- +goose StatementEnd

-- A Bernoulli sample of percent of the feed's layer: at most max_rows of
-- its geometries as sent, none empty (the status page's thumbnail).
-- TABLESAMPLE needs a table, not the features view.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_layer_sample(jurisdiction text, feed text, percent double precision, max_rows bigint)
RETURNS TABLE (geom geometry)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    rel regclass := (SELECT to_regclass(l.layer) FROM ingestd.feed_layers l
        WHERE l.jurisdiction = ingestd_layer_sample.jurisdiction AND l.feed = ingestd_layer_sample.feed);
BEGIN
    IF rel IS NOT NULL THEN
        RETURN QUERY EXECUTE format('SELECT s.g FROM (SELECT %s AS g FROM %s l TABLESAMPLE BERNOULLI ($1::real)) s '
            || 'WHERE s.g IS NOT NULL AND NOT ST_IsEmpty(s.g) LIMIT $2', ingestd.ingestd_layer_geom_sql(rel), rel)
            USING percent, max_rows;
    END IF;
END
$$;
-- +goose StatementEnd

-- One feed moved: its layer rebuilt from its partition part in the one
-- copy's shape, checked, swapped in, the partition dropped. The caller
-- commits.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_one_copy_move_feed(part regclass) RETURNS void
LANGUAGE plpgsql
SET search_path = ingestd, public SET TimeZone = 'UTC' SET extra_float_digits = 1 AS $$
DECLARE
    j text;
    f text;
    lay regclass;
    nsp text;
    name text;
    tmp text;
    c record;
    sc integer;
    typed text := '';
    cols text := '';
    rendered text[] := '{}';
    keys text[] := '{}';
    gtype text;
    gcast text := 'NULL::geometry';
    deps text;
    bad bigint;
    g record;
BEGIN
    EXECUTE format('SELECT p.jurisdiction, p.feed FROM %s p LIMIT 1', part) INTO j, f;
    IF j IS NULL THEN
        EXECUTE format('DROP TABLE %s', part);
        RETURN;
    END IF;
    SELECT to_regclass(l.layer) INTO lay FROM feed_layers l WHERE l.jurisdiction = j AND l.feed = f;
    IF lay IS NULL THEN
        -- A feed whose layer was never built (features loaded before
        -- typed layers): its layer is made here without typed columns,
        -- every property in the rest.
        IF to_regclass(ingestd_feed_view(j, f)) IS NOT NULL THEN
            RAISE EXCEPTION 'ingestd: %/%: % is not the feed''s layer, and its features must move there; rename it, migrate', j, f,
                ingestd_feed_view(j, f);
        END IF;
        nsp := (ingestd_feed_layer(j, f))[1];
        name := (ingestd_feed_layer(j, f))[2];
        EXECUTE format('CREATE SCHEMA IF NOT EXISTS %I', nsp);
    ELSIF (SELECT relkind FROM pg_class WHERE oid = lay) <> 'r' THEN
        RAISE EXCEPTION 'ingestd: %/%: its layer % is a view (its rows are wider than a table''s page), which cannot hold its features', j, f, lay
            USING HINT = 'drop the feed''s partition (ingestd.' || part::text || ') to have it loaded anew, then migrate';
    ELSE
        SELECT n.nspname, cl.relname INTO nsp, name FROM pg_class cl JOIN pg_namespace n ON n.oid = cl.relnamespace WHERE cl.oid = lay;
        SELECT string_agg(DISTINCT format('%s.%I', v.relnamespace::regnamespace, v.relname), ', ') INTO deps
        FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid JOIN pg_class v ON v.oid = r.ev_class
        WHERE d.refobjid = lay AND v.oid <> lay;
        IF deps IS NOT NULL THEN
            RAISE EXCEPTION 'ingestd: %/%: view % depends on layer %; drop it, migrate, recreate it', j, f, deps, lay;
        END IF;
    END IF;

    -- The typed columns the layer has, in its order, at most the 1,586 a
    -- layer table has room for beside its own (the store's
    -- maxLayerAttributes; the others' values go to the rest); an attribute
    -- named as a bookkeeping column is renamed name_attr, as the store
    -- names it (schema.ViewColumn). A double precision column renders at
    -- the scale most of its numbers have (the others go to the rest).
    FOR c IN SELECT fc.name, fc.view_column AS old_column,
            CASE WHEN fc.view_column IN ('ingestd_poll', 'ingestd_hash', 'ingestd_rest', 'ingestd_absent', 'ingestd_geom_single',
                'ingestd_geom', 'ingestd_load_invalid', 'ingestd_load_out_of_range', 'ingestd_load_skip', 'ingestd_load_named')
                THEN fc.view_column || '_attr' ELSE fc.view_column END AS view_column, fc.type
        FROM feed_columns fc
        JOIN pg_attribute a ON a.attrelid = lay AND a.attname = fc.view_column AND a.attnum > 0 AND NOT a.attisdropped
        WHERE fc.jurisdiction = j AND fc.feed = f AND fc.removed_at IS NULL ORDER BY fc.ordinal LIMIT 1586
    LOOP
        sc := NULL;
        IF c.type = 'double precision' THEN
            EXECUTE format('SELECT mode() WITHIN GROUP (ORDER BY scale((p.properties -> %L)::numeric)) FROM %s p '
                || 'WHERE jsonb_typeof(p.properties -> %L) = ''number''', c.name, part, c.name) INTO sc;
        END IF;
        UPDATE feed_columns fc SET scale = sc, view_column = c.view_column WHERE fc.jurisdiction = j AND fc.feed = f AND fc.name = c.name;
        typed := typed || format(', %s(p.properties -> %L) AS %I', CASE c.type
            WHEN 'bigint' THEN 'ingestd_as_bigint' WHEN 'numeric' THEN 'ingestd_as_numeric'
            WHEN 'double precision' THEN 'ingestd_as_double' WHEN 'boolean' THEN 'ingestd_as_boolean'
            WHEN 'date' THEN 'ingestd_as_date' WHEN 'timestamptz' THEN 'ingestd_as_timestamptz'
            WHEN 'jsonb' THEN 'ingestd_as_jsonb' ELSE 'ingestd_as_text' END, c.name, c.view_column);
        cols := cols || format(', t.%I', c.view_column);
        rendered := rendered || format('%L, %s', c.name, CASE WHEN sc IS NOT NULL
            THEN format('round(t.%I::numeric, %s)', c.view_column, sc) ELSE format('t.%I', c.view_column) END);
        keys := keys || c.name;
    END LOOP;

    SELECT postgis_typmod_type(a.atttypmod) INTO gtype FROM pg_attribute a
    WHERE a.attrelid = lay AND a.attname = 'geom' AND NOT a.attisdropped;
    IF lay IS NULL THEN
        gtype := 'Geometry';
    END IF;
    IF gtype = 'Geometry' THEN
        gcast := 'p.geom::geometry(Geometry, 4326)';
    ELSIF gtype IS NOT NULL THEN
        gcast := format('ingestd_as_geometry(p.geom, %L)::geometry(%s, 4326)', upper(gtype), gtype);
    END IF;

    tmp := format('%I.%I', nsp, left(name, 40) || '_ingestd_new');
    EXECUTE format('DROP TABLE IF EXISTS %s', tmp);
    -- The rest: a column's source value whose rendering's text differs
    -- (jsonb's = calls 0.1 and 0.10 equal), and the keys that are no
    -- column; absent: the columns' keys the feature lacked.
    EXECUTE format($q$
        CREATE TABLE %s AS
        SELECT t.feature_id%s%s, t.first_seen_at, t.changed_at, t.poll_id AS ingestd_poll,
            CASE WHEN t.geom_hash IS NOT NULL THEN substring(t.content_hash FOR 16) END AS ingestd_hash,
            CASE WHEN t.properties IS NULL THEN 'null'::jsonb
                WHEN jsonb_typeof(t.properties) <> 'object' THEN jsonb_build_array(t.properties) ELSE nullif(
                coalesce((SELECT jsonb_object_agg(e.k, t.properties -> e.k) FROM jsonb_each(r.rendered) e(k, v)
                    WHERE t.properties ? e.k AND (t.properties -> e.k)::text <> e.v::text), '{}')
                || (t.properties - %L::text[]), '{}') END AS ingestd_rest,
            CASE WHEN jsonb_typeof(t.properties) = 'object' THEN
                (SELECT array_agg(k.k) FROM unnest(%L::text[]) k(k) WHERE NOT t.properties ? k.k) END AS ingestd_absent,
            CASE WHEN t.single THEN true END AS ingestd_geom_single,
            CASE WHEN ST_AsEWKB(t.gcast) IS DISTINCT FROM ST_AsEWKB(t.geom) AND NOT t.single
                THEN ST_AsEWKB(t.geom) END AS ingestd_geom
        FROM (SELECT g.*, coalesce(g.geom IS NOT NULL AND ST_AsEWKB(g.gcast) IS DISTINCT FROM ST_AsEWKB(g.geom)
                AND ST_NumGeometries(g.gcast) = 1 AND GeometryType(g.gcast) = 'MULTI' || GeometryType(g.geom)
                AND ST_AsEWKB(ST_GeometryN(g.gcast, 1)) = ST_AsEWKB(g.geom), false) AS single
            FROM (SELECT p.*%s, %s AS gcast FROM %s p) g) t
        CROSS JOIN LATERAL (SELECT %s AS rendered) r
        $q$, tmp, cols, CASE WHEN gtype IS NULL THEN '' ELSE ', t.gcast AS geom' END,
        keys, keys, typed, gcast, part, ingestd_jsonb_object_sql(rendered));

    -- Every row must come back as the partition holds it.
    EXECUTE format('SELECT count(*) FROM (%s) r FULL JOIN %s p ON p.feature_id = r.feature_id '
        || 'WHERE r.feature_id IS NULL OR p.feature_id IS NULL OR r.properties::text IS DISTINCT FROM p.properties::text '
        || 'OR ST_AsEWKB(r.geom) IS DISTINCT FROM ST_AsEWKB(p.geom) OR r.first_seen_at IS DISTINCT FROM p.first_seen_at '
        || 'OR r.changed_at IS DISTINCT FROM p.changed_at OR r.poll_id IS DISTINCT FROM p.poll_id',
        ingestd_layer_read_sql(j, f, tmp::regclass), part) INTO bad;
    IF bad > 0 THEN
        RAISE EXCEPTION 'ingestd: %/%: % features would not read back from the one copy as % holds them; nothing of the feed was moved', j, f, bad, part
            USING HINT = 'report this with the feed''s configuration; the feeds moved before it stay moved, and the migration resumes from this one';
    END IF;

    -- The old layer's grants go to the new one.
    FOR g IN SELECT a.grantee, a.privilege_type FROM pg_class cl, aclexplode(cl.relacl) a
        WHERE cl.oid = lay AND a.grantee <> cl.relowner
    LOOP
        EXECUTE format('GRANT %s ON %s TO %s', g.privilege_type, tmp,
            CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(g.grantee::regrole::text) END);
    END LOOP;
    IF lay IS NOT NULL THEN
        EXECUTE format('DROP TABLE %s', lay);
    END IF;
    EXECUTE format('ALTER TABLE %s RENAME TO %I', tmp, name);
    EXECUTE format('ALTER TABLE %I.%I ADD CONSTRAINT %I PRIMARY KEY (feature_id), ALTER COLUMN ingestd_poll SET NOT NULL',
        nsp, name, left(name, 50) || '_feature_id');
    IF gtype IS NOT NULL THEN
        EXECUTE format('CREATE INDEX %I ON %I.%I USING gist (geom)', left(name, 50) || '_geom', nsp, name);
    END IF;
    EXECUTE format('COMMENT ON TABLE %I.%I IS %L', nsp, name, format('Layer of feed %s/%s (ingestd): its current features, one column per attribute (feed_columns), geom in EPSG:4326, key feature_id; the ingestd_ columns are ingestd''s bookkeeping (ingestd.features gives each row as the source sent it).', j, f));
    INSERT INTO feed_layers AS l (jurisdiction, feed, layer, select_sql) VALUES (j, f, format('%I.%I', nsp, name), NULL)
    ON CONFLICT (jurisdiction, feed) DO UPDATE SET layer = excluded.layer, select_sql = NULL;
    EXECUTE format('DROP TABLE %s', part);
END
$$;
-- +goose StatementEnd

-- Every feed's partition moved, one feed a transaction.
-- +goose StatementBegin
CREATE OR REPLACE PROCEDURE ingestd_one_copy_move()
LANGUAGE plpgsql AS $$
DECLARE
    part regclass;
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = to_regclass('ingestd.features')) IS DISTINCT FROM 'p' THEN
        RETURN;
    END IF;
    LOOP
        SELECT t.relid INTO part FROM pg_partition_tree('ingestd.features') t
        WHERE t.isleaf ORDER BY t.relid LIMIT 1;
        EXIT WHEN part IS NULL;
        PERFORM ingestd.ingestd_one_copy_move_feed(part);
        COMMIT;
    END LOOP;
END
$$;
-- +goose StatementEnd
COMMIT;

CALL ingestd.ingestd_one_copy_move();

BEGIN;
SELECT set_config('search_path', 'ingestd, public', true);
DROP PROCEDURE ingestd_one_copy_move();
DROP FUNCTION ingestd_one_copy_move_feed(regclass);
DROP VIEW feature_changes_expanded;
DROP VIEW features_seen;
DROP TABLE features;

CREATE VIEW features AS
SELECT l.jurisdiction, l.feed, r.feature_id, r.geom::geometry(Geometry, 4326) AS geom, r.properties, r.content_hash,
    r.first_seen_at, r.changed_at, r.poll_id
FROM feed_layers l
CROSS JOIN LATERAL ingestd_layer_features(l.jurisdiction, l.feed) r;
COMMENT ON VIEW features IS 'The current features of every feed, as the source sent them: each feed''s layer table (feed_layers) read through ingestd_layer_features. Name jurisdiction and feed to open one layer; for a lookup or a spatial filter on a large layer, read the layer table itself. Every row was seen by its feed''s last successful poll (features_seen.last_seen_at).';
COMMENT ON COLUMN features.feature_id IS 'The source''s feature id (id_property, else gml:id or GeoJSON id), or for a feature without one the hex content hash.';
COMMENT ON COLUMN features.geom IS 'Geometry in EPSG:4326 (transformed from the source CRS; SRID 0 is taken as 4326), 2D, as sent: not the layer''s type.';
COMMENT ON COLUMN features.properties IS 'The feature''s attributes as the source sent them.';
COMMENT ON COLUMN features.content_hash IS 'The first 16 bytes of SHA-256(geometry hash || properties hash): a change means the feature was modified; NULL for a row written before geometries were hashed.';
COMMENT ON COLUMN features.first_seen_at IS 'When a poll first added the feature.';
COMMENT ON COLUMN features.changed_at IS 'When a poll last added or modified the feature.';
COMMENT ON COLUMN features.poll_id IS 'The poll (polls.id) that last added or modified the feature.';

CREATE VIEW features_seen AS
SELECT f.jurisdiction, f.feed, f.feature_id, f.geom, f.properties, f.content_hash, f.first_seen_at, f.changed_at,
    f.poll_id, s.last_success_at AS last_seen_at
FROM features f
JOIN feed_status s USING (jurisdiction, feed);
COMMENT ON VIEW features_seen IS 'features with last_seen_at: the last successful poll of the feed, which saw every current feature.';
COMMENT ON COLUMN features_seen.last_seen_at IS 'When a poll last saw the feature (its feed''s last_success_at).';

CREATE VIEW feature_changes_expanded AS
SELECT c.poll_id, c.jurisdiction, c.feed, c.feature_id, c.change, c.geometry_changed,
    c.properties_changed, c.old_hash, c.new_hash, c.changed_at
FROM feature_changes c
WHERE c.change <> 'loaded'
UNION ALL
SELECT c.poll_id, c.jurisdiction, c.feed, v.feature_id, 'added', true, true, NULL::bytea, v.content_hash, c.changed_at
FROM feature_changes c
CROSS JOIN LATERAL (
    SELECT f.feature_id, f.content_hash FROM ingestd_layer_loaded(c.jurisdiction, c.feed, c.poll_id) f
    UNION ALL
    SELECT h.feature_id, h.content_hash FROM feature_history h
    WHERE h.jurisdiction = c.jurisdiction AND h.feed = c.feed AND h.from_poll = c.poll_id
) v
WHERE c.change = 'loaded';
COMMENT ON VIEW feature_changes_expanded IS 'feature_changes with each first load (change loaded) listed as one added row per feature it wrote (from the feed''s layer and feature_history).';

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_changes_since(jurisdiction text, feed text, after_poll bigint)
RETURNS TABLE (poll_id bigint, feature_id text, change text, applied_at timestamptz,
    old_properties jsonb, old_geom geometry, new_properties jsonb, new_geom geometry)
LANGUAGE plpgsql STABLE SET TimeZone = 'UTC' SET extra_float_digits = 1 AS $$
BEGIN
    RETURN QUERY EXECUTE format($q$
    SELECT c.poll_id, c.feature_id, c.change, c.changed_at, o.properties, o.geom, n.properties, n.geom
    FROM feature_changes_expanded c
    LEFT JOIN LATERAL (
        SELECT h.properties, h.geom::geometry AS geom FROM feature_history h
        WHERE h.jurisdiction = $1 AND h.feed = $2 AND h.feature_id = c.feature_id AND h.to_poll = c.poll_id
    ) o ON c.change <> 'added'
    LEFT JOIN LATERAL (
        SELECT f.properties, f.geom::geometry AS geom FROM (%s) f
        WHERE f.feature_id = c.feature_id AND f.poll_id = c.poll_id
        UNION ALL
        SELECT h.properties, h.geom::geometry FROM feature_history h
        WHERE h.jurisdiction = $1 AND h.feed = $2 AND h.feature_id = c.feature_id AND h.from_poll = c.poll_id
        LIMIT 1
    ) n ON c.change <> 'removed'
    WHERE c.jurisdiction = $1 AND c.feed = $2 AND c.poll_id > $3
    ORDER BY c.poll_id, c.feature_id
    $q$, ingestd_layer_read_sql(jurisdiction, feed)) USING jurisdiction, feed, after_poll;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_feature_history(jurisdiction text, feed text, feature_id text)
RETURNS TABLE (valid_from timestamptz, valid_to timestamptz, from_poll bigint, to_poll bigint,
    ended_by text, properties jsonb, geom geometry)
LANGUAGE plpgsql STABLE SET TimeZone = 'UTC' SET extra_float_digits = 1 AS $$
BEGIN
    RETURN QUERY EXECUTE format($q$
    SELECT h.valid_from, h.valid_to, h.from_poll, h.to_poll, h.ended_by, h.properties, h.geom::geometry
    FROM feature_history h
    WHERE h.jurisdiction = $1 AND h.feed = $2 AND h.feature_id = $3
    UNION ALL
    SELECT f.changed_at, NULL, f.poll_id, NULL, NULL, f.properties, f.geom::geometry
    FROM (%s) f
    WHERE f.feature_id = $3
    ORDER BY 1
    $q$, ingestd_layer_read_sql(jurisdiction, feed)) USING jurisdiction, feed, feature_id;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_layer_as_of(jurisdiction text, feed text, at timestamptz)
RETURNS TABLE (feature_id text, properties jsonb, geom geometry)
LANGUAGE plpgsql STABLE SET TimeZone = 'UTC' SET extra_float_digits = 1 AS $$
DECLARE
    exact_from timestamptz;
BEGIN
    SELECT s.history_from INTO exact_from FROM feed_status s
    WHERE s.jurisdiction = ingestd_layer_as_of.jurisdiction AND s.feed = ingestd_layer_as_of.feed;
    IF exact_from IS NOT NULL AND at < exact_from THEN
        RAISE EXCEPTION 'ingestd_layer_as_of: %/% has no complete history before % (asked for %)',
            ingestd_layer_as_of.jurisdiction, ingestd_layer_as_of.feed, exact_from, at
            USING HINT = 'history is kept from the upgrade that began it, within history: {keep: …}, and not across applies made with history: off';
    END IF;
    RETURN QUERY EXECUTE format($q$
        SELECT f.feature_id, f.properties, f.geom::geometry FROM (%s) f
        WHERE f.changed_at <= $3
        UNION ALL
        SELECT h.feature_id, h.properties, h.geom::geometry FROM feature_history h
        WHERE h.jurisdiction = $1 AND h.feed = $2 AND h.valid_to > $3 AND h.valid_from <= $3
    $q$, ingestd_layer_read_sql(jurisdiction, feed)) USING jurisdiction, feed, at;
END
$$;
-- +goose StatementEnd

-- The layer's row type as of a time: its typed columns cast from the
-- properties of then, its geometry as the layer's type holds it, and the
-- columns not kept per version (first_seen_at, changed_at, ingestd's
-- bookkeeping) NULL.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_layer_as_of_typed(jurisdiction text, feed text, at timestamptz, row_type anyelement)
RETURNS SETOF anyelement LANGUAGE plpgsql STABLE AS $$
DECLARE
    v text := ingestd_feed_view(jurisdiction, feed);
    rel regclass := to_regclass(v);
    sel text;
BEGIN
    IF rel IS NULL THEN
        RAISE EXCEPTION 'ingestd_layer_as_of_typed: %/% has no layer %', jurisdiction, feed, v;
    END IF;
    SELECT string_agg(CASE
            WHEN a.attname = 'feature_id' THEN 'a.feature_id'
            WHEN a.attname = 'geom' AND postgis_typmod_type(a.atttypmod) = 'Geometry' THEN 'a.geom::geometry(Geometry, 4326)'
            WHEN a.attname = 'geom' THEN format('ingestd_as_geometry(a.geom, %L)::%s', upper(postgis_typmod_type(a.atttypmod)),
                format_type(a.atttypid, a.atttypmod))
            WHEN c.name IS NOT NULL THEN format('%s(a.properties -> %L)', CASE c.type
                WHEN 'bigint' THEN 'ingestd_as_bigint' WHEN 'numeric' THEN 'ingestd_as_numeric'
                WHEN 'double precision' THEN 'ingestd_as_double' WHEN 'boolean' THEN 'ingestd_as_boolean'
                WHEN 'date' THEN 'ingestd_as_date' WHEN 'timestamptz' THEN 'ingestd_as_timestamptz'
                WHEN 'jsonb' THEN 'ingestd_as_jsonb' ELSE 'ingestd_as_text' END, c.name)
            ELSE format('NULL::%s', format_type(a.atttypid, a.atttypmod)) END, ', ' ORDER BY a.attnum)
    INTO sel
    FROM pg_attribute a
    LEFT JOIN feed_columns c ON c.jurisdiction = ingestd_layer_as_of_typed.jurisdiction AND c.feed = ingestd_layer_as_of_typed.feed
        AND c.view_column = a.attname AND c.removed_at IS NULL
    WHERE a.attrelid = rel AND a.attnum > 0 AND NOT a.attisdropped;
    RETURN QUERY EXECUTE format('SELECT %s FROM ingestd_layer_as_of($1, $2, $3) a', sel) USING jurisdiction, feed, at;
END
$$;
-- +goose StatementEnd
COMMENT ON FUNCTION ingestd_layer_as_of_typed(text, text, timestamptz, anyelement) IS 'The feed''s layer as of a time: pass NULL::<the layer> (ingestd_feed_view(jurisdiction, feed)) as row_type. Columns as the layer has them now; first_seen_at, changed_at and the ingestd_ columns NULL.';
COMMIT;

-- +goose Down
BEGIN;
SELECT set_config('search_path', 'ingestd, public', true);
-- A layer in one copy cannot go back to a partition without polling its
-- feed again: the partition's content hash is over the geometry as the
-- source sent it, in its own CRS, which the layer does not keep.
-- +goose StatementBegin
DO $$
DECLARE
    layers text;
BEGIN
    SELECT string_agg(l.layer, ', ' ORDER BY l.layer) INTO layers FROM feed_layers l
    JOIN pg_attribute a ON a.attrelid = to_regclass(l.layer) AND a.attname = 'ingestd_hash' AND NOT a.attisdropped;
    IF layers IS NOT NULL THEN
        RAISE EXCEPTION 'ingestd: the move to one copy of each layer cannot be undone while layers hold features (%): their feeds'' former tables cannot be rebuilt without polling them again', layers
            USING HINT = 'restore the backup taken before the upgrade; or drop these layers and their feed_layers rows, migrate down, and let the older ingestd load the feeds anew';
    END IF;
END
$$;
-- +goose StatementEnd
DELETE FROM feed_layers WHERE select_sql IS NULL;
ALTER TABLE feed_layers ALTER COLUMN select_sql SET NOT NULL;
COMMENT ON TABLE feed_layers IS 'The typed select each feed''s layer (a table) was built from: its rows are the select''s rows (ingestd_refresh_feed_layer keeps them so).';
DROP VIEW feature_changes_expanded;
DROP VIEW features_seen;
DROP VIEW features;
DROP FUNCTION ingestd_layer_features(text, text);
DROP FUNCTION ingestd_layer_loaded(text, text, bigint);
DROP FUNCTION ingestd_layer_sample(text, text, double precision, bigint);

CREATE TABLE features (
    jurisdiction text NOT NULL,
    feed text NOT NULL,
    feature_id text NOT NULL,
    geom geometry(Geometry, 4326),
    properties jsonb,
    content_hash bytea NOT NULL,
    first_seen_at timestamptz NOT NULL,
    changed_at timestamptz NOT NULL,
    poll_id bigint NOT NULL,
    geom_hash bytea,
    props_hash bytea,
    PRIMARY KEY (feature_id, jurisdiction, feed)
) PARTITION BY LIST (jurisdiction);
CREATE INDEX features_geom_gist ON features USING gist (geom);
COMMENT ON TABLE features IS 'The current features of every feed: the last successful snapshot. Partitioned by jurisdiction, then by feed: ingestd_feed_partition(jurisdiction, feed) names a feed''s own table. Every row was seen by its feed''s last successful poll (feed_status.last_success_at, exposed per row as features_seen.last_seen_at); unchanged rows are not rewritten by a poll.';
COMMENT ON COLUMN features.feature_id IS 'The source''s feature id (id_property, else gml:id or GeoJSON id), or for a feature without one the hex content hash.';
COMMENT ON COLUMN features.geom IS 'Geometry in EPSG:4326 (transformed from the source CRS; SRID 0 is taken as 4326), 2D.';
COMMENT ON COLUMN features.properties IS 'The feature''s attributes as the source sent them.';
COMMENT ON COLUMN features.content_hash IS 'SHA-256(geom_hash || props_hash): a change means the feature was modified.';
COMMENT ON COLUMN features.first_seen_at IS 'When a poll first added the feature.';
COMMENT ON COLUMN features.changed_at IS 'When a poll last added or modified the feature.';
COMMENT ON COLUMN features.poll_id IS 'The poll (polls.id) that last added or modified the feature.';
COMMENT ON COLUMN features.geom_hash IS 'SHA-256 of the source geometry as ingestd encodes it (NULL for rows written before change detection; adopted at the next poll).';
COMMENT ON COLUMN features.props_hash IS 'SHA-256 of the normalised jsonb text of properties.';

CREATE VIEW features_seen AS
SELECT f.jurisdiction, f.feed, f.feature_id, f.geom, f.properties, f.content_hash, f.first_seen_at, f.changed_at,
    f.poll_id, f.geom_hash, f.props_hash, s.last_success_at AS last_seen_at
FROM features f
JOIN feed_status s USING (jurisdiction, feed);
COMMENT ON VIEW features_seen IS 'features with last_seen_at: the last successful poll of the feed, which saw every current feature.';
COMMENT ON COLUMN features_seen.last_seen_at IS 'When a poll last saw the feature (its feed''s last_success_at).';

-- 00041's view and functions.
CREATE VIEW feature_changes_expanded AS
SELECT c.poll_id, c.jurisdiction, c.feed, c.feature_id, c.change, c.geometry_changed,
    c.properties_changed, c.old_hash, c.new_hash, c.changed_at
FROM feature_changes c
WHERE c.change <> 'loaded'
UNION ALL
SELECT c.poll_id, c.jurisdiction, c.feed, v.feature_id, 'added', true, true, NULL::bytea, v.content_hash, c.changed_at
FROM feature_changes c
JOIN (
    SELECT f.jurisdiction, f.feed, f.poll_id, f.feature_id, f.content_hash FROM features f
    UNION ALL
    SELECT h.jurisdiction, h.feed, h.from_poll, h.feature_id, h.content_hash FROM feature_history h
) v ON v.jurisdiction = c.jurisdiction AND v.feed = c.feed AND v.poll_id = c.poll_id
WHERE c.change = 'loaded';
COMMENT ON VIEW feature_changes_expanded IS 'feature_changes with each first load (change loaded) listed as one added row per feature it wrote (from features and feature_history).';

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_changes_since(jurisdiction text, feed text, after_poll bigint)
RETURNS TABLE (poll_id bigint, feature_id text, change text, applied_at timestamptz,
    old_properties jsonb, old_geom geometry, new_properties jsonb, new_geom geometry)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY EXECUTE $q$
    SELECT c.poll_id, c.feature_id, c.change, c.changed_at, o.properties, o.geom, n.properties, n.geom
    FROM feature_changes_expanded c
    LEFT JOIN LATERAL (
        SELECT h.properties, h.geom::geometry AS geom FROM feature_history h
        WHERE h.jurisdiction = $1 AND h.feed = $2 AND h.feature_id = c.feature_id AND h.to_poll = c.poll_id
    ) o ON c.change <> 'added'
    LEFT JOIN LATERAL (
        SELECT f.properties, f.geom::geometry AS geom FROM features f
        WHERE f.jurisdiction = $1 AND f.feed = $2 AND f.feature_id = c.feature_id AND f.poll_id = c.poll_id
        UNION ALL
        SELECT h.properties, h.geom::geometry FROM feature_history h
        WHERE h.jurisdiction = $1 AND h.feed = $2 AND h.feature_id = c.feature_id AND h.from_poll = c.poll_id
        LIMIT 1
    ) n ON c.change <> 'removed'
    WHERE c.jurisdiction = $1 AND c.feed = $2 AND c.poll_id > $3
    ORDER BY c.poll_id, c.feature_id
    $q$ USING jurisdiction, feed, after_poll;
END
$$;
-- +goose StatementEnd
ALTER FUNCTION ingestd_changes_since(text, text, bigint) RESET ALL;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_feature_history(jurisdiction text, feed text, feature_id text)
RETURNS TABLE (valid_from timestamptz, valid_to timestamptz, from_poll bigint, to_poll bigint,
    ended_by text, properties jsonb, geom geometry)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY EXECUTE $q$
    SELECT h.valid_from, h.valid_to, h.from_poll, h.to_poll, h.ended_by, h.properties, h.geom::geometry
    FROM feature_history h
    WHERE h.jurisdiction = $1 AND h.feed = $2 AND h.feature_id = $3
    UNION ALL
    SELECT f.changed_at, NULL, f.poll_id, NULL, NULL, f.properties, f.geom::geometry
    FROM features f
    WHERE f.jurisdiction = $1 AND f.feed = $2 AND f.feature_id = $3
    ORDER BY 1
    $q$ USING jurisdiction, feed, feature_id;
END
$$;
-- +goose StatementEnd
ALTER FUNCTION ingestd_feature_history(text, text, text) RESET ALL;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_layer_as_of(jurisdiction text, feed text, at timestamptz)
RETURNS TABLE (feature_id text, properties jsonb, geom geometry)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    exact_from timestamptz;
BEGIN
    SELECT s.history_from INTO exact_from FROM feed_status s
    WHERE s.jurisdiction = ingestd_layer_as_of.jurisdiction AND s.feed = ingestd_layer_as_of.feed;
    IF exact_from IS NOT NULL AND at < exact_from THEN
        RAISE EXCEPTION 'ingestd_layer_as_of: %/% has no complete history before % (asked for %)',
            ingestd_layer_as_of.jurisdiction, ingestd_layer_as_of.feed, exact_from, at
            USING HINT = 'history is kept from the upgrade that began it, within history: {keep: …}, and not across applies made with history: off';
    END IF;
    RETURN QUERY EXECUTE $q$
        SELECT f.feature_id, f.properties, f.geom::geometry FROM features f
        WHERE f.jurisdiction = $1 AND f.feed = $2 AND f.changed_at <= $3
        UNION ALL
        SELECT h.feature_id, h.properties, h.geom::geometry FROM feature_history h
        WHERE h.jurisdiction = $1 AND h.feed = $2 AND h.valid_to > $3 AND h.valid_from <= $3
    $q$ USING jurisdiction, feed, at;
END
$$;
-- +goose StatementEnd
ALTER FUNCTION ingestd_layer_as_of(text, text, timestamptz) RESET ALL;

-- 00032's typed as-of.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_layer_as_of_typed(jurisdiction text, feed text, at timestamptz, row_type anyelement)
RETURNS SETOF anyelement LANGUAGE plpgsql STABLE AS $$
DECLARE
    v text := ingestd_feed_view(jurisdiction, feed);
    def text := ingestd_layer_select(jurisdiction, feed);
BEGIN
    IF to_regclass(v) IS NULL OR def IS NULL THEN
        RAISE EXCEPTION 'ingestd_layer_as_of_typed: %/% has no typed view %', jurisdiction, feed, v;
    END IF;
    -- The layer's select reads "FROM <the feed's table> f": read the
    -- layer as of the time instead (first_seen_at and changed_at are not
    -- kept per version: NULL).
    def := regexp_replace(def, 'FROM\s+\S+\s+f\s*;?\s*$',
        'FROM (SELECT $1 AS jurisdiction, $2 AS feed, a.feature_id, a.properties, a.geom, '
        || 'NULL::timestamptz AS first_seen_at, NULL::timestamptz AS changed_at '
        || 'FROM ingestd_layer_as_of($1, $2, $3) a) f');
    RETURN QUERY EXECUTE def USING jurisdiction, feed, at;
END
$$;
-- +goose StatementEnd
COMMENT ON FUNCTION ingestd_layer_as_of_typed(text, text, timestamptz, anyelement) IS 'The feed''s typed view as of a time: pass NULL::<the typed view> (ingestd_feed_view(jurisdiction, feed)) as row_type. Columns as the view has them now.';

DROP FUNCTION ingestd_layer_read_sql(text, text);
DROP FUNCTION ingestd_layer_read_sql(text, text, regclass);
DROP FUNCTION ingestd_layer_geom_sql(regclass);
DROP FUNCTION ingestd_jsonb_object_sql(text[]);
ALTER TABLE feed_columns DROP COLUMN scale;
COMMIT;
