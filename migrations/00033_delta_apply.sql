-- Incremental refresh applies the delta (issue 27): a poll that fetched
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

-- +goose Down
ALTER TABLE ingestd.feed_schemas DROP COLUMN profile;
DROP TABLE ingestd.staged_deltas;
