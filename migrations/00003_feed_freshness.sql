-- The operator's first question: which feeds are fresh, and which are not.

-- +goose Up
CREATE VIEW feed_freshness AS
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
        -- Twice the interval: one missed poll (a slow server, a restart, cron
        -- jitter) is normal; two in a row is something to look at.
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

COMMENT ON VIEW feed_freshness IS 'Per feed: when it was last polled and last succeeded, and whether that is recent enough.';
COMMENT ON COLUMN feed_freshness.jurisdiction IS 'Jurisdiction id from jurisdictions.yaml.';
COMMENT ON COLUMN feed_freshness.feed IS 'Feed id within the jurisdiction.';
COMMENT ON COLUMN feed_freshness.last_attempt_at IS 'When the last poll started.';
COMMENT ON COLUMN feed_freshness.last_success_at IS 'When the last successful poll applied its snapshot.';
COMMENT ON COLUMN feed_freshness.age IS 'now() - last_success_at; NULL when the feed never succeeded.';
COMMENT ON COLUMN feed_freshness.expected_interval IS 'Time between two scheduled polls.';
COMMENT ON COLUMN feed_freshness.status IS 'removed: no longer configured (data kept). parked: the last attempt was refused by an open breaker and retry_after is still ahead. failing: the last attempt failed (last_error_at after last_success_at, or errors and no success). never: neither a success nor a failure yet. stale: age > 2 x expected_interval. fresh: otherwise.';
COMMENT ON COLUMN feed_freshness.feature_count IS 'Features in the last applied snapshot.';
COMMENT ON COLUMN feed_freshness.last_error IS 'Error of the last failed or refused poll (kept after a later success; compare last_error_at).';
COMMENT ON COLUMN feed_freshness.last_error_at IS 'When the last poll failed or was refused.';
COMMENT ON COLUMN feed_freshness.consecutive_failures IS 'Failed or refused polls since the last success.';
COMMENT ON COLUMN feed_freshness.retry_after IS 'When a refused poll may be retried.';
COMMENT ON COLUMN feed_freshness.origin IS 'scheme://host:port of the feed: the key of its circuit breaker.';
COMMENT ON COLUMN feed_freshness.kind IS 'wfs or geojson.';
COMMENT ON COLUMN feed_freshness.url IS 'The feed URL, credentials redacted.';
COMMENT ON COLUMN feed_freshness.configured IS 'False once the feed left the configuration.';
COMMENT ON COLUMN feed_freshness.last_poll_id IS 'The most recent poll (polls.id), to join polls for details.';

-- Rows of features are not rewritten when a poll sees them unchanged, so
-- "last seen" is a property of the feed: every current feature was seen by
-- the feed's last successful poll.
CREATE VIEW features_seen AS
SELECT f.*, s.last_success_at AS last_seen_at
FROM features f
JOIN feed_status s USING (jurisdiction, feed);

COMMENT ON VIEW features_seen IS 'features with last_seen_at: the last successful poll of the feed, which saw every current feature.';
COMMENT ON COLUMN features_seen.last_seen_at IS 'When a poll last saw the feature (its feed''s last_success_at).';

-- +goose Down
DROP VIEW features_seen;
DROP VIEW feed_freshness;
