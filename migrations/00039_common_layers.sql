-- Common layers: the record of which feeds conform into which common layer.
--
-- A feed with a conform: writes its features' conformed rows into one table
-- per common layer in schema common (common.addresses, …), created by the
-- apply that first conforms into it, since a declared layer's columns are
-- known only from the configuration. This table remembers, per feed, the
-- layer its rows are in and the digest of the conform that made them: an
-- apply whose conform differs re-conforms the feed's rows, one whose feed
-- lost its conform (or left the configuration) retires them.

-- +goose Up
CREATE TABLE ingestd.common_feeds (
    jurisdiction text NOT NULL,
    feed         text NOT NULL,
    layer        text NOT NULL,
    digest       text NOT NULL,
    conformed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (jurisdiction, feed)
);
COMMENT ON TABLE ingestd.common_feeds IS 'Feeds whose features are conformed into a common layer (schema common), one row per feed.';
COMMENT ON COLUMN ingestd.common_feeds.layer IS 'The common layer (table common.<layer>) that holds the feed''s conformed rows.';
COMMENT ON COLUMN ingestd.common_feeds.digest IS 'Digest of the conform that made the rows; empty when they must be conformed again (a held snapshot accepted without the configuration at hand).';
COMMENT ON COLUMN ingestd.common_feeds.conformed_at IS 'When the feed''s rows were last conformed in full.';

-- +goose Down
DROP TABLE ingestd.common_feeds;
