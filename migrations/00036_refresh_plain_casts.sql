-- A layer refresh reads the rows a poll wrote with plain casts where the
-- poll's own values all convert.
--
-- The safe casts (ingestd_as_*) are inlined, but an inlined cast repeats
-- its argument wherever its body names it: ingestd_as_timestamptz reads
-- the property (f.properties -> 'name') and its text some fifteen times
-- per value, ingestd_as_bigint four, and the casts were most of a delta's
-- refresh; the plain cast of the property's text costs a fraction of that
-- (BenchmarkSafeCasts in feeds/postgis times both).
--
-- A plain cast gives what the safe cast gives for every value that
-- converts (both cast the same text; TestPlainCastsWhereConverts), and a
-- value that does not convert either makes the plain cast fail or is not
-- there: the apply passes the properties whose values in the poll's
-- staged pages (a superset of the rows the refresh writes, profiled as
-- jsonb keeps them) all convert to their column's type, as schema.Converts
-- judges. Should a plain cast fail all the same (a zone beyond ±15:59,
-- which schema.Converts takes as a timestamp), the refresh writes the rows
-- through the typed select instead.
--
-- Timestamps are read in UTC: a timestamp without a zone is UTC to the
-- safe cast (it appends +00), and the plain cast reads it in the session's
-- TimeZone, which the refresh sets to UTC for its own statements.
--
-- ingestd_plain_select(j, f, sel, plain) is sel with plain casts for the
-- properties named in plain: text read with ->>, the others cast from it.
-- jsonb keeps its (cheap) safe cast.

-- +goose Up
SELECT set_config('search_path', 'ingestd, public', true);

-- +goose StatementBegin
CREATE FUNCTION ingestd_plain_select(j text, f text, sel text, plain text[]) RETURNS text
LANGUAGE plpgsql STABLE AS $$
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
$$;
-- +goose StatementEnd
COMMENT ON FUNCTION ingestd_plain_select(text, text, text, text[]) IS 'A feed''s typed select with plain casts for the properties named (their values all convert): what a layer refresh reads the rows a poll wrote with (migration 36).';

-- Version 33's refresh, reading the poll's rows through
-- ingestd_plain_select(…, plain) first.
-- +goose StatementBegin
CREATE FUNCTION ingestd_refresh_feed_layer(j text, f text, poll bigint, plain text[]) RETURNS boolean
LANGUAGE plpgsql SET TimeZone = 'UTC' AS $$
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
$$;
-- +goose StatementEnd
COMMENT ON FUNCTION ingestd_refresh_feed_layer(text, text, bigint, text[]) IS 'A feed''s layer table after poll''s apply: the rows of the features it changed rewritten, read with plain casts for the properties named in plain (their values in the poll all convert), else through the typed select (migration 36).';

-- +goose Down
SELECT set_config('search_path', 'ingestd, public', true);
DROP FUNCTION ingestd_refresh_feed_layer(text, text, bigint, text[]);
DROP FUNCTION ingestd_plain_select(text, text, text, text[]);
