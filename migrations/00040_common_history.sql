-- Common layers' history and change feed, as feeds have theirs (versions
-- 26 and 27).
--
-- Each row of a common layer (common.addresses, …) carries changed_at: the
-- time of the apply that wrote it (its transaction's now(), as
-- features.changed_at). The version a write supersedes — a row updated or
-- deleted by an apply, whatever the path (a poll's changes, a full
-- conform, a retired feed) — goes to common_history, written by statement
-- triggers on the layer's table from their transition table: one INSERT …
-- SELECT per statement, nothing for an unchanged poll, which writes no
-- row. The conformed values are kept as jsonb (the layer's own columns,
-- whatever they are), so one table holds every layer's past and is pruned
-- like feature_history.
--
-- ingestd_layer_as_of(at, NULL::common.<layer>) is the layer as of a time
-- with its own row type; ingestd_common_changes_since(jurisdiction, feed,
-- after_poll) a feed's changes of its common rows, poll by poll.
--
-- Exactness: a layer's as-of is exact from common_layers.history_from on
-- (no row: since the layer was created). This upgrade sets it for the
-- layers that exist (their rows' past was not kept); pruning moves it past
-- what it deleted, and so does a write that superseded rows of a feed with
-- history: off. Per layer, not per feed: a region's layer as of a time is
-- complete only if every feed in it kept its past.

-- +goose Up
SELECT set_config('search_path', 'ingestd, public', true);

CREATE TABLE ingestd.common_history (
    layer        text        NOT NULL,
    jurisdiction text        NOT NULL,
    feed         text        NOT NULL,
    feature_id   text        NOT NULL,
    conformed    jsonb       NOT NULL,
    geom         geometry(Geometry, 4326),
    valid_from   timestamptz NOT NULL,
    valid_to     timestamptz NOT NULL
);
-- The layer as of a time (versions still valid then).
CREATE INDEX common_history_layer ON ingestd.common_history (layer, valid_to);
-- A feed's changes since a poll, and pruning by the feed's retention.
CREATE INDEX common_history_feed ON ingestd.common_history (jurisdiction, feed, valid_to);
COMMENT ON TABLE ingestd.common_history IS 'Superseded rows of the common layers (schema common): every row an apply updated or deleted, valid over [valid_from, valid_to). The current row is in common.<layer> (valid from its changed_at). Pruned per feed by feed_status.history_keep.';
COMMENT ON COLUMN ingestd.common_history.conformed IS 'The row''s layer columns (not jurisdiction, feed, feature_id, geom, changed_at) as jsonb: jsonb_populate_record(NULL::common.<layer>, conformed) types them.';
COMMENT ON COLUMN ingestd.common_history.valid_from IS 'When the apply that wrote this version ran (the row''s changed_at then).';
COMMENT ON COLUMN ingestd.common_history.valid_to IS 'When the apply that rewrote or deleted it ran.';

CREATE TABLE ingestd.common_layers (
    layer        text PRIMARY KEY,
    history_from timestamptz NOT NULL
);
COMMENT ON TABLE ingestd.common_layers IS 'Per common layer, the time from which ingestd_layer_as_of is exact (no row: since the layer was created): this upgrade, the last prune, the last write that superseded rows of a feed with history: off.';

ALTER TABLE polls ADD COLUMN common_skipped integer;
COMMENT ON COLUMN polls.common_skipped IS 'Features the apply did not conform into the feed''s common layer because its conform could not map them (they have no row there); NULL when none was skipped.';

-- Keeps the rows a statement on a common layer superseded.
-- +goose StatementBegin
CREATE FUNCTION ingestd.ingestd_common_supersede() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- A row written earlier in this transaction was never visible: no
    -- version (its valid time would be empty).
    INSERT INTO ingestd.common_history (layer, jurisdiction, feed, feature_id, conformed, geom, valid_from, valid_to)
    SELECT TG_TABLE_NAME, o.jurisdiction, o.feed, o.feature_id,
        to_jsonb(o) - '{jurisdiction,feed,feature_id,geom,changed_at}'::text[], o.geom, o.changed_at, now()
    FROM superseded o
    LEFT JOIN ingestd.feed_status s ON s.jurisdiction = o.jurisdiction AND s.feed = o.feed
    WHERE o.changed_at < now() AND (s.history_keep IS NULL OR s.history_keep > interval '0');
    IF EXISTS (SELECT FROM superseded o
            JOIN ingestd.feed_status s ON s.jurisdiction = o.jurisdiction AND s.feed = o.feed
            WHERE o.changed_at < now() AND s.history_keep <= interval '0') THEN
        INSERT INTO ingestd.common_layers AS l (layer, history_from) VALUES (TG_TABLE_NAME, now())
        ON CONFLICT (layer) DO UPDATE SET history_from = greatest(l.history_from, excluded.history_from);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- Makes a common layer's table keep its past: changed_at on its rows and
-- the triggers that keep what an update or delete supersedes. The apply
-- calls it on the tables it creates; idempotent.
-- +goose StatementBegin
CREATE FUNCTION ingestd.ingestd_common_track(layer regclass) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('ALTER TABLE %s ADD COLUMN IF NOT EXISTS changed_at timestamptz NOT NULL DEFAULT now()', layer);
    EXECUTE format('COMMENT ON COLUMN %s.changed_at IS %L', layer,
        'When the apply that wrote this row ran; its earlier versions are in ingestd.common_history.');
    -- Two triggers: one with a transition table may have one event only.
    EXECUTE format('CREATE OR REPLACE TRIGGER ingestd_history_update AFTER UPDATE ON %s '
        'REFERENCING OLD TABLE AS superseded FOR EACH STATEMENT EXECUTE FUNCTION ingestd.ingestd_common_supersede()', layer);
    EXECUTE format('CREATE OR REPLACE TRIGGER ingestd_history_delete AFTER DELETE ON %s '
        'REFERENCING OLD TABLE AS superseded FOR EACH STATEMENT EXECUTE FUNCTION ingestd.ingestd_common_supersede()', layer);
END
$$;
-- +goose StatementEnd

-- The common layers that exist: their rows are valid from now on.
-- +goose StatementBegin
DO $$
DECLARE
    t record;
BEGIN
    FOR t IN SELECT c.oid::regclass AS rel, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'common' AND c.relkind = 'r'
    LOOP
        PERFORM ingestd.ingestd_common_track(t.rel);
        INSERT INTO ingestd.common_layers (layer, history_from) VALUES (t.relname, now());
    END LOOP;
END
$$;
-- +goose StatementEnd

-- The common layer of row_type's table as it was applied at a time: its
-- current rows written by then and the superseded versions valid then,
-- typed as the layer's rows (changed_at: when the version was written).
-- +goose StatementBegin
CREATE FUNCTION ingestd.ingestd_layer_as_of(at timestamptz, row_type anyelement)
RETURNS SETOF anyelement LANGUAGE plpgsql STABLE AS $$
DECLARE
    rel regclass;
    name text;
    exact_from timestamptz;
    cols text;
BEGIN
    SELECT c.oid::regclass, c.relname INTO rel, name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.reltype = pg_typeof(row_type) AND n.nspname = 'common' AND c.relkind = 'r';
    IF rel IS NULL THEN
        RAISE EXCEPTION 'ingestd_layer_as_of: % is not a common layer', pg_typeof(row_type)
            USING HINT = 'pass NULL::common.<layer>; a feed''s layer is ingestd_layer_as_of(jurisdiction, feed, at)';
    END IF;
    SELECT l.history_from INTO exact_from FROM ingestd.common_layers l WHERE l.layer = name;
    IF exact_from IS NOT NULL AND at < exact_from THEN
        RAISE EXCEPTION 'ingestd_layer_as_of: common layer % has no complete history before % (asked for %)',
            name, exact_from, at
            USING HINT = 'history is kept from the upgrade that began it, within each feed''s history: {keep: …}, and not across writes of a feed with history: off';
    END IF;
    -- Typed as the layer's columns, typmods included (geometry(Point, 4326)).
    SELECT string_agg(CASE WHEN a.attname IN ('jurisdiction', 'feed', 'feature_id', 'geom')
            THEN format('h.%I::%s', a.attname, format_type(a.atttypid, a.atttypmod))
            WHEN a.attname = 'changed_at' THEN 'h.valid_from' ELSE format('r.%I', a.attname) END, ', ' ORDER BY a.attnum)
    INTO cols FROM pg_attribute a WHERE a.attrelid = rel AND a.attnum > 0 AND NOT a.attisdropped;
    RETURN QUERY EXECUTE format('SELECT * FROM %s t WHERE t.changed_at <= $1 '
        'UNION ALL SELECT %s FROM ingestd.common_history h, jsonb_populate_record(NULL::%s, h.conformed) r '
        'WHERE h.layer = $2 AND h.valid_to > $1 AND h.valid_from <= $1', rel, cols, rel) USING at, name;
END
$$;
-- +goose StatementEnd
COMMENT ON FUNCTION ingestd.ingestd_layer_as_of(timestamptz, anyelement) IS 'A common layer as applied at a time: pass NULL::common.<layer> as row_type. Raises when the layer''s history is not complete back to then (ingestd.common_layers.history_from).';

-- A feed's changes of its common rows after poll after_poll, poll by
-- poll: a row that an applied poll wrote and none before it had is
-- added, one it deleted removed, one whose values or geometry it changed
-- modified (a full conform that wrote the same values changed nothing).
-- A poll's versions are those written or superseded at its apply's time
-- (polls.finished_at, the apply's now()).
-- +goose StatementBegin
CREATE FUNCTION ingestd.ingestd_common_changes_since(jurisdiction text, feed text, after_poll bigint)
RETURNS TABLE (poll_id bigint, layer text, feature_id text, change text, applied_at timestamptz,
    old_values jsonb, old_geom geometry, new_values jsonb, new_geom geometry)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    cur text := (SELECT f.layer FROM ingestd.common_feeds f
        WHERE f.jurisdiction = ingestd_common_changes_since.jurisdiction AND f.feed = ingestd_common_changes_since.feed);
    current_rows text := '';
BEGIN
    IF to_regclass(format('common.%I', cur)) IS NOT NULL THEN
        current_rows := format('UNION ALL SELECT %L, t.feature_id, '
            'to_jsonb(t) - ''{jurisdiction,feed,feature_id,geom,changed_at}''::text[], t.geom::geometry, t.changed_at, NULL '
            'FROM common.%I t WHERE t.jurisdiction = $1 AND t.feed = $2 AND t.changed_at >= (SELECT min(p.at) FROM p)', cur, cur);
    END IF;
    RETURN QUERY EXECUTE format($q$
        WITH p AS (
            SELECT p.id, p.finished_at AS at FROM ingestd.polls p
            WHERE p.jurisdiction = $1 AND p.feed = $2 AND p.id > $3 AND p.status = 'succeeded'),
        v (layer, feature_id, conformed, geom, valid_from, valid_to) AS (
            SELECT h.layer, h.feature_id, h.conformed, h.geom::geometry, h.valid_from, h.valid_to
            FROM ingestd.common_history h
            WHERE h.jurisdiction = $1 AND h.feed = $2 AND h.valid_to >= (SELECT min(p.at) FROM p)
            %s),
        o AS (SELECT p.id, p.at, v.* FROM p JOIN v ON v.valid_to = p.at),
        n AS (SELECT p.id, p.at, v.* FROM p JOIN v ON v.valid_from = p.at)
        SELECT coalesce(n.id, o.id), coalesce(n.layer, o.layer), coalesce(n.feature_id, o.feature_id),
            CASE WHEN o.id IS NULL THEN 'added' WHEN n.id IS NULL THEN 'removed' ELSE 'modified' END,
            coalesce(n.at, o.at), o.conformed, o.geom, n.conformed, n.geom
        FROM o FULL JOIN n ON n.id = o.id AND n.layer = o.layer AND n.feature_id = o.feature_id
        WHERE o.id IS NULL OR n.id IS NULL OR o.conformed IS DISTINCT FROM n.conformed OR o.geom IS DISTINCT FROM n.geom
        ORDER BY 1, 3, 2$q$, current_rows) USING jurisdiction, feed, after_poll;
END
$$;
-- +goose StatementEnd
COMMENT ON FUNCTION ingestd.ingestd_common_changes_since(text, text, bigint) IS 'The changes of a feed''s common rows by its polls after after_poll, in poll order: each row added, modified or removed, with its old and new conformed values and geometry (a modification reads as added where the feed keeps no history).';

-- feature_history's prune, and common_history's by the same retention.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd.ingestd_prune_history(now_at timestamptz, batch int)
RETURNS bigint LANGUAGE plpgsql AS $$
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
$$;
-- +goose StatementEnd
COMMENT ON FUNCTION ingestd.ingestd_prune_history(timestamptz, int) IS 'Deletes at most batch versions (feature_history and common_history) older than their feed''s history_keep as of now_at; returns how many. The daemon calls it hourly until it returns 0.';

-- +goose Down
SELECT set_config('search_path', 'ingestd, public', true);
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd.ingestd_prune_history(now_at timestamptz, batch int)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    s record;
    n bigint;
    total bigint := 0;
BEGIN
    FOR s IN SELECT jurisdiction, feed, now_at - history_keep AS cutoff FROM feed_status
        WHERE history_keep IS NOT NULL -- '0' (off): whatever was kept before goes
    LOOP
        DELETE FROM feature_history h WHERE h.ctid IN (
            SELECT x.ctid FROM feature_history x
            WHERE x.jurisdiction = s.jurisdiction AND x.feed = s.feed AND x.valid_to < s.cutoff
            LIMIT batch - total);
        GET DIAGNOSTICS n = ROW_COUNT;
        total := total + n;
        IF n > 0 THEN
            UPDATE feed_status SET history_from = greatest(history_from, s.cutoff)
            WHERE jurisdiction = s.jurisdiction AND feed = s.feed;
        END IF;
        EXIT WHEN total >= batch;
    END LOOP;
    RETURN total;
END
$$;
-- +goose StatementEnd
COMMENT ON FUNCTION ingestd.ingestd_prune_history(timestamptz, int) IS 'Deletes at most batch versions older than their feed''s history_keep as of now_at; returns how many. The daemon calls it hourly until it returns 0.';
DROP FUNCTION ingestd.ingestd_common_changes_since(text, text, bigint);
DROP FUNCTION ingestd.ingestd_layer_as_of(timestamptz, anyelement);
-- +goose StatementBegin
DO $$
DECLARE
    t record;
BEGIN
    FOR t IN SELECT c.oid::regclass AS rel FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'common' AND c.relkind = 'r'
    LOOP
        EXECUTE format('DROP TRIGGER IF EXISTS ingestd_history_update ON %s', t.rel);
        EXECUTE format('DROP TRIGGER IF EXISTS ingestd_history_delete ON %s', t.rel);
        EXECUTE format('ALTER TABLE %s DROP COLUMN IF EXISTS changed_at', t.rel);
    END LOOP;
END
$$;
-- +goose StatementEnd
DROP FUNCTION ingestd.ingestd_common_track(regclass);
DROP FUNCTION ingestd.ingestd_common_supersede();
ALTER TABLE polls DROP COLUMN common_skipped;
DROP TABLE ingestd.common_layers;
DROP TABLE ingestd.common_history;
