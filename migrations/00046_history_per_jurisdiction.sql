-- A feed's history lives in its jurisdiction's schema, beside its layer
-- table: <schema>.ingestd_history, one table for the schema's feeds, with
-- the columns feature_history had less jurisdiction (the schema says it)
-- and its two indexes led by feed. Why: Citus schema-based sharding places
-- each jurisdiction's schema on one node; with the history in ingestd's
-- schema every apply that modified or removed a feature wrote it from the
-- layer's worker back to the coordinator, and every history read joined
-- the two (docs/decisions/0225).
--
-- ingestd.feature_history becomes a view with the columns the table had:
-- feed_layers joined to ingestd_layer_history, which reads one feed's rows
-- by dynamic SQL, so a query naming a feed opens that jurisdiction's table
-- only (as the features view does, migration 43). The readers find a
-- feed's table through ingestd_history_table: the schema of its layer
-- table (feed_layers), so history moves with the layer.
--
-- Every schema that holds a layer gets its table here; a jurisdiction's
-- first load creates it afterwards (feeds/postgis/sql/onecopy.sql,
-- OneCopyCreateSchema, as top-level statements: Citus distributes only
-- those). The rows move by feed: to its layer's schema, or for a feed
-- without a layer table to the schema its layer would take.

-- +goose Up
SELECT set_config('search_path', 'ingestd, public', true);

-- +goose StatementBegin
DO $$
DECLARE
    s record;
BEGIN
    FOR s IN
        SELECT DISTINCT x.schema FROM (
            SELECT n.nspname::text AS schema FROM ingestd.feed_layers l
            JOIN pg_class c ON c.oid = to_regclass(l.layer)
            JOIN pg_namespace n ON n.oid = c.relnamespace
            UNION ALL
            SELECT (ingestd.ingestd_feed_layer(h.jurisdiction, h.feed))[1]
            FROM (SELECT DISTINCT jurisdiction, feed FROM ingestd.feature_history) h
            WHERE to_regclass((SELECT l.layer FROM ingestd.feed_layers l
                WHERE l.jurisdiction = h.jurisdiction AND l.feed = h.feed)) IS NULL
        ) x
    LOOP
        EXECUTE format('CREATE SCHEMA IF NOT EXISTS %I', s.schema);
        EXECUTE format($t$CREATE TABLE IF NOT EXISTS %I.ingestd_history (
            feed text NOT NULL,
            feature_id text NOT NULL,
            geom geometry(Geometry, 4326),
            properties jsonb,
            content_hash bytea NOT NULL,
            valid_from timestamptz NOT NULL,
            valid_to timestamptz NOT NULL,
            from_poll bigint NOT NULL,
            to_poll bigint NOT NULL,
            ended_by text NOT NULL CHECK (ended_by IN ('modified', 'removed')))$t$, s.schema);
        EXECUTE format('CREATE INDEX IF NOT EXISTS ingestd_history_feature ON %I.ingestd_history (feed, feature_id, to_poll)', s.schema);
        EXECUTE format('CREATE INDEX IF NOT EXISTS ingestd_history_valid_to ON %I.ingestd_history (feed, valid_to)', s.schema);
    END LOOP;
    FOR s IN
        SELECT h.jurisdiction, h.feed, coalesce(
            (SELECT n.nspname::text FROM ingestd.feed_layers l
                JOIN pg_class c ON c.oid = to_regclass(l.layer)
                JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE l.jurisdiction = h.jurisdiction AND l.feed = h.feed),
            (ingestd.ingestd_feed_layer(h.jurisdiction, h.feed))[1]) AS schema
        FROM (SELECT DISTINCT jurisdiction, feed FROM ingestd.feature_history) h
    LOOP
        EXECUTE format('INSERT INTO %I.ingestd_history (feed, feature_id, geom, properties, content_hash, '
            'valid_from, valid_to, from_poll, to_poll, ended_by) '
            'SELECT h.feed, h.feature_id, h.geom, h.properties, h.content_hash, h.valid_from, h.valid_to, '
            'h.from_poll, h.to_poll, h.ended_by FROM ingestd.feature_history h '
            'WHERE h.jurisdiction = $1 AND h.feed = $2', s.schema) USING s.jurisdiction, s.feed;
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION ingestd_history_table(j text, f text)
 RETURNS regclass
 LANGUAGE sql
 STABLE
AS $function$
    SELECT to_regclass(format('%I.ingestd_history', n.nspname))
    FROM ingestd.feed_layers l
    JOIN pg_class c ON c.oid = to_regclass(l.layer)
    JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE l.jurisdiction = j AND l.feed = f
$function$;
-- +goose StatementEnd
COMMENT ON FUNCTION ingestd_history_table(text, text) IS 'The table that holds feed (j, f)''s superseded versions: ingestd_history in its layer table''s schema; NULL when the feed has no layer table.';

