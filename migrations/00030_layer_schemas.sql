-- Layers where analysts look: a schema per jurisdiction and a
-- layer per feed named after it (raleigh.zoning, nc.counties) instead of
-- public.layer_<jurisdiction>_<feed>_<hash>.
--
-- The names come from the configuration (feeds/config_names.go: a
-- jurisdiction's schema:, a feed's name:, by default the ids with '-' made
-- '_'), recorded by RegisterFeeds in feed_status.layer_schema/layer_name;
-- a feed never registered gets the default.
--
-- Each layer is a materialized view with a unique index on feature_id,
-- not a plain view: QGIS's PostgreSQL provider finds a layer's key only in
-- pg_index (a primary key or unique index on the relation itself); a view
-- has none, so a view added without naming a key is an invalid layer ("No
-- key field for view/query given"). The apply refreshes it (CONCURRENTLY:
-- readers are not blocked) when the snapshot changed something.
--
-- The old layer_… views are dropped here (no compatibility views: public
-- is to hold nothing of ingestd's layers); one another object depends on
-- stays, as ingestd_build_feed_view always left a view it could not drop.

-- +goose Up
ALTER TABLE feed_status ADD COLUMN layer_schema text, ADD COLUMN layer_name text;
COMMENT ON COLUMN feed_status.layer_schema IS 'Schema of the feed''s typed layer: the jurisdiction''s schema: setting, by default its id with ''-'' made ''_'' (NULL: not registered since version 30, the default).';
COMMENT ON COLUMN feed_status.layer_name IS 'Name of the feed''s typed layer in layer_schema: the feed''s name: setting, by default its id with ''-'' made ''_''.';

-- ingestd_as_date and ingestd_as_timestamptz catch a bad date in an
-- EXCEPTION block, a subtransaction, which a parallel plan refuses
-- ("cannot start subtransactions during a parallel operation"): building
-- or refreshing the layer of a large feed with a date column, or reading
-- its view, failed whenever the planner chose parallel workers. They are
-- parallel unsafe, as they always were.
ALTER FUNCTION ingestd_as_date(jsonb) PARALLEL UNSAFE;
ALTER FUNCTION ingestd_as_timestamptz(jsonb) PARALLEL UNSAFE;

-- +goose StatementBegin
CREATE FUNCTION ingestd_feed_layer(j text, f text) RETURNS text[]
LANGUAGE sql STABLE STRICT PARALLEL SAFE AS $$
    SELECT ARRAY[coalesce((SELECT s.layer_schema FROM feed_status s WHERE s.jurisdiction = j AND s.feed = f), replace(j, '-', '_')),
        coalesce((SELECT s.layer_name FROM feed_status s WHERE s.jurisdiction = j AND s.feed = f), replace(f, '-', '_'))]
$$;
-- +goose StatementEnd
COMMENT ON FUNCTION ingestd_feed_layer(text, text) IS 'The feed''s typed layer as {schema, name} (feed_status.layer_schema, layer_name, or the defaults).';

-- Now qualified: 'raleigh.zoning', quoted where it must be (a regclass's text).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_feed_view(jurisdiction text, feed text) RETURNS text
LANGUAGE sql STABLE STRICT PARALLEL SAFE AS $$
    SELECT format('%I.%I', l[1], l[2]) FROM ingestd_feed_layer(jurisdiction, feed) l
$$;
-- +goose StatementEnd
COMMENT ON FUNCTION ingestd_feed_view(text, text) IS 'The feed''s typed layer, schema-qualified (raleigh.zoning): cast it to regclass, or read FROM it as it is.';

-- Drops a feed's layer, a materialized view or a view; false when another
-- object depends on it (it stays).
-- +goose StatementBegin
CREATE FUNCTION ingestd_drop_layer(v regclass) RETURNS boolean
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

-- Refreshes the feed's layer after an apply changed its features; the
-- layer does not exist yet (built by the same apply, or never): nothing.
-- +goose StatementBegin
CREATE FUNCTION ingestd_refresh_feed_layer(j text, f text) RETURNS boolean
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

-- Every feed's layer rebuilt under its default name now (a name: setting
-- moves it again at its next apply); the old view dropped.
-- +goose StatementBegin
DO $$
DECLARE
    s record;
BEGIN
    FOR s IN SELECT * FROM feed_schemas LOOP
        IF to_regclass(quote_ident(ingestd_feed_partition(s.jurisdiction, s.feed))) IS NULL THEN
            CONTINUE;
        END IF;
        UPDATE feed_schemas SET view_name = ingestd_feed_view(s.jurisdiction, s.feed), signature = ''
        WHERE jurisdiction = s.jurisdiction AND feed = s.feed
            AND ingestd_build_feed_view(s.jurisdiction, s.feed,
                coalesce((SELECT jsonb_agg(jsonb_build_object('name', c.name, 'column', c.view_column, 'type', c.type) ORDER BY c.ordinal)
                    FROM (SELECT * FROM feed_columns c WHERE c.jurisdiction = s.jurisdiction AND c.feed = s.feed AND c.removed_at IS NULL
                        ORDER BY c.ordinal LIMIT 1600 - 6) c), '[]'), coalesce(s.geometry_type, '')) IS NOT NULL;
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- The layers go back to public.layer_… views at each feed's next apply
-- (the view does not exist under the old name: it is rebuilt).
DROP FUNCTION ingestd_refresh_feed_layer(text, text);
DROP FUNCTION ingestd_drop_layer(regclass);
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_layer_as_of_typed(jurisdiction text, feed text, at timestamptz, row_type anyelement)
RETURNS SETOF anyelement LANGUAGE plpgsql STABLE AS $$
DECLARE
    v text := ingestd_feed_view(jurisdiction, feed);
    def text;
BEGIN
    IF to_regclass(quote_ident(v)) IS NULL THEN
        RAISE EXCEPTION 'ingestd_layer_as_of_typed: %/% has no typed view %', jurisdiction, feed, v;
    END IF;
    -- The view reads "FROM <the feed's table> f": read the layer as of
    -- the time instead (first_seen_at and changed_at are not kept per
    -- version: NULL).
    def := regexp_replace(pg_get_viewdef(quote_ident(v)::regclass), 'FROM\s+\S+\s+f\s*;?\s*$',
        'FROM (SELECT $1 AS jurisdiction, $2 AS feed, a.feature_id, a.properties, a.geom, '
        || 'NULL::timestamptz AS first_seen_at, NULL::timestamptz AS changed_at '
        || 'FROM ingestd_layer_as_of($1, $2, $3) a) f');
    RETURN QUERY EXECUTE def USING jurisdiction, feed, at;
END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_build_feed_view(j text, f text, cols jsonb, geometry_type text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v text := ingestd_feed_view(j, f);
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
        EXECUTE format('DROP VIEW IF EXISTS %I', v);
    EXCEPTION WHEN dependent_objects_still_exist THEN
        RETURN NULL;
    END;
    EXECUTE format('CREATE VIEW %I AS SELECT f.feature_id%s%s, f.jurisdiction, f.feed, f.first_seen_at, f.changed_at FROM %I f',
        v, sel, geom, ingestd_feed_partition(j, f));
    EXECUTE format('COMMENT ON VIEW %I IS %L', v, format('Typed layer of feed %s/%s (ingestd): one column per attribute (feed_columns), geom in EPSG:4326; join feed_freshness on (jurisdiction, feed).', j, f));
    RETURN v;
END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_feed_view(jurisdiction text, feed text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT 'layer_' || ingestd_partition_slug(jurisdiction || '_' || feed) || '_'
        || left(md5(jurisdiction || '/' || feed), 8)
$$;
-- +goose StatementEnd
DROP FUNCTION ingestd_feed_layer(text, text);
ALTER FUNCTION ingestd_as_date(jsonb) PARALLEL SAFE;
ALTER FUNCTION ingestd_as_timestamptz(jsonb) PARALLEL SAFE;
ALTER TABLE feed_status DROP COLUMN layer_schema, DROP COLUMN layer_name;
