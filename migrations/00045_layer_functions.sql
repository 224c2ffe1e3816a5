-- Three changes to ingestd's functions after one copy of each layer.
--
-- 1. The functions that built and refreshed a feed's layer from its
-- partition of features go: since version 43 a layer table is the feed's
-- only copy, written by the apply's own statements
-- (feeds/postgis/sql/onecopy.sql), and nothing calls them: not ingestd's
-- Go code, not its SQL files, not another function or view. They are
-- ingestd_refresh_feed_layer (three forms) with the selects it read
-- (ingestd_layer_select, ingestd_plain_select), ingestd_build_feed_view,
-- ingestd_build_layer_table with its fill (ingestd_layer_fill), and
-- ingestd_drop_layer. Left in place they would rebuild a layer from a
-- partition that no longer exists, and build it inside a function, where
-- Citus does not place a new table on its schema's worker.
-- ingestd_feed_partition, ingestd_jurisdiction_partition and
-- ingestd_partition_slug stay: they only compute names, which benchmark
-- scripts and tests still use to clean up after the older layout.
--
-- 2. ingestd_layer_sample (the status page's thumbnail) writes the sample's
-- percent into its statement as a literal rather than a parameter: Citus
-- sends TABLESAMPLE's parameter to the worker that holds a distributed
-- layer without its value, and the worker refuses the statement
-- ("TABLESAMPLE parameter cannot be null"). The statement is planned at
-- each call either way (EXECUTE).
--
-- 3. ingestd_changes_since reads the feed's layer once, for the features
-- the change log names, into a CTE joined to the log, instead of a
-- lateral probe of the layer per change: Citus refuses a lateral join of
-- a layer on a worker with feature_history on the coordinator ("relation
-- feature_history is not distributed"). The layer is still read by its
-- key, and only it is opened; a first load's changes read the layer's
-- rows twice (the log's expansion and the CTE) where a lateral probe read
-- them once per change.
--
-- Down re-creates the dropped functions, the sample and the change feed as
-- version 44 had them, so that the migrations below (43's Down among them)
-- find them.

-- +goose Up
DROP FUNCTION ingestd.ingestd_refresh_feed_layer(text, text);
DROP FUNCTION ingestd.ingestd_refresh_feed_layer(text, text, bigint);
DROP FUNCTION ingestd.ingestd_refresh_feed_layer(text, text, bigint, text[]);
DROP FUNCTION ingestd.ingestd_layer_select(text, text);
DROP FUNCTION ingestd.ingestd_plain_select(text, text, text, text[]);
DROP FUNCTION ingestd.ingestd_build_feed_view(text, text, jsonb, text);
DROP FUNCTION ingestd.ingestd_build_layer_table(text, text, text, text);
DROP FUNCTION ingestd.ingestd_layer_fill(text, text, text);
DROP FUNCTION ingestd.ingestd_drop_layer(regclass);


-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd.ingestd_layer_sample(jurisdiction text, feed text, percent double precision, max_rows bigint)
RETURNS TABLE (geom geometry)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    rel regclass := (SELECT to_regclass(l.layer) FROM ingestd.feed_layers l
        WHERE l.jurisdiction = ingestd_layer_sample.jurisdiction AND l.feed = ingestd_layer_sample.feed);
BEGIN
    IF rel IS NOT NULL THEN
        RETURN QUERY EXECUTE format('SELECT s.g FROM (SELECT %s AS g FROM %s l TABLESAMPLE BERNOULLI (%L::real)) s '
            || 'WHERE s.g IS NOT NULL AND NOT ST_IsEmpty(s.g) LIMIT $1', ingestd.ingestd_layer_geom_sql(rel), rel, percent)
            USING max_rows;
    END IF;
END
$$;
-- +goose StatementEnd


-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd.ingestd_changes_since(jurisdiction text, feed text, after_poll bigint)
 RETURNS TABLE(poll_id bigint, feature_id text, change text, applied_at timestamp with time zone, old_properties jsonb, old_geom geometry, new_properties jsonb, new_geom geometry)
 LANGUAGE plpgsql
 STABLE
 SET "TimeZone" TO 'UTC'
 SET extra_float_digits TO '1'
AS $function$
BEGIN
    RETURN QUERY EXECUTE format($q$
    WITH cur AS MATERIALIZED (
        SELECT f.feature_id, f.poll_id, f.properties, f.geom::geometry AS geom FROM (%s) f
        WHERE f.feature_id = ANY (ARRAY(SELECT x.feature_id FROM feature_changes_expanded x
                WHERE x.jurisdiction = $1 AND x.feed = $2 AND x.poll_id > $3 AND x.change <> 'removed'))
          AND f.poll_id > $3
    )
    SELECT c.poll_id, c.feature_id, c.change, c.changed_at, o.properties, o.geom,
        CASE WHEN k.feature_id IS NOT NULL THEN k.properties ELSE n.properties END,
        CASE WHEN k.feature_id IS NOT NULL THEN k.geom ELSE n.geom END
    FROM feature_changes_expanded c
    LEFT JOIN cur k ON c.change <> 'removed' AND k.feature_id = c.feature_id AND k.poll_id = c.poll_id
    LEFT JOIN LATERAL (
        SELECT h.properties, h.geom::geometry AS geom FROM feature_history h
        WHERE h.jurisdiction = $1 AND h.feed = $2 AND h.feature_id = c.feature_id AND h.to_poll = c.poll_id
    ) o ON c.change <> 'added'
    LEFT JOIN LATERAL (
        SELECT h.properties, h.geom::geometry AS geom FROM feature_history h
        WHERE h.jurisdiction = $1 AND h.feed = $2 AND h.feature_id = c.feature_id AND h.from_poll = c.poll_id
        LIMIT 1
    ) n ON c.change <> 'removed' AND k.feature_id IS NULL
    WHERE c.jurisdiction = $1 AND c.feed = $2 AND c.poll_id > $3
    ORDER BY c.poll_id, c.feature_id
    $q$, ingestd_layer_read_sql(jurisdiction, feed)) USING jurisdiction, feed, after_poll;
END
$function$;
-- +goose StatementEnd

-- +goose Down
-- The bodies name other functions without a schema, as they always did;
-- a SQL function's body is checked against the search path at creation.
SELECT set_config('search_path', 'ingestd, public', true);

-- +goose StatementBegin
CREATE FUNCTION ingestd.ingestd_build_feed_view(j text, f text, cols jsonb, geometry_type text)
 RETURNS text
 LANGUAGE plpgsql
AS $function$
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
$function$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION ingestd.ingestd_build_layer_table(j text, f text, v text, sel text)
 RETURNS boolean
 LANGUAGE plpgsql
AS $function$
DECLARE
    l text[] := ingestd_feed_layer(j, f);
    tmp text := format('%I.%I', l[1], left(l[2], 40) || '_ingestd_new');
    fill text := ingestd_layer_fill(j, f, sel);
BEGIN
    EXECUTE format('DROP TABLE IF EXISTS %s', tmp);
    BEGIN
        IF fill IS DISTINCT FROM sel THEN
            BEGIN
                EXECUTE format('CREATE TABLE %s AS %s', tmp, fill);
            EXCEPTION WHEN data_exception THEN
                -- A plain cast met a value it does not take: the safe one.
                EXECUTE format('CREATE TABLE %s AS %s', tmp, sel);
            END;
        ELSE
            EXECUTE format('CREATE TABLE %s AS %s', tmp, sel);
        END IF;
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
$function$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION ingestd.ingestd_drop_layer(v regclass)
 RETURNS boolean
 LANGUAGE plpgsql
AS $function$
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
$function$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION ingestd.ingestd_layer_fill(j text, f text, sel text)
 RETURNS text
 LANGUAGE plpgsql
 STABLE
AS $function$
DECLARE
    c record;
    fill text := sel;
BEGIN
    IF NOT EXISTS (SELECT FROM feature_changes fc WHERE fc.jurisdiction = j AND fc.feed = f
            AND fc.changed_at = now() AND fc.change = 'loaded') THEN
        RETURN sel;
    END IF;
    FOR c IN SELECT fcol.name, fcol.view_column, fcol.type,
            CASE fcol.type WHEN 'bigint' THEN 'ingestd_as_bigint' WHEN 'numeric' THEN 'ingestd_as_numeric'
                WHEN 'double precision' THEN 'ingestd_as_double' WHEN 'boolean' THEN 'ingestd_as_boolean'
                WHEN 'date' THEN 'ingestd_as_date' WHEN 'text' THEN 'ingestd_as_text' END AS cast_fn,
            CASE fcol.type WHEN 'double precision' THEN 'numeric::double precision' ELSE fcol.type END AS plain
        FROM feed_columns fcol
        WHERE fcol.jurisdiction = j AND fcol.feed = f AND fcol.removed_at IS NULL
            -- timestamptz: a zone beyond ±15:59 is a timestamp to
            -- schema.Converts but not to PostgreSQL; jsonb is cheap.
            AND (fcol.type = 'text' OR (fcol.unconverted = 0 AND fcol.type IN ('bigint', 'numeric', 'double precision', 'boolean', 'date')))
    LOOP
        -- The text ingestd_build_feed_view wrote for the column, exactly
        -- (names quoted by format, as there): nothing else can match it.
        fill := replace(fill, format(', %s(f.properties -> %L) AS %I', c.cast_fn, c.name, c.view_column),
            CASE WHEN c.type = 'text' THEN format(', f.properties ->> %L AS %I', c.name, c.view_column)
                ELSE format(', (f.properties ->> %L)::%s AS %I', c.name, c.plain, c.view_column) END);
    END LOOP;
    RETURN fill;
END
$function$;
-- +goose StatementEnd
COMMENT ON FUNCTION ingestd.ingestd_layer_fill(text,text,text) IS 'The select that fills a feed''s layer table: its typed select, with plain casts for the columns whose values all convert when the feed was loaded whole in this transaction (migration 34).';

-- +goose StatementBegin
CREATE FUNCTION ingestd.ingestd_layer_select(j text, f text)
 RETURNS text
 LANGUAGE sql
 STABLE STRICT
AS $function$
    SELECT coalesce((SELECT l.select_sql FROM ingestd.feed_layers l
            WHERE l.jurisdiction = j AND l.feed = f AND to_regclass(l.layer) = to_regclass(ingestd_feed_view(j, f))),
        (SELECT regexp_replace(pg_get_viewdef(c.oid), ';\s*$', '') FROM pg_class c
            WHERE c.oid = to_regclass(ingestd_feed_view(j, f)) AND c.relkind IN ('v', 'm')))
$function$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION ingestd.ingestd_plain_select(j text, f text, sel text, plain text[])
 RETURNS text
 LANGUAGE plpgsql
 STABLE
AS $function$
DECLARE
    c record;
    out text := sel;
BEGIN
    FOR c IN SELECT fcol.name, fcol.view_column, fcol.type,
            CASE fcol.type WHEN 'bigint' THEN 'ingestd_as_bigint' WHEN 'numeric' THEN 'ingestd_as_numeric'
                WHEN 'double precision' THEN 'ingestd_as_double' WHEN 'boolean' THEN 'ingestd_as_boolean'
                WHEN 'date' THEN 'ingestd_as_date' WHEN 'timestamptz' THEN 'ingestd_as_timestamptz'
                WHEN 'text' THEN 'ingestd_as_text' END AS cast_fn,
            CASE fcol.type WHEN 'double precision' THEN 'numeric::double precision' ELSE fcol.type END AS plain_type
        FROM feed_columns fcol
        WHERE fcol.jurisdiction = j AND fcol.feed = f AND fcol.removed_at IS NULL AND fcol.name = ANY (plain)
            AND fcol.type IN ('text', 'bigint', 'numeric', 'double precision', 'boolean', 'date', 'timestamptz')
    LOOP
        -- The text ingestd_build_feed_view wrote for the column, exactly
        -- (names quoted by format, as there): nothing else can match it.
        out := replace(out, format(', %s(f.properties -> %L) AS %I', c.cast_fn, c.name, c.view_column),
            CASE WHEN c.type = 'text' THEN format(', f.properties ->> %L AS %I', c.name, c.view_column)
                ELSE format(', (f.properties ->> %L)::%s AS %I', c.name, c.plain_type, c.view_column) END);
    END LOOP;
    RETURN out;
END
$function$;
-- +goose StatementEnd
COMMENT ON FUNCTION ingestd.ingestd_plain_select(text,text,text,text[]) IS 'A feed''s typed select with plain casts for the properties named (their values all convert): what a layer refresh reads the rows a poll wrote with (migration 36).';

-- +goose StatementBegin
CREATE FUNCTION ingestd.ingestd_refresh_feed_layer(j text, f text)
 RETURNS boolean
 LANGUAGE plpgsql
AS $function$
DECLARE
    v text := ingestd_feed_view(j, f);
    sel text := ingestd_layer_select(j, f);
BEGIN
    IF to_regclass(v) IS NULL OR sel IS NULL THEN
        RETURN false;
    END IF;
    RETURN ingestd_build_layer_table(j, f, v, sel);
END
$function$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION ingestd.ingestd_refresh_feed_layer(j text, f text, poll bigint)
 RETURNS boolean
 LANGUAGE plpgsql
AS $function$
DECLARE
    v regclass := to_regclass(ingestd_feed_view(j, f));
    sel text := (SELECT l.select_sql FROM ingestd.feed_layers l WHERE l.jurisdiction = j AND l.feed = f
        AND to_regclass(l.layer) = to_regclass(ingestd_feed_view(j, f)));
    since timestamptz := (SELECT p.started_at FROM ingestd.polls p WHERE p.id = poll);
    ids text := 'SELECT c.feature_id FROM ingestd.feature_changes c WHERE c.jurisdiction = $2 AND c.feed = $3 AND c.changed_at >= $4 AND c.poll_id = $1';
BEGIN
    IF v IS NULL THEN
        RETURN false;
    END IF;
    IF (SELECT relkind FROM pg_class WHERE oid = v) <> 'r' OR sel IS NULL OR since IS NULL
        OR EXISTS (SELECT FROM ingestd.feature_changes c WHERE c.jurisdiction = j AND c.feed = f AND c.changed_at >= since
            AND c.poll_id = poll AND c.change = 'loaded') THEN
        RETURN ingestd_refresh_feed_layer(j, f);
    END IF;
    -- Every changed id's row goes (an 'added' id whose row is there too),
    -- then the added and modified ones come back as the select types them.
    EXECUTE format('DELETE FROM %s WHERE feature_id IN (%s)', v, ids) USING poll, j, f, since;
    EXECUTE format('INSERT INTO %s SELECT * FROM (%s) l WHERE l.feature_id IN (%s AND c.change IN (''added'', ''modified''))',
        v, sel, ids) USING poll, j, f, since;
    RETURN true;
EXCEPTION WHEN program_limit_exceeded THEN
    -- The layer's rows grew wider than a heap page: a plain view of the
    -- same select from now on.
    EXECUTE format('DROP TABLE %s', v);
    EXECUTE format('CREATE VIEW %s AS %s', v, sel);
    RETURN false;
END
$function$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION ingestd.ingestd_refresh_feed_layer(j text, f text, poll bigint, plain text[])
 RETURNS boolean
 LANGUAGE plpgsql
 SET "TimeZone" TO 'UTC'
AS $function$
DECLARE
    v regclass := to_regclass(ingestd_feed_view(j, f));
    sel text := (SELECT l.select_sql FROM ingestd.feed_layers l WHERE l.jurisdiction = j AND l.feed = f
        AND to_regclass(l.layer) = to_regclass(ingestd_feed_view(j, f)));
    since timestamptz := (SELECT p.started_at FROM ingestd.polls p WHERE p.id = poll);
    ids text := 'SELECT c.feature_id FROM ingestd.feature_changes c WHERE c.jurisdiction = $2 AND c.feed = $3 AND c.changed_at >= $4 AND c.poll_id = $1';
    fast text;
BEGIN
    IF v IS NULL THEN
        RETURN false;
    END IF;
    IF (SELECT relkind FROM pg_class WHERE oid = v) <> 'r' OR sel IS NULL OR since IS NULL
        OR EXISTS (SELECT FROM ingestd.feature_changes c WHERE c.jurisdiction = j AND c.feed = f AND c.changed_at >= since
            AND c.poll_id = poll AND c.change = 'loaded') THEN
        RETURN ingestd_refresh_feed_layer(j, f);
    END IF;
    -- Every changed id's row goes (an 'added' id whose row is there too),
    -- then the added and modified ones come back as the select types them.
    EXECUTE format('DELETE FROM %s WHERE feature_id IN (%s)', v, ids) USING poll, j, f, since;
    fast := ingestd_plain_select(j, f, sel, plain);
    IF fast IS DISTINCT FROM sel THEN
        BEGIN
            EXECUTE format('INSERT INTO %s SELECT * FROM (%s) l WHERE l.feature_id IN (%s AND c.change IN (''added'', ''modified''))',
                v, fast, ids) USING poll, j, f, since;
            RETURN true;
        EXCEPTION WHEN data_exception THEN
            NULL; -- a plain cast met a value it does not take: the typed select
        END;
    END IF;
    EXECUTE format('INSERT INTO %s SELECT * FROM (%s) l WHERE l.feature_id IN (%s AND c.change IN (''added'', ''modified''))',
        v, sel, ids) USING poll, j, f, since;
    RETURN true;
EXCEPTION WHEN program_limit_exceeded THEN
    -- The layer's rows grew wider than a heap page: a plain view of the
    -- same select from now on.
    EXECUTE format('DROP TABLE %s', v);
    EXECUTE format('CREATE VIEW %s AS %s', v, sel);
    RETURN false;
END
$function$;
-- +goose StatementEnd
COMMENT ON FUNCTION ingestd.ingestd_refresh_feed_layer(text,text,bigint,text[]) IS 'A feed''s layer table after poll''s apply: the rows of the features it changed rewritten, read with plain casts for the properties named in plain (their values in the poll all convert), else through the typed select (migration 36).';

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd.ingestd_layer_sample(jurisdiction text, feed text, percent double precision, max_rows bigint)
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd.ingestd_changes_since(jurisdiction text, feed text, after_poll bigint)
 RETURNS TABLE(poll_id bigint, feature_id text, change text, applied_at timestamp with time zone, old_properties jsonb, old_geom geometry, new_properties jsonb, new_geom geometry)
 LANGUAGE plpgsql
 STABLE
 SET "TimeZone" TO 'UTC'
 SET extra_float_digits TO '1'
AS $function$
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
$function$;
-- +goose StatementEnd
