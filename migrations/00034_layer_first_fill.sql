-- A first load's typed layer, filled cheaply.
--
-- Version 32 builds a feed's layer table from its typed select, which
-- reads every property through the safe casts ingestd_as_*. On a first
-- load that build cost more than the feed's own CREATE TABLE … AS
-- (scripts/bench.sh bigdoc measures a first load): the date cast is
-- PL/pgSQL with an EXCEPTION block (a subtransaction per value, and no
-- parallel plan), and the others test each value with a regular
-- expression before casting it.
--
-- Two changes, neither of which changes a layer's rows:
--
-- 1. The safe casts of text, jsonb, date and timestamptz become single SQL
--    expressions the planner inlines (no subtransaction, parallel safe):
--    ingestd_as_text(v) is v #>> '{}' (NULL for a JSON null, a string
--    unquoted, any other value as text: what it was), ingestd_as_jsonb(v)
--    nullif(v, 'null'), and the date casts check the calendar (month
--    lengths, leap years, year 0, 24:00 only as midnight, zone offsets
--    within ±15:59) before casting, so the cast cannot fail. One value
--    changes: seconds of 60 ("…T04:05:60Z"), which PostgreSQL rolls into
--    the next minute, are NULL now, as schema.Converts always said
--    (feed_columns.unconverted counted them).
-- 2. ingestd_build_layer_table fills the table from ingestd_layer_fill's
--    select: right after a first load of the feed in the same transaction
--    (its 'loaded' change row, changed_at = now()), the feed's table holds
--    exactly the snapshot feed_columns profiled, and a column whose
--    values all convert (unconverted = 0) is read with the plain cast
--    (f.properties ->> name)::type, which gives what the safe cast gives
--    for every value that converts (both cast the same text). Text
--    columns are read with ->> always. The layer keeps the safe select
--    (feed_layers.select_sql) for the applies that follow. Should a plain
--    cast fail all the same (a repeated key in a feature's object, whose
--    last value jsonb keeps), the fill falls back to the safe select.

-- +goose Up
SELECT set_config('search_path', 'ingestd, public', true);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_as_text(v jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT v #>> '{}'
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_as_jsonb(v jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT nullif(v, 'null'::jsonb)
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_as_date(v jsonb) RETURNS date
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN jsonb_typeof(v) = 'string'
        AND (v #>> '{}') ~ '^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$'
        AND left(v #>> '{}', 4) <> '0000'
        AND right(v #>> '{}', 2)::int <= CASE substr(v #>> '{}', 6, 2)
            WHEN '02' THEN CASE WHEN left(v #>> '{}', 4)::int % 4 = 0
                AND (left(v #>> '{}', 4)::int % 100 <> 0 OR left(v #>> '{}', 4)::int % 400 = 0) THEN 29 ELSE 28 END
            WHEN '04' THEN 30 WHEN '06' THEN 30 WHEN '09' THEN 30 WHEN '11' THEN 30 ELSE 31 END
        THEN (v #>> '{}')::date END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_as_timestamptz(v jsonb) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN jsonb_typeof(v) = 'string'
        AND (v #>> '{}') ~ '^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])([T ]([01][0-9]|2[0-4]):[0-5][0-9](:[0-5][0-9](\.[0-9]{1,9})?)?(Z|[+-](0[0-9]|1[0-5])(:?[0-5][0-9])?)?)?$'
        AND left(v #>> '{}', 4) <> '0000'
        AND substr(v #>> '{}', 9, 2)::int <= CASE substr(v #>> '{}', 6, 2)
            WHEN '02' THEN CASE WHEN left(v #>> '{}', 4)::int % 4 = 0
                AND (left(v #>> '{}', 4)::int % 100 <> 0 OR left(v #>> '{}', 4)::int % 400 = 0) THEN 29 ELSE 28 END
            WHEN '04' THEN 30 WHEN '06' THEN 30 WHEN '09' THEN 30 WHEN '11' THEN 30 ELSE 31 END
        -- 24:00 is the next midnight, and only that.
        AND (substr(v #>> '{}', 12, 2) <> '24' OR (v #>> '{}') ~ '^.{11}24:00(:00(\.0{1,9})?)?([Z+-].*)?$')
        -- A date alone is midnight UTC; a time without a zone is UTC.
        THEN ((v #>> '{}') || CASE WHEN length(v #>> '{}') = 10 THEN 'T00:00:00+00'
            WHEN substr(v #>> '{}', 17) ~ '[Z+-]' THEN '' ELSE '+00' END)::timestamptz END
$$;
-- +goose StatementEnd

-- The select that fills the feed's layer table: sel (its typed select, as
-- ingestd_build_feed_view writes it) with plain casts where they give the
-- same values (see above), or sel itself.
-- +goose StatementBegin
CREATE FUNCTION ingestd_layer_fill(j text, f text, sel text) RETURNS text
LANGUAGE plpgsql STABLE AS $$
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
$$;
-- +goose StatementEnd
COMMENT ON FUNCTION ingestd_layer_fill(text, text, text) IS 'The select that fills a feed''s layer table: its typed select, with plain casts for the columns whose values all convert when the feed was loaded whole in this transaction (migration 34).';

-- Version 32's, filling from ingestd_layer_fill.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_build_layer_table(j text, f text, v text, sel text) RETURNS boolean
LANGUAGE plpgsql AS $$
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
$$;
-- +goose StatementEnd

-- +goose Down
SELECT set_config('search_path', 'ingestd, public', true);
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_build_layer_table(j text, f text, v text, sel text) RETURNS boolean
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
DROP FUNCTION ingestd_layer_fill(text, text, text);
-- Version 21's casts (date and timestamptz parallel unsafe, version 30).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_as_text(v jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE jsonb_typeof(v) WHEN 'null' THEN NULL WHEN 'string' THEN v #>> '{}' ELSE v::text END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_as_jsonb(v jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN jsonb_typeof(v) = 'null' THEN NULL ELSE v END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_as_date(v jsonb) RETURNS date
LANGUAGE plpgsql IMMUTABLE PARALLEL UNSAFE AS $$
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
CREATE OR REPLACE FUNCTION ingestd_as_timestamptz(v jsonb) RETURNS timestamptz
LANGUAGE plpgsql IMMUTABLE PARALLEL UNSAFE AS $$
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
