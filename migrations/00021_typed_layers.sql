-- Typed layers (package schema; feeds/postgis schema.go): every feed gets
-- a schema — its columns with PostgreSQL types, declared by the protocol
-- (WFS DescribeFeatureType) or inferred from the snapshot's values — kept
-- in feed_columns, and a typed view named ingestd_feed_view(jurisdiction,
-- feed): feature_id, one column per attribute in the schema's order, geom
-- cast to its actual geometry type (so geometry_columns lists it), and
-- jurisdiction/feed to join feed_freshness. Every poll compares the
-- snapshot's schema with the stored one; each change (added, removed,
-- retyped, null collapse) is a schema_changes row.
--
-- The view reads properties through the safe casts ingestd_as_*: a value
-- that does not convert is NULL (and counted in feed_columns.unconverted),
-- never an error that breaks the view. Their rules are schema.Converts'.

-- +goose Up
ALTER TABLE staged_pages ADD COLUMN profile jsonb;
COMMENT ON COLUMN staged_pages.profile IS 'The page''s values by property and kind, and its geometry types (schema.Profile); merged at apply into the snapshot''s schema. NULL for pages staged before version 20.';

CREATE TABLE feed_columns (
    jurisdiction  text        NOT NULL,
    feed          text        NOT NULL,
    name          text        NOT NULL,
    ordinal       integer     NOT NULL,
    view_column   text        NOT NULL,
    type          text        NOT NULL CHECK (type IN ('text', 'bigint', 'numeric', 'double precision', 'boolean', 'date', 'timestamptz', 'jsonb')),
    type_source   text        NOT NULL CHECK (type_source IN ('declared', 'inferred')),
    non_null      bigint      NOT NULL DEFAULT 0,
    unconverted   bigint      NOT NULL DEFAULT 0,
    first_seen_at timestamptz NOT NULL,
    last_seen_at  timestamptz NOT NULL,
    first_poll_id bigint      NOT NULL,
    last_poll_id  bigint      NOT NULL,
    removed_at    timestamptz,
    PRIMARY KEY (jurisdiction, feed, name)
);
COMMENT ON TABLE feed_columns IS 'Each feed''s attributes: the columns of its typed view (ingestd_feed_view), in ordinal order; removed ones keep their row with removed_at.';
COMMENT ON COLUMN feed_columns.name IS 'The property''s name as the source sends it.';
COMMENT ON COLUMN feed_columns.view_column IS 'Its column in the typed view: the name, unless it collides with a column of the view''s own or is longer than 63 bytes.';
COMMENT ON COLUMN feed_columns.type_source IS 'declared: the protocol''s description (WFS DescribeFeatureType); inferred: the snapshot''s values (schema.Infer''s widening rules).';
COMMENT ON COLUMN feed_columns.non_null IS 'Features of the last applied snapshot with a non-null value.';
COMMENT ON COLUMN feed_columns.last_seen_at IS 'When a poll last changed the row (type, counts, order); a current column''s last sighting is the feed''s last success: see feed_columns_seen.';
COMMENT ON COLUMN feed_columns.unconverted IS 'Features of the last applied snapshot whose value does not convert to type: NULL in the view.';

-- Like features_seen: rows a poll did not change are not rewritten, so a
-- current column was last seen by the feed's last success.
CREATE VIEW feed_columns_seen AS
SELECT c.jurisdiction, c.feed, c.name, c.ordinal, c.view_column, c.type, c.type_source, c.non_null, c.unconverted,
    c.first_seen_at,
    CASE WHEN c.removed_at IS NULL THEN greatest(c.last_seen_at, s.last_success_at) ELSE c.last_seen_at END AS last_seen_at,
    c.removed_at
FROM feed_columns c
LEFT JOIN feed_status s ON s.jurisdiction = c.jurisdiction AND s.feed = c.feed;
COMMENT ON VIEW feed_columns_seen IS 'feed_columns with last_seen_at of current columns as the feed''s last success (a column a poll did not change is not rewritten).';