-- +goose StatementBegin
CREATE FUNCTION ingestd_history_sql(j text, f text)
 RETURNS text
 LANGUAGE sql
 STABLE
AS $function$
    SELECT coalesce(ingestd.ingestd_history_table(j, f)::text,
        '(SELECT NULL::text AS feed, NULL::text AS feature_id, NULL::geometry(Geometry, 4326) AS geom, '
        || 'NULL::jsonb AS properties, NULL::bytea AS content_hash, NULL::timestamptz AS valid_from, '
        || 'NULL::timestamptz AS valid_to, NULL::bigint AS from_poll, NULL::bigint AS to_poll, '
        || 'NULL::text AS ended_by WHERE false)')
$function$;
-- +goose StatementEnd
COMMENT ON FUNCTION ingestd_history_sql(text, text) IS 'What a statement reads feed (j, f)''s history from: its jurisdiction''s history table (filter it by feed), or an empty relation of its columns.';

-- +goose StatementBegin
CREATE FUNCTION ingestd_layer_history(j text, f text)
 RETURNS TABLE(feature_id text, geom geometry, properties jsonb, content_hash bytea, valid_from timestamp with time zone,
    valid_to timestamp with time zone, from_poll bigint, to_poll bigint, ended_by text)
 LANGUAGE plpgsql
 STABLE
AS $function$
DECLARE
    rel regclass := ingestd.ingestd_history_table(j, f);
BEGIN
    IF rel IS NOT NULL THEN
        RETURN QUERY EXECUTE format('SELECT h.feature_id, h.geom::geometry, h.properties, h.content_hash, h.valid_from, '
            'h.valid_to, h.from_poll, h.to_poll, h.ended_by FROM %s h WHERE h.feed = $1', rel) USING f;
    END IF;
END
$function$;
-- +goose StatementEnd
COMMENT ON FUNCTION ingestd_layer_history(text, text) IS 'Feed (j, f)''s superseded versions, from its jurisdiction''s history table only.';

-- +goose StatementBegin
CREATE FUNCTION ingestd_history_loaded(j text, f text, poll bigint)
 RETURNS TABLE(feature_id text, content_hash bytea)
 LANGUAGE plpgsql
 STABLE
AS $function$
DECLARE
    rel regclass := ingestd.ingestd_history_table(j, f);
BEGIN
    IF rel IS NOT NULL THEN
        RETURN QUERY EXECUTE format('SELECT h.feature_id, h.content_hash FROM %s h WHERE h.feed = $1 AND h.from_poll = $2', rel)
            USING f, poll;
    END IF;
END
$function$;
-- +goose StatementEnd
COMMENT ON FUNCTION ingestd_history_loaded(text, text, bigint) IS 'The versions of feed (j, f) that poll wrote and a later one superseded: with ingestd_layer_loaded, what a first load added.';

CREATE OR REPLACE VIEW feature_changes_expanded AS
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
    SELECT h.feature_id, h.content_hash FROM ingestd_history_loaded(c.jurisdiction, c.feed, c.poll_id) h
) v
WHERE c.change = 'loaded';

DROP TABLE ingestd.feature_history;

CREATE VIEW feature_history AS
SELECT l.jurisdiction, l.feed, h.feature_id, h.geom::geometry(Geometry, 4326) AS geom, h.properties, h.content_hash,
    h.valid_from, h.valid_to, h.from_poll, h.to_poll, h.ended_by
FROM feed_layers l
CROSS JOIN LATERAL ingestd_layer_history(l.jurisdiction, l.feed) h;
COMMENT ON VIEW feature_history IS 'Superseded versions of features: every version a snapshot modified or removed, valid over [valid_from, valid_to). Each jurisdiction''s are in <schema>.ingestd_history; name a feed (WHERE jurisdiction = … AND feed = …) to read its table only. Pruned per feed by feed_status.history_keep.';

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_feature_history(jurisdiction text, feed text, feature_id text)
 RETURNS TABLE(valid_from timestamp with time zone, valid_to timestamp with time zone, from_poll bigint, to_poll bigint, ended_by text, properties jsonb, geom geometry)
 LANGUAGE plpgsql
 STABLE
 SET "TimeZone" TO 'UTC'
 SET extra_float_digits TO '1'
AS $function$
BEGIN
    RETURN QUERY EXECUTE format($q$
    SELECT h.valid_from, h.valid_to, h.from_poll, h.to_poll, h.ended_by, h.properties, h.geom::geometry
    FROM %2$s h
    WHERE h.feed = $2 AND h.feature_id = $3
    UNION ALL
    SELECT f.changed_at, NULL, f.poll_id, NULL, NULL, f.properties, f.geom::geometry
    FROM (%1$s) f
    WHERE f.feature_id = $3
    ORDER BY 1
    $q$, ingestd_layer_read_sql(jurisdiction, feed), ingestd_history_sql(jurisdiction, feed))
    USING jurisdiction, feed, feature_id;
