-- features becomes a partitioned table: one partition per jurisdiction
-- (LIST on jurisdiction), itself partitioned into one table per feed (LIST
-- on feed). Operators keep querying features; each feed also has a table of
-- its own (ingestd_feed_partition(jurisdiction, feed)) that GIS clients can
-- open as a layer.
--
-- Why: a feed's first load builds its table without indexes, COPY-like, and
-- then builds the primary key and the GiST index in bulk (sorted builds)
-- before attaching it — several times faster than inserting every row into
-- one shared GiST and B-tree index — and an apply diffs against the feed's
-- own table instead of an index over every feed.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION ingestd_partition_slug(label text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT left(trim(both '_' from regexp_replace(lower(label), '[^a-z0-9]+', '_', 'g')), 40)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION ingestd_jurisdiction_partition(jurisdiction text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT 'features_' || ingestd_partition_slug(jurisdiction) || '_' || left(md5(jurisdiction), 8)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION ingestd_feed_partition(jurisdiction text, feed text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT 'features_' || ingestd_partition_slug(jurisdiction || '_' || feed) || '_'
        || left(md5(jurisdiction || '/' || feed), 8)
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION ingestd_jurisdiction_partition(text) IS 'Name of the partition of features that holds a jurisdiction''s feeds (itself partitioned by feed).';
COMMENT ON FUNCTION ingestd_feed_partition(text, text) IS 'Name of the table (partition of features) that holds one feed''s features: at most 58 characters, lower case, ending in a hash of jurisdiction/feed.';

DROP VIEW features_seen;
ALTER TABLE features RENAME TO features_unpartitioned;
ALTER INDEX features_pkey RENAME TO features_unpartitioned_pkey;
ALTER INDEX features_geom_gist RENAME TO features_unpartitioned_geom_gist;

CREATE TABLE features (
    jurisdiction  text        NOT NULL,
    feed          text        NOT NULL,
    feature_id    text        NOT NULL,
    geom          geometry(Geometry, 4326),
    properties    jsonb,
    content_hash  bytea       NOT NULL,
    first_seen_at timestamptz NOT NULL,
    changed_at    timestamptz NOT NULL,
    poll_id       bigint      NOT NULL,
    geom_hash     bytea,
    props_hash    bytea,
    PRIMARY KEY (jurisdiction, feed, feature_id)
) PARTITION BY LIST (jurisdiction);
CREATE INDEX features_geom_gist ON features USING gist (geom);

COMMENT ON TABLE features IS 'The current features of every feed: the last successful snapshot. Partitioned by jurisdiction, then by feed: ingestd_feed_partition(jurisdiction, feed) names a feed''s own table. Every row was seen by its feed''s last successful poll (feed_status.last_success_at, exposed per row as features_seen.last_seen_at); unchanged rows are not rewritten by a poll.';
COMMENT ON COLUMN features.feature_id IS 'The source''s feature id (id_property, else gml:id or GeoJSON id), or for a feature without one the hex content hash.';
COMMENT ON COLUMN features.geom IS 'Geometry in EPSG:4326 (transformed from the source CRS; SRID 0 is taken as 4326), 2D.';
COMMENT ON COLUMN features.properties IS 'The feature''s attributes as the source sent them.';
COMMENT ON COLUMN features.content_hash IS 'SHA-256(geom_hash || props_hash): a change means the feature was modified.';
COMMENT ON COLUMN features.first_seen_at IS 'When a poll first added the feature.';
COMMENT ON COLUMN features.changed_at IS 'When a poll last added or modified the feature.';
COMMENT ON COLUMN features.poll_id IS 'The poll (polls.id) that last added or modified the feature.';
COMMENT ON COLUMN features.geom_hash IS 'SHA-256 of the source geometry as ingestd encodes it (NULL for rows written before change detection; adopted at the next poll).';
COMMENT ON COLUMN features.props_hash IS 'SHA-256 of the normalised jsonb text of properties.';

-- Move the rows: a partition per jurisdiction and per feed, the same way
-- ingestd creates them (see feeds/postgis/partition.go).
-- +goose StatementBegin
DO $$
DECLARE
    j text;
    f text;
BEGIN
    FOR j IN SELECT DISTINCT jurisdiction FROM features_unpartitioned LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF features FOR VALUES IN (%L) PARTITION BY LIST (feed)',
            ingestd_jurisdiction_partition(j), j);
    END LOOP;
    FOR j, f IN SELECT DISTINCT jurisdiction, feed FROM features_unpartitioned LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES IN (%L)',
            ingestd_feed_partition(j, f), ingestd_jurisdiction_partition(j), f);
    END LOOP;
END
$$;
-- +goose StatementEnd
INSERT INTO features SELECT jurisdiction, feed, feature_id, geom, properties, content_hash, first_seen_at,
    changed_at, poll_id, geom_hash, props_hash FROM features_unpartitioned;
DROP TABLE features_unpartitioned;

CREATE VIEW features_seen AS
SELECT f.*, s.last_success_at AS last_seen_at
FROM features f
JOIN feed_status s USING (jurisdiction, feed);

COMMENT ON VIEW features_seen IS 'features with last_seen_at: the last successful poll of the feed, which saw every current feature.';
COMMENT ON COLUMN features_seen.last_seen_at IS 'When a poll last saw the feature (its feed''s last_success_at).';

-- +goose Down
DROP VIEW features_seen;
ALTER TABLE features RENAME TO features_partitioned;
ALTER INDEX features_pkey RENAME TO features_partitioned_pkey;
ALTER INDEX features_geom_gist RENAME TO features_partitioned_geom_gist;
CREATE TABLE features (
    jurisdiction  text        NOT NULL,
    feed          text        NOT NULL,
    feature_id    text        NOT NULL,
    geom          geometry(Geometry, 4326),
    properties    jsonb,
    content_hash  bytea       NOT NULL,
    first_seen_at timestamptz NOT NULL,
    changed_at    timestamptz NOT NULL,
    poll_id       bigint      NOT NULL,
    geom_hash     bytea,
    props_hash    bytea,
    PRIMARY KEY (jurisdiction, feed, feature_id)
);
CREATE INDEX features_geom_gist ON features USING gist (geom);
INSERT INTO features SELECT * FROM features_partitioned;
DROP TABLE features_partitioned;
-- The columns as version 3 defined the view, so that version 4 can drop
-- the hash columns on its way down.
CREATE VIEW features_seen AS
SELECT f.jurisdiction, f.feed, f.feature_id, f.geom, f.properties, f.content_hash, f.first_seen_at,
    f.changed_at, f.poll_id, s.last_success_at AS last_seen_at
FROM features f
JOIN feed_status s USING (jurisdiction, feed);
DROP FUNCTION ingestd_feed_partition(text, text);
DROP FUNCTION ingestd_jurisdiction_partition(text);
DROP FUNCTION ingestd_partition_slug(text);
