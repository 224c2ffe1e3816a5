-- Change detection over normalised content, the change log, and snapshots
-- held by the guards (shrink, extent, freeze) until an operator decides.

-- +goose Up

-- Content hashes. A feature's content hash is SHA-256(geom_hash || props_hash):
--   geom_hash  SHA-256 of the geometry as ingestd re-encodes it from the
--              decoded coordinates (little-endian EWKB, source CRS, SRID
--              included), so the source's number formatting or GML-vs-GeoJSON
--              does not matter; computed by ingestd while staging.
--   props_hash SHA-256 of jsonb_send(properties): PostgreSQL's normalised
--              jsonb text (keys sorted, whitespace canonical, a repeated key
--              kept once with its last value), so a server that reorders
--              keys does not modify every feature. Numbers keep their
--              written form (1.0 and 1 differ). Computed by PostgreSQL as the
--              page is COPYed. jsonb_send writes the text in the session's
--              client encoding; ingestd (pgx) always uses UTF8.
-- An empty bytea stands for a missing geometry or missing properties.
ALTER TABLE staged_features RENAME COLUMN content_hash TO geom_hash;
ALTER TABLE staged_features ADD COLUMN props_hash bytea
    GENERATED ALWAYS AS (sha256(coalesce(jsonb_send(properties), '\x'::bytea))) STORED;