END
$function$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_layer_as_of(jurisdiction text, feed text, at timestamp with time zone)
 RETURNS TABLE(feature_id text, properties jsonb, geom geometry)
 LANGUAGE plpgsql
 STABLE
 SET "TimeZone" TO 'UTC'
 SET extra_float_digits TO '1'
AS $function$
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
        SELECT f.feature_id, f.properties, f.geom::geometry FROM (%1$s) f
        WHERE f.changed_at <= $3
        UNION ALL
        SELECT h.feature_id, h.properties, h.geom::geometry FROM %2$s h
        WHERE h.feed = $2 AND h.valid_to > $3 AND h.valid_from <= $3
    $q$, ingestd_layer_read_sql(jurisdiction, feed), ingestd_history_sql(jurisdiction, feed))
    USING jurisdiction, feed, at;
END
$function$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_changes_since(jurisdiction text, feed text, after_poll bigint)
 RETURNS TABLE(poll_id bigint, feature_id text, change text, applied_at timestamp with time zone, old_properties jsonb, old_geom geometry, new_properties jsonb, new_geom geometry)
 LANGUAGE plpgsql
 STABLE
 SET "TimeZone" TO 'UTC'
 SET extra_float_digits TO '1'
AS $function$
BEGIN
    RETURN QUERY EXECUTE format($q$
    WITH cur AS MATERIALIZED (
        SELECT f.feature_id, f.poll_id, f.properties, f.geom::geometry AS geom FROM (%1$s) f
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
        SELECT h.properties, h.geom::geometry AS geom FROM %2$s h
        WHERE h.feed = $2 AND h.feature_id = c.feature_id AND h.to_poll = c.poll_id
    ) o ON c.change <> 'added'
    LEFT JOIN LATERAL (
        SELECT h.properties, h.geom::geometry AS geom FROM %2$s h
        WHERE h.feed = $2 AND h.feature_id = c.feature_id AND h.from_poll = c.poll_id
        LIMIT 1
    ) n ON c.change <> 'removed' AND k.feature_id IS NULL
    WHERE c.jurisdiction = $1 AND c.feed = $2 AND c.poll_id > $3
    ORDER BY c.poll_id, c.feature_id
    $q$, ingestd_layer_read_sql(jurisdiction, feed), ingestd_history_sql(jurisdiction, feed))
    USING jurisdiction, feed, after_poll;
END
$function$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_prune_history(now_at timestamp with time zone, batch integer)
 RETURNS bigint
 LANGUAGE plpgsql
AS $function$
DECLARE
    s record;
    n bigint;
    layers text[];
    total bigint := 0;
BEGIN
    FOR s IN SELECT f.jurisdiction, f.feed, now_at - f.history_keep AS cutoff,
            ingestd.ingestd_history_table(f.jurisdiction, f.feed) AS rel
        FROM ingestd.feed_status f
        WHERE f.history_keep IS NOT NULL -- '0' (off): whatever was kept before goes
    LOOP
        IF s.rel IS NOT NULL THEN
            EXECUTE format('DELETE FROM %1$s h WHERE h.ctid IN (SELECT x.ctid FROM %1$s x '
                'WHERE x.feed = $1 AND x.valid_to < $2 LIMIT $3)', s.rel) USING s.feed, s.cutoff, batch - total;
            GET DIAGNOSTICS n = ROW_COUNT;
            total := total + n;
            IF n > 0 THEN
                UPDATE ingestd.feed_status SET history_from = greatest(history_from, s.cutoff)
                WHERE jurisdiction = s.jurisdiction AND feed = s.feed;
            END IF;
            EXIT WHEN total >= batch;
        END IF;
        WITH d AS (
            DELETE FROM ingestd.common_history h WHERE h.ctid IN (
                SELECT x.ctid FROM ingestd.common_history x
                WHERE x.jurisdiction = s.jurisdiction AND x.feed = s.feed AND x.valid_to < s.cutoff
                LIMIT batch - total)
            RETURNING h.layer)
        SELECT count(*), array_agg(DISTINCT d.layer) INTO n, layers FROM d;
        total := total + n;
        IF n > 0 THEN
            INSERT INTO ingestd.common_layers AS l (layer, history_from) SELECT u, s.cutoff FROM unnest(layers) u
            ON CONFLICT (layer) DO UPDATE SET history_from = greatest(l.history_from, excluded.history_from);
        END IF;
        EXIT WHEN total >= batch;
    END LOOP;
    RETURN total;
END
$function$;
-- +goose StatementEnd

-- +goose Down
SELECT set_config('search_path', 'ingestd, public', true);

