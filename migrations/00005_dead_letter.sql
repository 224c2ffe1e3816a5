-- Dead letters: polls that could not finish now (an open breaker refused a
-- page, or a page failed after its retries) are parked here with the position
-- to resume at, and replayed after retry_after. Also a minimal breaker_state
-- (written from the breaker's state-change hook) so that feed_freshness can
-- show each feed's origin; a later migration extends it with the probe lease
-- and manual overrides when breaker state becomes shared between instances.

-- +goose Up
CREATE TABLE dead_letter (
    id            bigserial   PRIMARY KEY,
    jurisdiction  text        NOT NULL,
    feed          text        NOT NULL,
    url           text        NOT NULL,
    origin        text        NOT NULL,
    reason        text        NOT NULL CHECK (reason IN ('circuit_open', 'failed')),
    retry_after   timestamptz NOT NULL,
    attempts      integer     NOT NULL DEFAULT 0,
    status        text        NOT NULL DEFAULT 'pending'
                  CHECK (status IN ('pending', 'replaying', 'done', 'abandoned')),
    last_error    text,
    poll_id       bigint,
    next_page     integer     NOT NULL DEFAULT 0,
    checkpoint_at timestamptz NOT NULL DEFAULT now(),
    claimed_by    text,
    lease_until   timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz,
    CHECK ((status = 'replaying') = (lease_until IS NOT NULL))
);
-- One open dead letter per feed: parking a feed that already has one updates
-- it, and a replay in progress counts as open so nothing parks beside it.
CREATE UNIQUE INDEX dead_letter_open_feed_idx ON dead_letter (jurisdiction, feed)
    WHERE status IN ('pending', 'replaying');
-- The replayer's claim: due pending rows in retry_after order.
CREATE INDEX dead_letter_due_idx ON dead_letter (retry_after) WHERE status = 'pending';
-- Expired leases (a replaying instance died) are looked up by lease_until.
CREATE INDEX dead_letter_lease_idx ON dead_letter (lease_until) WHERE status = 'replaying';

COMMENT ON TABLE dead_letter IS 'Polls parked because a request was refused by an open breaker or failed after its retries; replayed after retry_after from their checkpoint.';
COMMENT ON COLUMN dead_letter.url IS 'The request that was refused or failed (credentials and token-like query parameters redacted).';
COMMENT ON COLUMN dead_letter.origin IS 'scheme://host:port of the request: the key of its circuit breaker (breaker_state.origin).';
COMMENT ON COLUMN dead_letter.reason IS 'circuit_open: the breaker refused without a request; failed: the request failed after its retries on a closed breaker.';
COMMENT ON COLUMN dead_letter.retry_after IS 'Not replayed before this time: the breaker''s next probe plus jitter, or a backoff capped at the feed''s schedule interval.';
COMMENT ON COLUMN dead_letter.attempts IS 'Replays tried so far; past the configured max_attempts the row is abandoned.';
COMMENT ON COLUMN dead_letter.status IS 'pending: waits for retry_after. replaying: claimed by claimed_by until lease_until. done: replayed and applied. abandoned: gave up (see last_error).';
COMMENT ON COLUMN dead_letter.last_error IS 'Why the poll (or its last replay) was parked or abandoned.';
COMMENT ON COLUMN dead_letter.poll_id IS 'Checkpoint: the staged poll (polls.id) whose pages a replay continues.';
COMMENT ON COLUMN dead_letter.next_page IS 'Checkpoint: the 0-based page to resume at; pages before it are staged.';
COMMENT ON COLUMN dead_letter.checkpoint_at IS 'When the staged poll started; a checkpoint older than max_checkpoint_age restarts from the first page.';
COMMENT ON COLUMN dead_letter.claimed_by IS 'The instance replaying the row (host:pid:random).';
COMMENT ON COLUMN dead_letter.lease_until IS 'While replaying: the claim expires then unless renewed, and the row returns to pending.';
COMMENT ON COLUMN dead_letter.finished_at IS 'When the row became done or abandoned.';

CREATE VIEW dead_letter_due AS
SELECT id, jurisdiction, feed, origin, reason, attempts, retry_after,
       now() - retry_after AS overdue, next_page, poll_id, last_error, url
FROM dead_letter
WHERE status = 'pending' AND retry_after <= now();

COMMENT ON VIEW dead_letter_due IS 'Pending dead letters whose retry_after has passed: what the replayer claims next, oldest first by retry_after.';

CREATE TABLE breaker_state (
    origin            text        PRIMARY KEY,
    state             text        NOT NULL CHECK (state IN ('closed', 'open', 'half-open')),
    opened_at         timestamptz,
    open_until        timestamptz,
    consecutive_opens integer     NOT NULL DEFAULT 0,
    stuck             boolean     NOT NULL DEFAULT false,
    updated_at        timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE breaker_state IS 'Per origin: the last breaker state change an instance saw. Written from the breaker''s state-change hook; the breaker itself still decides in memory.';
COMMENT ON COLUMN breaker_state.open_until IS 'While open: when the next probe may go out.';
COMMENT ON COLUMN breaker_state.consecutive_opens IS 'Opens without a healthy spell in between; the open duration grows with it.';
COMMENT ON COLUMN breaker_state.stuck IS 'Open across stuck_open_after consecutive cooldowns (event origin_stuck_open); cleared when the origin closes.';

-- Same columns as 00003 in the same order (CREATE OR REPLACE VIEW may only
-- append), plus the feed's dead letter and its origin's breaker state.
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
    coalesce(b.stuck, false) AS origin_stuck
FROM feed_status s
LEFT JOIN dead_letter dl ON dl.jurisdiction = s.jurisdiction AND dl.feed = s.feed
    AND dl.status IN ('pending', 'replaying')
LEFT JOIN breaker_state b ON b.origin = s.origin;

COMMENT ON COLUMN feed_freshness.status IS 'removed: no longer configured (data kept). parked: the feed has an open dead letter, or its origin is stuck open, or its last attempt was refused and retry_after is still ahead. failing: the last attempt failed (last_error_at after last_success_at, or errors and no success). never: neither a success nor a failure yet. stale: age > 2 x expected_interval. fresh: otherwise.';
COMMENT ON COLUMN feed_freshness.dead_letters_pending IS 'Open (pending or replaying) dead letters of the feed: 0 or 1.';
COMMENT ON COLUMN feed_freshness.dead_letter_id IS 'The open dead letter (dead_letter.id), if any.';
COMMENT ON COLUMN feed_freshness.dead_letter_reason IS 'circuit_open or failed.';
COMMENT ON COLUMN feed_freshness.dead_letter_retry_after IS 'When the open dead letter is replayed.';
COMMENT ON COLUMN feed_freshness.breaker_state IS 'The last state of the origin''s breaker an instance recorded (closed when none).';
COMMENT ON COLUMN feed_freshness.breaker_open_until IS 'While the origin is open: when its next probe may go out.';
COMMENT ON COLUMN feed_freshness.origin_stuck IS 'The origin stayed open across stuck_open_after consecutive cooldowns.';

-- +goose Down
DROP VIEW feed_freshness;
-- Back to 00004's view.
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
COMMENT ON VIEW feed_freshness IS 'Per feed: when it was last polled and last succeeded, and whether that is recent enough.';
DROP TABLE breaker_state;
DROP VIEW dead_letter_due;
DROP TABLE dead_letter;
