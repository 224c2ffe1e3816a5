-- The mirror itself (features), the history of polls, and one row of
-- bookkeeping per configured feed. Timestamps are timestamptz throughout.

-- +goose Up
-- The extension usually exists already (scripts/postgis.sh creates it, and
-- creating it needs a superuser); IF NOT EXISTS keeps this migration runnable
-- by the database owner then.
CREATE EXTENSION IF NOT EXISTS postgis;

CREATE TABLE polls (
    id            bigserial PRIMARY KEY,
    jurisdiction  text        NOT NULL,
    feed          text        NOT NULL,
    url           text,
    started_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz,
    status        text        NOT NULL DEFAULT 'running'
                  CHECK (status IN ('running', 'succeeded', 'failed', 'refused')),
    error         text,
    retry_after   timestamptz,
    pages         integer     NOT NULL DEFAULT 0,
    features      integer,
    added         integer,
    modified      integer,
    removed       integer,
    unchanged     integer,
    duplicate_ids integer,
    bytes         bigint
);
CREATE INDEX polls_feed_started_idx ON polls (jurisdiction, feed, started_at DESC);
-- Polls left running by a crashed process are what a resume (or a sweeper)
-- looks for; the partial index keeps that lookup cheap as history grows.
CREATE INDEX polls_running_idx ON polls (started_at) WHERE status = 'running';

COMMENT ON TABLE polls IS 'One row per poll of one feed: its outcome and what it changed.';
COMMENT ON COLUMN polls.url IS 'The feed URL polled, credentials redacted.';
COMMENT ON COLUMN polls.status IS 'running, succeeded, failed, or refused (an open circuit breaker refused a request; see retry_after).';
COMMENT ON COLUMN polls.error IS 'Why the poll failed or was refused.';
COMMENT ON COLUMN polls.retry_after IS 'For a refused poll: when the breaker of its origin lets a request through again.';
COMMENT ON COLUMN polls.pages IS 'Pages staged by the poll.';
COMMENT ON COLUMN polls.features IS 'Distinct features in the applied snapshot (NULL until the poll succeeds).';
COMMENT ON COLUMN polls.added IS 'Features new in this snapshot.';
COMMENT ON COLUMN polls.modified IS 'Features whose content hash changed.';
COMMENT ON COLUMN polls.removed IS 'Features absent from this snapshot, deleted from features.';
COMMENT ON COLUMN polls.unchanged IS 'Features present with the same content hash (their rows were not rewritten).';
COMMENT ON COLUMN polls.duplicate_ids IS 'Staged features whose id repeated an earlier one in the snapshot; the last in page/ordinal order won.';
COMMENT ON COLUMN polls.bytes IS 'Response bytes read, when the poller reports them.';

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
    PRIMARY KEY (jurisdiction, feed, feature_id)
);
CREATE INDEX features_geom_gist ON features USING gist (geom);

COMMENT ON TABLE features IS 'The current features of every feed: the last successful snapshot. Every row was seen by its feed''s last successful poll (feed_status.last_success_at, exposed per row as features_seen.last_seen_at); unchanged rows are not rewritten by a poll.';
COMMENT ON COLUMN features.feature_id IS 'The source''s feature id, or for a feature without one the hex SHA-256 content hash.';
COMMENT ON COLUMN features.geom IS 'Geometry in EPSG:4326 (transformed from the source CRS; SRID 0 is taken as 4326), 2D.';
COMMENT ON COLUMN features.properties IS 'The feature''s attributes as the source sent them.';
COMMENT ON COLUMN features.content_hash IS 'SHA-256 over the source EWKB geometry and properties bytes; a change means the feature was modified.';
COMMENT ON COLUMN features.first_seen_at IS 'When a poll first added the feature.';
COMMENT ON COLUMN features.changed_at IS 'When a poll last added or modified the feature.';
COMMENT ON COLUMN features.poll_id IS 'The poll (polls.id) that last added or modified the feature.';

CREATE TABLE feed_status (
    jurisdiction         text        NOT NULL,
    feed                 text        NOT NULL,
    kind                 text,
    url                  text,
    origin               text,
    expected_interval    interval,
    configured           boolean     NOT NULL DEFAULT true,
    registered_at        timestamptz NOT NULL DEFAULT now(),
    last_attempt_at      timestamptz,
    last_success_at      timestamptz,
    last_error           text,
    last_error_at        timestamptz,
    last_poll_id         bigint,
    feature_count        bigint,
    consecutive_failures integer     NOT NULL DEFAULT 0,
    retry_after          timestamptz,
    PRIMARY KEY (jurisdiction, feed)
);

COMMENT ON TABLE feed_status IS 'One row per feed ever configured: written by the poller, read through feed_freshness.';
COMMENT ON COLUMN feed_status.kind IS 'wfs or geojson.';
COMMENT ON COLUMN feed_status.url IS 'The feed URL, credentials redacted.';
COMMENT ON COLUMN feed_status.origin IS 'scheme://host:port of the feed: the key of its circuit breaker.';
COMMENT ON COLUMN feed_status.expected_interval IS 'Time between two scheduled polls (NULL when unknown).';
COMMENT ON COLUMN feed_status.configured IS 'False once the feed left the configuration; its features are kept.';
COMMENT ON COLUMN feed_status.registered_at IS 'When the feed first appeared in the configuration.';
COMMENT ON COLUMN feed_status.last_attempt_at IS 'When the last poll started.';
COMMENT ON COLUMN feed_status.last_success_at IS 'When the last successful poll applied its snapshot.';
COMMENT ON COLUMN feed_status.last_error IS 'Error of the last failed or refused poll (kept after a later success).';
COMMENT ON COLUMN feed_status.last_error_at IS 'When the last poll failed or was refused.';
COMMENT ON COLUMN feed_status.last_poll_id IS 'The most recent poll (polls.id) of the feed, whatever its outcome.';
COMMENT ON COLUMN feed_status.feature_count IS 'Features in the last applied snapshot (NULL before the first success).';
COMMENT ON COLUMN feed_status.consecutive_failures IS 'Failed or refused polls since the last success.';
COMMENT ON COLUMN feed_status.retry_after IS 'Set when a poll was refused by an open breaker: when it may be retried. Cleared by a success.';

-- +goose Down
DROP TABLE feed_status;
DROP TABLE features;
DROP TABLE polls;