DROP VIEW feature_history;
CREATE TABLE feature_history (
    jurisdiction text NOT NULL,
    feed text NOT NULL,
    feature_id text NOT NULL,
    geom geometry(Geometry, 4326),
    properties jsonb,
    content_hash bytea NOT NULL,
    valid_from timestamptz NOT NULL,
    valid_to timestamptz NOT NULL,
    from_poll bigint NOT NULL,
    to_poll bigint NOT NULL,
    ended_by text NOT NULL CHECK (ended_by IN ('modified', 'removed'))
);
CREATE INDEX feature_history_feature ON feature_history (jurisdiction, feed, feature_id, to_poll);
CREATE INDEX feature_history_valid_to ON feature_history (jurisdiction, feed, valid_to);
COMMENT ON TABLE feature_history IS 'Superseded versions of features: every version a snapshot modified or removed, valid over [valid_from, valid_to). The current version is the feature''s row in features (valid from its changed_at). Pruned per feed by feed_status.history_keep.';

-- +goose StatementBegin
DO $$
DECLARE
    s record;
BEGIN
    INSERT INTO ingestd.feature_history SELECT l.jurisdiction, l.feed, h.*
    FROM ingestd.feed_layers l CROSS JOIN LATERAL ingestd.ingestd_layer_history(l.jurisdiction, l.feed) h;
    FOR s IN SELECT c.oid::regclass AS rel FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relname = 'ingestd_history' AND c.relkind = 'r' AND n.nspname NOT IN ('ingestd', 'public')
    LOOP
        EXECUTE format('DROP TABLE %s', s.rel);
    END LOOP;
END
$$;
-- +goose StatementEnd

CREATE OR REPLACE VIEW feature_changes_expanded AS
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

DROP FUNCTION ingestd_history_loaded(text, text, bigint);
DROP FUNCTION ingestd_layer_history(text, text);
DROP FUNCTION ingestd_history_sql(text, text);
DROP FUNCTION ingestd_history_table(text, text);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_feature_history(jurisdiction text, feed text, feature_id text)
 RETURNS TABLE(valid_from timestamp with time zone, valid_to timestamp with time zone, from_poll bigint, to_poll bigint, ended_by text, properties jsonb, geom geometry)
 LANGUAGE plpgsql
 STABLE
 SET "TimeZone" TO 'UTC'
 SET extra_float_digits TO '1'
AS $function$
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
$function$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_layer_as_of(jurisdiction text, feed text, at timestamp with time zone)
 RETURNS TABLE(feature_id text, properties jsonb, geom geometry)
 LANGUAGE plpgsql
 STABLE
 SET "TimeZone" TO 'UTC'
 SET extra_float_digits TO '1'
AS $function$
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
$function$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_changes_since(jurisdiction text, feed text, after_poll bigint)
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_prune_history(now_at timestamp with time zone, batch integer)
 RETURNS bigint
 LANGUAGE plpgsql
AS $function$
DECLARE
    s record;
    n bigint;
    layers text[];
    total bigint := 0;
BEGIN
    FOR s IN SELECT f.jurisdiction, f.feed, now_at - f.history_keep AS cutoff FROM ingestd.feed_status f
        WHERE f.history_keep IS NOT NULL -- '0' (off): whatever was kept before goes
    LOOP
        DELETE FROM ingestd.feature_history h WHERE h.ctid IN (
            SELECT x.ctid FROM ingestd.feature_history x
            WHERE x.jurisdiction = s.jurisdiction AND x.feed = s.feed AND x.valid_to < s.cutoff
            LIMIT batch - total);
        GET DIAGNOSTICS n = ROW_COUNT;
        total := total + n;
        IF n > 0 THEN
            UPDATE ingestd.feed_status SET history_from = greatest(history_from, s.cutoff)
            WHERE jurisdiction = s.jurisdiction AND feed = s.feed;
        END IF;
        EXIT WHEN total >= batch;
        WITH d AS (
            DELETE FROM ingestd.common_history h WHERE h.ctid IN (
                SELECT x.ctid FROM ingestd.common_history x
                WHERE x.jurisdiction = s.jurisdiction AND x.feed = s.feed AND x.valid_to < s.cutoff
                LIMIT batch - total)
            RETURNING h.layer)
        SELECT count(*), array_agg(DISTINCT d.layer) INTO n, layers FROM d;
        total := total + n;
        IF n > 0 THEN
            INSERT INTO ingestd.common_layers AS l (layer, history_from) SELECT u, s.cutoff FROM unnest(layers) u
            ON CONFLICT (layer) DO UPDATE SET history_from = greatest(l.history_from, excluded.history_from);
        END IF;
        EXIT WHEN total >= batch;
    END LOOP;
    RETURN total;
END
$function$;
-- +goose StatementEnd
