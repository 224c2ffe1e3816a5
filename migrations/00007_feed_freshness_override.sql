-- Manual overrides in feed_freshness: an operator looking at a parked or
-- failing feed sees at once that someone forced its origin open (or closed),
-- who, why and until when. Same columns as 00005 in the same order
-- (CREATE OR REPLACE VIEW may only append), plus the override.

-- +goose Up
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
        WHEN dl.id IS NOT NULL THEN 'parked'
        WHEN b.stuck AND b.state <> 'closed' THEN 'parked'
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
    s.last_poll_id,
    (dl.id IS NOT NULL)::int AS dead_letters_pending,
    dl.id AS dead_letter_id,
    dl.reason AS dead_letter_reason,
    dl.retry_after AS dead_letter_retry_after,
    coalesce(b.state, 'closed') AS breaker_state,
    b.open_until AS breaker_open_until,
    coalesce(b.stuck, false) AS origin_stuck,
    -- An override past its override_until has lapsed: show what instances do.
    CASE WHEN b.override IS NULL OR b.override = 'none'
              OR b.override_until <= now() THEN 'none'
         ELSE b.override END AS breaker_override,
    b.override_until AS breaker_override_until,
    b.override_reason AS breaker_override_reason,
    b.override_by AS breaker_override_by
FROM feed_status s
LEFT JOIN dead_letter dl ON dl.jurisdiction = s.jurisdiction AND dl.feed = s.feed
    AND dl.status IN ('pending', 'replaying')
LEFT JOIN breaker_state b ON b.origin = s.origin;

COMMENT ON COLUMN feed_freshness.breaker_override IS 'Manual override of the origin''s breaker in force: none, open (every request refused) or closed (every request admitted); a lapsed override shows none.';
COMMENT ON COLUMN feed_freshness.breaker_override_until IS 'When the override lapses (NULL: until changed).';
COMMENT ON COLUMN feed_freshness.breaker_override_reason IS 'Why the operator set the override.';
COMMENT ON COLUMN feed_freshness.breaker_override_by IS 'Who set the override.';

-- +goose Down
DROP VIEW feed_freshness;
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
        WHEN dl.id IS NOT NULL THEN 'parked'
        WHEN b.stuck AND b.state <> 'closed' THEN 'parked'
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
    s.last_poll_id,
    (dl.id IS NOT NULL)::int AS dead_letters_pending,
    dl.id AS dead_letter_id,
    dl.reason AS dead_letter_reason,
    dl.retry_after AS dead_letter_retry_after,
    coalesce(b.state, 'closed') AS breaker_state,
    b.open_until AS breaker_open_until,
    coalesce(b.stuck, false) AS origin_stuck
FROM feed_status s
LEFT JOIN dead_letter dl ON dl.jurisdiction = s.jurisdiction AND dl.feed = s.feed
    AND dl.status IN ('pending', 'replaying')
LEFT JOIN breaker_state b ON b.origin = s.origin;
COMMENT ON VIEW feed_freshness IS 'Per feed: when it was last polled and last succeeded, and whether that is recent enough.';
COMMENT ON COLUMN feed_freshness.jurisdiction IS 'Jurisdiction id from jurisdictions.yaml.';
COMMENT ON COLUMN feed_freshness.feed IS 'Feed id within the jurisdiction.';
COMMENT ON COLUMN feed_freshness.last_attempt_at IS 'When the last poll started.';
COMMENT ON COLUMN feed_freshness.last_success_at IS 'When the last successful poll applied its snapshot.';
COMMENT ON COLUMN feed_freshness.age IS 'now() - last_success_at; NULL when the feed never succeeded.';
COMMENT ON COLUMN feed_freshness.expected_interval IS 'Time between two scheduled polls.';
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
COMMENT ON COLUMN feed_freshness.status IS 'removed: no longer configured (data kept). parked: the feed has an open dead letter, or its origin is stuck open, or its last attempt was refused and retry_after is still ahead. failing: the last attempt failed (last_error_at after last_success_at, or errors and no success). never: neither a success nor a failure yet. stale: age > 2 x expected_interval. fresh: otherwise.';
COMMENT ON COLUMN feed_freshness.dead_letters_pending IS 'Open (pending or replaying) dead letters of the feed: 0 or 1.';
COMMENT ON COLUMN feed_freshness.dead_letter_id IS 'The open dead letter (dead_letter.id), if any.';
COMMENT ON COLUMN feed_freshness.dead_letter_reason IS 'circuit_open or failed.';
COMMENT ON COLUMN feed_freshness.dead_letter_retry_after IS 'When the open dead letter is replayed.';
COMMENT ON COLUMN feed_freshness.breaker_state IS 'The last state of the origin''s breaker an instance recorded (closed when none).';
COMMENT ON COLUMN feed_freshness.breaker_open_until IS 'While the origin is open: when its next probe may go out.';
COMMENT ON COLUMN feed_freshness.origin_stuck IS 'The origin stayed open across stuck_open_after consecutive cooldowns.';
