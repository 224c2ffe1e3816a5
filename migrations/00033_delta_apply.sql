-- Incremental refresh applies the delta: a poll that fetched
-- only what changed since the last applied snapshot no longer copies the
-- previous snapshot's other features into its staging. Its staging holds
-- the fetched features, staged_deltas what the proof against the server's
-- id list found (its size, the features it no longer holds), and the
-- apply writes the fetched features that differ and removes those,
-- touching nothing else.
--
-- feed_schemas.profile is the applied snapshot's value profile (what
-- staging profiles per page, merged): a delta's schema is that profile,
-- less the replaced and removed versions, plus the fetched pages', so the
-- typed view is judged as for a whole snapshot without reading it.

-- +goose Up
CREATE TABLE ingestd.staged_deltas (
    poll_id  bigint      PRIMARY KEY REFERENCES ingestd.polls (id) ON DELETE CASCADE,
    features integer     NOT NULL,
    removed  text[]      NOT NULL,
    since    text        NOT NULL DEFAULT '',
    staged_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE ingestd.staged_deltas IS 'Per poll that fetched a delta (fetch_mode edit_date or change_tracking) and proved it whole: how many ids the server listed (the snapshot''s features) and the feed''s features the list lacks (removed), as the proof found them. With the poll''s staged features it is the snapshot: the listed features not fetched keep their applied version, the removed ones go. Deleted with the poll''s staging.';
ALTER TABLE ingestd.feed_schemas ADD COLUMN profile jsonb;
COMMENT ON COLUMN ingestd.feed_schemas.profile IS 'The applied snapshot''s value profile (the kinds of values per property, geometry types, features): what a delta''s schema is derived from. NULL before version 33, or for a snapshot staged before version 20; the next delta then profiles the stored features once.';

-- A feed's layer kept in step by an apply: the rows of the ids the poll
-- logged are found through the change log's (jurisdiction, feed,
-- changed_at) index from the poll's start, not by reading every change
-- the feed ever logged, and the typed select is asked for those ids
-- only (it reads the feed's own table, whose key feature_id leads).
SELECT set_config('search_path', 'ingestd, public', true);
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_refresh_feed_layer(j text, f text, poll bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
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
$$;
-- +goose StatementEnd

-- +goose Down
SELECT set_config('search_path', 'ingestd, public', true);
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_refresh_feed_layer(j text, f text, poll bigint) RETURNS boolean
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
    EXECUTE format('DELETE FROM %s WHERE feature_id IN (%s)', v, ids) USING poll, j, f;
    EXECUTE format('INSERT INTO %s SELECT * FROM (%s) l WHERE l.jurisdiction = $2 AND l.feed = $3 AND l.feature_id IN (%s AND c.change IN (''added'', ''modified''))',
        v, sel, ids) USING poll, j, f;
    RETURN true;
EXCEPTION WHEN program_limit_exceeded THEN
    EXECUTE format('DROP TABLE %s', v);
    EXECUTE format('CREATE VIEW %s AS %s', v, sel);
    RETURN false;
END
$$;
-- +goose StatementEnd
ALTER TABLE ingestd.feed_schemas DROP COLUMN profile;
DROP TABLE ingestd.staged_deltas;
