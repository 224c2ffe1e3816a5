-- Typed layers as tables kept in step by each apply.
--
-- Version 30 made each feed's layer (<schema>.<name>) a materialized view
-- so QGIS finds its key in pg_index; every apply that changed the feed
-- refreshed it whole (REFRESH … CONCURRENTLY: the typed select over every
-- feature, then a diff against the old rows): the whole layer's cost on
-- every apply that changed it, whatever the change's size.
--
-- The layer is now a table with feature_id as its primary key (the key
-- QGIS finds) and a GiST index on geom. It is built whole (CREATE TABLE …
-- AS the typed select, then swapped in) when it does not exist or its
-- columns change (ingestd_build_feed_view, called when the schema's
-- signature changes); otherwise the apply rewrites only the rows of the
-- features it added, modified or removed, in its own transaction
-- (ingestd_refresh_feed_layer(j, f, poll), from feature_changes). The
-- typed select a layer was built from is kept in feed_layers: the
-- incremental refresh and ingestd_layer_as_of_typed read it back.
--
-- Every materialized layer becomes a table here, its rows kept.

-- +goose Up
-- Functions and tables resolve through ingestd's search_path (version 31),
-- which a migration's session has not picked up.
SELECT set_config('search_path', 'ingestd, public', true);
CREATE TABLE ingestd.feed_layers (
    jurisdiction text NOT NULL,
    feed text NOT NULL,
    layer text NOT NULL,
    select_sql text NOT NULL,
    PRIMARY KEY (jurisdiction, feed)
);
COMMENT ON TABLE ingestd.feed_layers IS 'The typed select each feed''s layer (a table) was built from: its rows are the select''s rows (ingestd_refresh_feed_layer keeps them so).';

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_drop_layer(v regclass) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    IF v IS NULL THEN
        RETURN true;
    END IF;
    EXECUTE format('DROP %s %s', CASE (SELECT relkind FROM pg_class WHERE oid = v)
        WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'r' THEN 'TABLE' ELSE 'VIEW' END, v);
    RETURN true;
EXCEPTION WHEN dependent_objects_still_exist THEN
    RETURN false;
END
$$;
-- +goose StatementEnd

-- The typed select of the feed's layer: the one it was built from, or a
-- plain view's definition.
-- +goose StatementBegin
CREATE FUNCTION ingestd_layer_select(j text, f text) RETURNS text
LANGUAGE sql STABLE STRICT AS $$
    SELECT coalesce((SELECT l.select_sql FROM ingestd.feed_layers l
            WHERE l.jurisdiction = j AND l.feed = f AND to_regclass(l.layer) = to_regclass(ingestd_feed_view(j, f))),
        (SELECT regexp_replace(pg_get_viewdef(c.oid), ';\s*$', '') FROM pg_class c
            WHERE c.oid = to_regclass(ingestd_feed_view(j, f)) AND c.relkind IN ('v', 'm')))
$$;
-- +goose StatementEnd