CREATE TABLE feed_schemas (
    jurisdiction  text        NOT NULL,
    feed          text        NOT NULL,
    view_name     text        NOT NULL,
    geometry_type text,
    features      bigint      NOT NULL,
    declared_by   text,
    typed_values  jsonb,
    signature     text        NOT NULL,
    poll_id       bigint      NOT NULL,
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (jurisdiction, feed)
);
COMMENT ON TABLE feed_schemas IS 'Per feed: its typed view, the view''s geometry type (one type, Geometry when mixed, NULL without geometries), the features of the last applied snapshot, and what declared its types.';
COMMENT ON COLUMN feed_schemas.typed_values IS 'The declared types (property → type) by which stored text values (GML) were typed as JSON numbers and booleans; a poll whose types differ retypes and rehashes the stored rows first, so that unchanged features stay unchanged.';
COMMENT ON COLUMN feed_schemas.signature IS 'The view''s columns and geometry type as built: the view is rebuilt only when it changes.';

CREATE TABLE poll_declared (
    poll_id    bigint  PRIMARY KEY,
    declared   jsonb,
    typed_text boolean NOT NULL
);
COMMENT ON TABLE poll_declared IS 'What the protocol declared of the layer when a poll''s snapshot was held: ingestd held accept applies it as the poll would have.';

CREATE TABLE schema_changes (
    id           bigserial   PRIMARY KEY,
    poll_id      bigint      NOT NULL,
    jurisdiction text        NOT NULL,
    feed         text        NOT NULL,
    column_name  text        NOT NULL,
    change       text        NOT NULL CHECK (change IN ('added', 'removed', 'retyped', 'null_collapse')),
    old_type     text,
    new_type     text,
    old_non_null_share double precision,
    new_non_null_share double precision,
    action       text        NOT NULL CHECK (action IN ('evolved', 'held', 'accepted', 'rejected', 'superseded')),
    detected_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (poll_id, column_name, change)
);
CREATE INDEX schema_changes_feed ON schema_changes (jurisdiction, feed, detected_at);
COMMENT ON TABLE schema_changes IS 'Schema drift, one row per column change a poll found: evolved (schema_change: evolve, the view followed), held (schema_change: hold, the snapshot waits for ingestd held accept|reject), then accepted, rejected, or superseded (a later poll applied or was held instead).';