COMMENT ON COLUMN staged_features.geom_hash IS 'SHA-256 of the geometry''s EWKB as ingestd encodes it (source CRS); hash of nothing for a null geometry.';
COMMENT ON COLUMN staged_features.props_hash IS 'SHA-256 of jsonb_send(properties): the normalised jsonb text, so key order does not matter.';
COMMENT ON COLUMN staged_features.feature_id IS 'Source id, or '''' for a feature without one (Apply names it by its hex content hash).';

ALTER TABLE features ADD COLUMN geom_hash bytea, ADD COLUMN props_hash bytea;
-- Rows from before this migration cannot get a geom_hash (the source EWKB
-- is gone); Apply adopts the new hashes of such a row silently when its
-- properties did not change, so an upgrade does not log every feature as
-- modified.
UPDATE features SET props_hash = sha256(coalesce(jsonb_send(properties), '\x'::bytea));
COMMENT ON COLUMN features.content_hash IS 'SHA-256(geom_hash || props_hash): a change means the feature was modified.';
COMMENT ON COLUMN features.geom_hash IS 'SHA-256 of the source geometry as ingestd encodes it (NULL for rows written before change detection; adopted at the next poll).';
COMMENT ON COLUMN features.props_hash IS 'SHA-256 of the normalised jsonb text of properties.';
COMMENT ON COLUMN features.feature_id IS 'The source''s feature id (id_property, else gml:id or GeoJSON id), or for a feature without one the hex content hash.';

CREATE TABLE feature_changes (
    poll_id            bigint      NOT NULL,
    jurisdiction       text        NOT NULL,
    feed               text        NOT NULL,
    feature_id         text        NOT NULL,
    change             text        NOT NULL CHECK (change IN ('added', 'modified', 'removed')),
    geometry_changed   boolean,
    properties_changed boolean,
    old_hash           bytea,
    new_hash           bytea,
    changed_at         timestamptz NOT NULL,
    -- A snapshot holds each id once, and a removed id is not in it.
    PRIMARY KEY (poll_id, feature_id)
);
CREATE INDEX feature_changes_feed_time_idx ON feature_changes (jurisdiction, feed, changed_at);

COMMENT ON TABLE feature_changes IS 'One row per feature a poll added, modified or removed, written in the transaction that applied the snapshot.';
COMMENT ON COLUMN feature_changes.poll_id IS 'The poll (polls.id) whose snapshot made the change.';
COMMENT ON COLUMN feature_changes.change IS 'added, modified (content hash changed) or removed (absent from the snapshot).';
COMMENT ON COLUMN feature_changes.geometry_changed IS 'modified: whether the geometry hash changed (NULL when the old row predates geometry hashes). true for added and removed.';
COMMENT ON COLUMN feature_changes.properties_changed IS 'modified: whether the properties hash changed. true for added and removed.';
COMMENT ON COLUMN feature_changes.old_hash IS 'Content hash before the change (NULL for added).';
COMMENT ON COLUMN feature_changes.new_hash IS 'Content hash after the change (NULL for removed).';
COMMENT ON COLUMN feature_changes.changed_at IS 'When the snapshot was applied (the apply transaction''s time).';

-- Held snapshots: a poll whose snapshot a guard refused keeps its staging
-- and waits for `ingestd held accept|reject`, or for a later poll to
-- supersede it.
ALTER TABLE polls DROP CONSTRAINT polls_status_check;
ALTER TABLE polls ADD CONSTRAINT polls_status_check
    CHECK (status IN ('running', 'succeeded', 'failed', 'refused', 'held', 'rejected', 'superseded'));
COMMENT ON COLUMN polls.status IS 'running, succeeded, failed, refused (an open circuit breaker refused a request; see retry_after), held (a guard held the snapshot; see error), rejected (an operator discarded the held snapshot), superseded (a later poll of the feed applied or was held before anyone decided).';
COMMENT ON COLUMN polls.error IS 'Why the poll failed or was refused, or why its snapshot was held.';
COMMENT ON COLUMN polls.features IS 'Distinct features in the snapshot (NULL until the poll is applied or held).';

ALTER TABLE feed_status
    ADD COLUMN held_poll_id bigint,
    ADD COLUMN held_reason  text,
    ADD COLUMN held_at      timestamptz;
COMMENT ON COLUMN feed_status.held_poll_id IS 'The poll whose snapshot a guard holds (staging kept) until accepted, rejected or superseded; NULL when none.';
COMMENT ON COLUMN feed_status.held_reason IS 'Why the snapshot is held (shrink, empty, extent or freeze, with the figures).';
COMMENT ON COLUMN feed_status.held_at IS 'When the snapshot was held.';

-- Same columns as 00003, in the same order, so that later migrations can
-- CREATE OR REPLACE it by appending; only the status gains 'held'.
CREATE OR REPLACE VIEW feed_freshness AS
SELECT
    s.jurisdiction,
    s.feed,
    s.last_attempt_at,
    s.last_success_at,
    now() - s.last_success_at AS age,
    s.expected_interval,
    CASE
        WHEN NOT s.configured THEN 'removed'
        -- Before parked and failing: nothing changes until someone decides.
        WHEN s.held_poll_id IS NOT NULL THEN 'held'
        WHEN s.retry_after > now()
             AND (s.last_success_at IS NULL OR s.last_error_at > s.last_success_at) THEN 'parked'
        WHEN s.last_error_at IS NOT NULL
             AND (s.last_success_at IS NULL OR s.last_error_at > s.last_success_at) THEN 'failing'
        WHEN s.last_success_at IS NULL THEN 'never'
        WHEN s.expected_interval IS NOT NULL
             AND now() - s.last_success_at > 2 * s.expected_interval THEN 'stale'
        ELSE 'fresh'
    END AS status,
    s.feature_count,
    s.last_error,
    s.last_error_at,
    s.consecutive_failures,
    s.retry_after,
    s.origin,
    s.kind,
    s.url,
    s.configured,
    s.last_poll_id
FROM feed_status s;
COMMENT ON COLUMN feed_freshness.status IS 'removed: no longer configured (data kept). held: a guard holds the last snapshot (see held_snapshots). parked: the last attempt was refused by an open breaker and retry_after is still ahead. failing: the last attempt failed (last_error_at after last_success_at, or errors and no success). never: neither a success nor a failure yet. stale: age > 2 x expected_interval. fresh: otherwise.';

CREATE VIEW held_snapshots AS
SELECT
    s.jurisdiction,
    s.feed,
    s.held_poll_id AS poll_id,
    s.held_at,
    s.held_reason AS reason,
    s.feature_count AS previous_features,
    p.features AS snapshot_features,
    p.pages,
    p.started_at,
    s.last_success_at
FROM feed_status s
JOIN polls p ON p.id = s.held_poll_id;
COMMENT ON VIEW held_snapshots IS 'Snapshots a guard holds, one per feed at most: `ingestd held accept|reject JURISDICTION/FEED` decides.';

-- +goose Down
DROP VIEW held_snapshots;
CREATE OR REPLACE VIEW feed_freshness AS
SELECT
    s.jurisdiction,
    s.feed,
    s.last_attempt_at,
    s.last_success_at,
    now() - s.last_success_at AS age,
    s.expected_interval,
    CASE
        WHEN NOT s.configured THEN 'removed'
        WHEN s.retry_after > now()
             AND (s.last_success_at IS NULL OR s.last_error_at > s.last_success_at) THEN 'parked'
        WHEN s.last_error_at IS NOT NULL
             AND (s.last_success_at IS NULL OR s.last_error_at > s.last_success_at) THEN 'failing'
        WHEN s.last_success_at IS NULL THEN 'never'
        WHEN s.expected_interval IS NOT NULL
             AND now() - s.last_success_at > 2 * s.expected_interval THEN 'stale'
        ELSE 'fresh'
    END AS status,
    s.feature_count,
    s.last_error,
    s.last_error_at,
    s.consecutive_failures,
    s.retry_after,
    s.origin,
    s.kind,
    s.url,
    s.configured,
    s.last_poll_id
FROM feed_status s;
ALTER TABLE feed_status DROP COLUMN held_poll_id, DROP COLUMN held_reason, DROP COLUMN held_at;
UPDATE polls SET status = 'failed' WHERE status IN ('held', 'rejected', 'superseded');
ALTER TABLE polls DROP CONSTRAINT polls_status_check;
ALTER TABLE polls ADD CONSTRAINT polls_status_check
    CHECK (status IN ('running', 'succeeded', 'failed', 'refused'));
DROP TABLE feature_changes;
ALTER TABLE features DROP COLUMN geom_hash, DROP COLUMN props_hash;
ALTER TABLE staged_features DROP COLUMN props_hash;
ALTER TABLE staged_features RENAME COLUMN geom_hash TO content_hash;