-- Builds the layer v whole from sel: a table made aside, keyed and
-- indexed, then swapped in for the old layer (false when another object
-- depends on the old one: it stays). A row wider than a heap page makes
-- it a plain view of sel, which QGIS opens with a key given.
-- +goose StatementBegin
CREATE FUNCTION ingestd_build_layer_table(j text, f text, v text, sel text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    l text[] := ingestd_feed_layer(j, f);
    tmp text := format('%I.%I', l[1], left(l[2], 40) || '_ingestd_new');
BEGIN
    EXECUTE format('DROP TABLE IF EXISTS %s', tmp);
    BEGIN
        EXECUTE format('CREATE TABLE %s AS %s', tmp, sel);
    EXCEPTION WHEN program_limit_exceeded THEN
        tmp := NULL;
    END;
    IF NOT ingestd_drop_layer(to_regclass(v)) THEN
        IF tmp IS NOT NULL THEN
            EXECUTE format('DROP TABLE %s', tmp);
        END IF;
        RETURN false;
    END IF;
    IF tmp IS NULL THEN
        EXECUTE format('CREATE VIEW %s AS %s', v, sel);
    ELSE
        EXECUTE format('ALTER TABLE %s RENAME TO %I', tmp, l[2]);
        -- The key QGIS finds by itself (pg_index), and the incremental
        -- refresh's.
        EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I PRIMARY KEY (feature_id)', v, left(l[2], 50) || '_feature_id');
        IF EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = to_regclass(v) AND a.attname = 'geom' AND NOT a.attisdropped) THEN
            EXECUTE format('CREATE INDEX %I ON %s USING gist (geom)', left(l[2], 50) || '_geom', v);
        END IF;
    END IF;
    INSERT INTO ingestd.feed_layers AS fl (jurisdiction, feed, layer, select_sql) VALUES (j, f, v, sel)
    ON CONFLICT (jurisdiction, feed) DO UPDATE SET layer = excluded.layer, select_sql = excluded.select_sql;
    EXECUTE format('COMMENT ON %s %s IS %L', CASE (SELECT relkind FROM pg_class WHERE oid = to_regclass(v))
        WHEN 'r' THEN 'TABLE' ELSE 'VIEW' END, v, format('Typed layer of feed %s/%s (ingestd): one column per attribute (feed_columns), geom in EPSG:4326, key feature_id; kept in step by each apply that changes the feed; join feed_freshness on (jurisdiction, feed).', j, f));
    RETURN true;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_build_feed_view(j text, f text, cols jsonb, geometry_type text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    l text[] := ingestd_feed_layer(j, f);
    v text := format('%I.%I', l[1], l[2]);
    old text := (SELECT s.view_name FROM feed_schemas s WHERE s.jurisdiction = j AND s.feed = f);
    sel text := '';
    c jsonb;
    cast_fn text;
    geom text := '';
BEGIN
    FOR c IN SELECT * FROM jsonb_array_elements(cols) LOOP
        cast_fn := CASE c ->> 'type'
            WHEN 'bigint' THEN 'ingestd_as_bigint' WHEN 'numeric' THEN 'ingestd_as_numeric'
            WHEN 'double precision' THEN 'ingestd_as_double' WHEN 'boolean' THEN 'ingestd_as_boolean'
            WHEN 'date' THEN 'ingestd_as_date' WHEN 'timestamptz' THEN 'ingestd_as_timestamptz'
            WHEN 'jsonb' THEN 'ingestd_as_jsonb' ELSE 'ingestd_as_text' END;
        sel := sel || format(', %s(f.properties -> %L) AS %I', cast_fn, c ->> 'name', c ->> 'column');
    END LOOP;
    IF geometry_type = 'Geometry' THEN
        geom := ', f.geom::geometry(Geometry, 4326) AS geom';
    ELSIF geometry_type IN ('Point', 'LineString', 'Polygon', 'MultiPoint', 'MultiLineString', 'MultiPolygon', 'GeometryCollection') THEN
        geom := format(', ingestd_as_geometry(f.geom, %L)::geometry(%s, 4326) AS geom', upper(geometry_type), geometry_type);
    END IF;
    BEGIN
        EXECUTE format('CREATE SCHEMA IF NOT EXISTS %I', l[1]);
    EXCEPTION WHEN unique_violation THEN
        -- Created by the concurrent apply of another of the jurisdiction's
        -- feeds, which committed while this one waited: it exists now.
        NULL;
    WHEN insufficient_privilege THEN
        RAISE EXCEPTION 'ingestd: role % may not create schema % for the layer of %/%', current_user, l[1], j, f
            USING HINT = format('an administrator must run GRANT CREATE ON DATABASE %I TO %I once (deploy/roles.sql)',
                current_database(), current_user);
    END;
    sel := format('SELECT f.feature_id%s%s, f.jurisdiction, f.feed, f.first_seen_at, f.changed_at FROM %I f',
        sel, geom, ingestd_feed_partition(j, f));
    IF NOT ingestd_build_layer_table(j, f, v, sel) THEN
        RETURN NULL;
    END IF;
    -- The layer the feed had under another name (a renamed feed, or
    -- public.layer_… before version 30): dropped, unless something of
    -- the user's depends on it.
    IF old IS NOT NULL AND to_regclass(old) IS DISTINCT FROM to_regclass(v) AND NOT ingestd_drop_layer(to_regclass(old)) THEN
        RAISE NOTICE 'ingestd: % stays: other objects depend on it', old;
    END IF;
    RETURN v;
END
$$;
-- +goose StatementEnd

-- The feed's layer rebuilt whole from the select it was built from (held
-- snapshots accepted, migrations); false when it does not exist.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_refresh_feed_layer(j text, f text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    v text := ingestd_feed_view(j, f);
    sel text := ingestd_layer_select(j, f);
BEGIN
    IF to_regclass(v) IS NULL OR sel IS NULL THEN
        RETURN false;
    END IF;
    RETURN ingestd_build_layer_table(j, f, v, sel);
END
$$;
-- +goose StatementEnd

-- The feed's layer after poll's apply: the rows of the features the poll
-- added, modified or removed (feature_changes) are deleted and those of
-- the added and modified ones inserted from the typed select; a first
-- load (one 'loaded' row), a layer that is not a table yet or has no
-- recorded select is rebuilt whole.
-- +goose StatementBegin
CREATE FUNCTION ingestd_refresh_feed_layer(j text, f text, poll bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    v regclass := to_regclass(ingestd_feed_view(j, f));
    sel text := (SELECT l.select_sql FROM ingestd.feed_layers l WHERE l.jurisdiction = j AND l.feed = f
        AND to_regclass(l.layer) = to_regclass(ingestd_feed_view(j, f)));
    ids text := 'SELECT c.feature_id FROM feature_changes c WHERE c.poll_id = $1 AND c.jurisdiction = $2 AND c.feed = $3';
BEGIN
    IF v IS NULL THEN
        RETURN false;
    END IF;
    IF (SELECT relkind FROM pg_class WHERE oid = v) <> 'r' OR sel IS NULL
        OR EXISTS (SELECT FROM feature_changes c WHERE c.poll_id = poll AND c.jurisdiction = j AND c.feed = f AND c.change = 'loaded') THEN
        RETURN ingestd_refresh_feed_layer(j, f);
    END IF;
    -- Every changed id's row goes (an 'added' id whose row is there too),
    -- then the added and modified ones come back as the select types them.
    EXECUTE format('DELETE FROM %s WHERE feature_id IN (%s)', v, ids) USING poll, j, f;
    EXECUTE format('INSERT INTO %s SELECT * FROM (%s) l WHERE l.jurisdiction = $2 AND l.feed = $3 AND l.feature_id IN (%s AND c.change IN (''added'', ''modified''))',
        v, sel, ids) USING poll, j, f;
    RETURN true;
EXCEPTION WHEN program_limit_exceeded THEN
    -- The layer's rows grew wider than a heap page: a plain view of the
    -- same select from now on.
    EXECUTE format('DROP TABLE %s', v);
    EXECUTE format('CREATE VIEW %s AS %s', v, sel);
    RETURN false;
END
$$;
-- +goose StatementEnd

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

-- Every materialized layer becomes a table of the same rows.
-- +goose StatementBegin
DO $$
DECLARE
    s record;
BEGIN
    FOR s IN SELECT fs.jurisdiction, fs.feed, c.oid::regclass AS v FROM feed_schemas fs
        JOIN pg_class c ON c.oid = to_regclass(ingestd_feed_view(fs.jurisdiction, fs.feed)) AND c.relkind = 'm'
    LOOP
        PERFORM ingestd_build_layer_table(s.jurisdiction, s.feed, ingestd_feed_view(s.jurisdiction, s.feed),
            regexp_replace(pg_get_viewdef(s.v), ';\s*$', ''));
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
SELECT set_config('search_path', 'ingestd, public', true);
-- Every table layer becomes a materialized view of its select again.
-- +goose StatementBegin
DO $$
DECLARE
    s record;
    v text;
BEGIN
    FOR s IN SELECT l.*, c.oid::regclass AS rel FROM ingestd.feed_layers l
        JOIN pg_class c ON c.oid = to_regclass(l.layer) AND c.relkind = 'r'
        WHERE to_regclass(l.layer) = to_regclass(ingestd_feed_view(l.jurisdiction, l.feed))
    LOOP
        v := s.layer;
        BEGIN
            EXECUTE format('DROP TABLE %s', s.rel);
        EXCEPTION WHEN dependent_objects_still_exist THEN
            CONTINUE;
        END;
        EXECUTE format('CREATE MATERIALIZED VIEW %s AS %s', v, s.select_sql);
        EXECUTE format('CREATE UNIQUE INDEX %I ON %s (feature_id)',
            left((ingestd_feed_layer(s.jurisdiction, s.feed))[2], 50) || '_feature_id', v);
        EXECUTE format('COMMENT ON MATERIALIZED VIEW %s IS %L', v, format('Typed layer of feed %s/%s (ingestd): one column per attribute (feed_columns), geom in EPSG:4326, key feature_id; refreshed by each apply that changes the feed; join feed_freshness on (jurisdiction, feed).', s.jurisdiction, s.feed));
    END LOOP;
END
$$;
-- +goose StatementEnd
-- 00030's definitions back.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_drop_layer(v regclass) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    IF v IS NULL THEN
        RETURN true;
    END IF;
    IF (SELECT relkind FROM pg_class WHERE oid = v) = 'm' THEN
        EXECUTE format('DROP MATERIALIZED VIEW %s', v);
    ELSE
        EXECUTE format('DROP VIEW %s', v);
    END IF;
    RETURN true;
EXCEPTION WHEN dependent_objects_still_exist THEN
    RETURN false;
END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_build_feed_view(j text, f text, cols jsonb, geometry_type text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    l text[] := ingestd_feed_layer(j, f);
    v text := format('%I.%I', l[1], l[2]);
    old text := (SELECT s.view_name FROM feed_schemas s WHERE s.jurisdiction = j AND s.feed = f);
    sel text := '';
    c jsonb;
    cast_fn text;
    geom text := '';
BEGIN
    FOR c IN SELECT * FROM jsonb_array_elements(cols) LOOP
        cast_fn := CASE c ->> 'type'
            WHEN 'bigint' THEN 'ingestd_as_bigint' WHEN 'numeric' THEN 'ingestd_as_numeric'
            WHEN 'double precision' THEN 'ingestd_as_double' WHEN 'boolean' THEN 'ingestd_as_boolean'
            WHEN 'date' THEN 'ingestd_as_date' WHEN 'timestamptz' THEN 'ingestd_as_timestamptz'
            WHEN 'jsonb' THEN 'ingestd_as_jsonb' ELSE 'ingestd_as_text' END;
        sel := sel || format(', %s(f.properties -> %L) AS %I', cast_fn, c ->> 'name', c ->> 'column');
    END LOOP;
    IF geometry_type = 'Geometry' THEN
        geom := ', f.geom::geometry(Geometry, 4326) AS geom';
    ELSIF geometry_type IN ('Point', 'LineString', 'Polygon', 'MultiPoint', 'MultiLineString', 'MultiPolygon', 'GeometryCollection') THEN
        geom := format(', ingestd_as_geometry(f.geom, %L)::geometry(%s, 4326) AS geom', upper(geometry_type), geometry_type);
    END IF;
    IF NOT ingestd_drop_layer(to_regclass(v)) THEN
        RETURN NULL;
    END IF;
    -- The layer the feed had under another name (a renamed feed, or
    -- public.layer_… before version 30): dropped, unless something of
    -- the user's depends on it.
    IF old IS NOT NULL AND to_regclass(old) IS DISTINCT FROM to_regclass(v) AND NOT ingestd_drop_layer(to_regclass(old)) THEN
        RAISE NOTICE 'ingestd: % stays: other objects depend on it', old;
    END IF;
    BEGIN
        EXECUTE format('CREATE SCHEMA IF NOT EXISTS %I', l[1]);
    EXCEPTION WHEN unique_violation THEN
        -- Created by the concurrent apply of another of the jurisdiction's
        -- feeds, which committed while this one waited: it exists now.
        NULL;
    WHEN insufficient_privilege THEN
        RAISE EXCEPTION 'ingestd: role % may not create schema % for the layer of %/%', current_user, l[1], j, f
            USING HINT = format('an administrator must run GRANT CREATE ON DATABASE %I TO %I once (deploy/roles.sql)',
                current_database(), current_user);
    END;
    sel := format('SELECT f.feature_id%s%s, f.jurisdiction, f.feed, f.first_seen_at, f.changed_at FROM %I f',
        sel, geom, ingestd_feed_partition(j, f));
    BEGIN
        EXECUTE format('CREATE MATERIALIZED VIEW %s AS %s', v, sel);
        -- The key QGIS finds by itself (pg_index), and REFRESH … CONCURRENTLY's.
        EXECUTE format('CREATE UNIQUE INDEX %I ON %s (feature_id)', left(l[2], 50) || '_feature_id', v);
    EXCEPTION WHEN program_limit_exceeded THEN
        -- A row wider than a heap page (a layer of a thousand numeric
        -- columns): a plain view, which QGIS opens with a key given.
        EXECUTE format('CREATE VIEW %s AS %s', v, sel);
    END;
    EXECUTE format('COMMENT ON %s %s IS %L', CASE (SELECT relkind FROM pg_class WHERE oid = to_regclass(v))
        WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE 'VIEW' END, v, format('Typed layer of feed %s/%s (ingestd): one column per attribute (feed_columns), geom in EPSG:4326, key feature_id; refreshed by each apply that changes the feed; join feed_freshness on (jurisdiction, feed).', j, f));
    RETURN v;
END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_refresh_feed_layer(j text, f text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    v regclass := to_regclass(ingestd_feed_view(j, f));
    def text;
BEGIN
    IF v IS NULL OR (SELECT relkind FROM pg_class WHERE oid = v) <> 'm' THEN
        RETURN false;
    END IF;
    EXECUTE format('REFRESH MATERIALIZED VIEW CONCURRENTLY %s', v);
    RETURN true;
EXCEPTION WHEN program_limit_exceeded THEN
    -- The layer's rows grew wider than a heap page: a plain view of the
    -- same query from now on.
    def := pg_get_viewdef(v);
    EXECUTE format('DROP MATERIALIZED VIEW %s', v);
    EXECUTE format('CREATE VIEW %s AS %s', v, def);
    RETURN false;
END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_layer_as_of_typed(jurisdiction text, feed text, at timestamptz, row_type anyelement)
RETURNS SETOF anyelement LANGUAGE plpgsql STABLE AS $$
DECLARE
    v text := ingestd_feed_view(jurisdiction, feed);
    def text;
BEGIN
    IF to_regclass(v) IS NULL THEN
        RAISE EXCEPTION 'ingestd_layer_as_of_typed: %/% has no typed view %', jurisdiction, feed, v;
    END IF;
    -- The layer reads "FROM <the feed's table> f": read the layer as of
    -- the time instead (first_seen_at and changed_at are not kept per
    -- version: NULL).
    def := regexp_replace(pg_get_viewdef(to_regclass(v)), 'FROM\s+\S+\s+f\s*;?\s*$',
        'FROM (SELECT $1 AS jurisdiction, $2 AS feed, a.feature_id, a.properties, a.geom, '
        || 'NULL::timestamptz AS first_seen_at, NULL::timestamptz AS changed_at '
        || 'FROM ingestd_layer_as_of($1, $2, $3) a) f');
    RETURN QUERY EXECUTE def USING jurisdiction, feed, at;
END
$$;
-- +goose StatementEnd
DROP FUNCTION ingestd_refresh_feed_layer(text, text, bigint);
DROP FUNCTION ingestd_build_layer_table(text, text, text, text);
DROP FUNCTION ingestd_layer_select(text, text);
DROP TABLE ingestd.feed_layers;