-- +goose StatementBegin
CREATE FUNCTION ingestd_feed_view(jurisdiction text, feed text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT 'layer_' || ingestd_partition_slug(jurisdiction || '_' || feed) || '_'
        || left(md5(jurisdiction || '/' || feed), 8)
$$;
-- +goose StatementEnd
COMMENT ON FUNCTION ingestd_feed_view(text, text) IS 'Name of a feed''s typed view: layer_<slug>_<hash>, like ingestd_feed_partition''s table.';

-- The safe casts: NULL where the value does not convert (schema.Converts).
-- +goose StatementBegin
CREATE FUNCTION ingestd_as_text(v jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE jsonb_typeof(v) WHEN 'null' THEN NULL WHEN 'string' THEN v #>> '{}' ELSE v::text END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE FUNCTION ingestd_as_jsonb(v jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN jsonb_typeof(v) = 'null' THEN NULL ELSE v END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE FUNCTION ingestd_as_bigint(v jsonb) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN jsonb_typeof(v) IN ('number', 'string') AND (v #>> '{}') ~ '^-?[0-9]{1,19}$'
        AND (v #>> '{}')::numeric BETWEEN -9223372036854775808 AND 9223372036854775807
        THEN (v #>> '{}')::bigint END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE FUNCTION ingestd_as_numeric(v jsonb) RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN jsonb_typeof(v) = 'number' THEN (v #>> '{}')::numeric
        WHEN jsonb_typeof(v) = 'string' AND length(v #>> '{}') <= 64
            AND (v #>> '{}') ~ '^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]{1,3})?$' THEN (v #>> '{}')::numeric
    END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE FUNCTION ingestd_as_double(v jsonb) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN n = 0 OR abs(n) BETWEEN 1e-307 AND 1e308 THEN n::double precision END
    FROM (SELECT ingestd_as_numeric(v) AS n) x
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE FUNCTION ingestd_as_boolean(v jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN jsonb_typeof(v) = 'boolean' THEN v::text::boolean
        WHEN v = '"true"' THEN true WHEN v = '"false"' THEN false END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE FUNCTION ingestd_as_date(v jsonb) RETURNS date
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    IF jsonb_typeof(v) = 'string' AND (v #>> '{}') ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' THEN
        RETURN (v #>> '{}')::date;
    END IF;
    RETURN NULL;
EXCEPTION WHEN others THEN
    RETURN NULL;
END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE FUNCTION ingestd_as_timestamptz(v jsonb) RETURNS timestamptz
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    s text := v #>> '{}';
BEGIN
    IF jsonb_typeof(v) <> 'string' THEN
        RETURN NULL;
    ELSIF s ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' THEN
        RETURN (s || 'T00:00:00+00')::timestamptz;
    ELSIF s ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,9})?)?$' THEN
        RETURN (s || '+00')::timestamptz;
    ELSIF s ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,9})?)?(Z|[+-][0-9]{2}(:?[0-9]{2})?)$' THEN
        RETURN s::timestamptz;
    END IF;
    RETURN NULL;
EXCEPTION WHEN others THEN
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- A geometry of the view's type, else NULL (a repair may turn a polygon
-- into a collection); single parts of a multi type promoted.
-- +goose StatementBegin
CREATE FUNCTION ingestd_as_geometry(g geometry, geometry_type text) RETURNS geometry
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN geometry_type LIKE 'MULTI%' AND GeometryType(ST_Multi(g)) = geometry_type THEN ST_Multi(g)
        WHEN GeometryType(g) = geometry_type THEN g
    END
$$;
-- +goose StatementEnd

-- A stored text value (GML) typed as the declared type t would type it
-- now (schema.AppendTyped): the one-off retype that keeps content hashes
-- of unchanged features across the upgrade.
-- +goose StatementBegin
CREATE FUNCTION ingestd_typed_value(v jsonb, t text) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN jsonb_typeof(v) <> 'string' THEN v
        WHEN t IN ('bigint', 'numeric', 'double precision')
            AND btrim(v #>> '{}', E' \t\r\n') ~ '^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]{1,3})?$'
            AND (length(btrim(v #>> '{}', E' \t\r\n')) <= 64 OR btrim(v #>> '{}', E' \t\r\n') ~ '^-?[0-9]{1,19}$')
            THEN to_jsonb(btrim(v #>> '{}', E' \t\r\n')::numeric)
        WHEN t = 'boolean' AND btrim(v #>> '{}', E' \t\r\n') IN ('true', '1') THEN 'true'::jsonb
        WHEN t = 'boolean' AND btrim(v #>> '{}', E' \t\r\n') IN ('false', '0') THEN 'false'::jsonb
        ELSE v
    END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE FUNCTION ingestd_typed_properties(p jsonb, types jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN jsonb_typeof(p) <> 'object' THEN p ELSE (
        SELECT coalesce(jsonb_object_agg(e.key, CASE WHEN types ? e.key
            THEN ingestd_typed_value(e.value, types ->> e.key) ELSE e.value END), '{}'::jsonb)
        FROM jsonb_each(p) e) END
$$;
-- +goose StatementEnd

-- Builds (or rebuilds) a feed's typed view from its columns (a jsonb array
-- of {name, column, type}) and geometry type ('' or NULL: none). Names and
-- types are quoted here (format %I, %L), never pasted by the caller. When
-- another object depends on the view (an analyst's own view on top), it is
-- left as it is and NULL returned: the apply goes on.
-- +goose StatementBegin
CREATE FUNCTION ingestd_build_feed_view(j text, f text, cols jsonb, geometry_type text) RETURNS text
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

-- +goose Down
-- CASCADE: the feeds' typed views use these functions.
DROP FUNCTION ingestd_build_feed_view(text, text, jsonb, text);
DROP FUNCTION ingestd_typed_properties(jsonb, jsonb);
DROP FUNCTION ingestd_typed_value(jsonb, text);
DROP FUNCTION ingestd_as_geometry(geometry, text) CASCADE;
DROP FUNCTION ingestd_as_text(jsonb) CASCADE;
DROP FUNCTION ingestd_as_jsonb(jsonb) CASCADE;
DROP FUNCTION ingestd_as_double(jsonb) CASCADE;
DROP FUNCTION ingestd_as_bigint(jsonb) CASCADE;
DROP FUNCTION ingestd_as_numeric(jsonb) CASCADE;
DROP FUNCTION ingestd_as_boolean(jsonb) CASCADE;
DROP FUNCTION ingestd_as_date(jsonb) CASCADE;
DROP FUNCTION ingestd_as_timestamptz(jsonb) CASCADE;
DROP FUNCTION ingestd_feed_view(text, text);
DROP TABLE schema_changes;
DROP TABLE poll_declared;
DROP TABLE feed_schemas;
DROP VIEW feed_columns_seen;
DROP TABLE feed_columns;
ALTER TABLE staged_pages DROP COLUMN profile;
