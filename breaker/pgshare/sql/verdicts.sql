-- Statements on breaker_state, the cluster's verdict on each origin
-- (SharedState). Every statement returns whole rows in one column order,
-- ending with the database's clock_timestamp(), which scanVerdict reads; a
-- test holds the lists alike. Not now(): that is when the statement's
-- transaction began, which can precede the commit of a row the statement
-- sees (a trip committed between the two), and a verdict read that way
-- seemed to last longer than its span.

-- name: select_all
-- Every row: the start-up load and the periodic reload.
SELECT origin, state, opened_at, open_until, consecutive_opens, probe_owner, probe_until,
       override, override_until, override_reason, override_by, override_at, updated_at, updated_by, last_error, version, clock_timestamp()
FROM breaker_state;

-- name: select_sorted
-- Every row, sorted by origin, for `ingestd breaker list` and `status`.
SELECT origin, state, opened_at, open_until, consecutive_opens, probe_owner, probe_until,
       override, override_until, override_reason, override_by, override_at, updated_at, updated_by, last_error, version, clock_timestamp()
FROM breaker_state ORDER BY origin;

-- name: select_origin
-- One origin's row, re-read after a notification.
SELECT origin, state, opened_at, open_until, consecutive_opens, probe_owner, probe_until,
       override, override_until, override_reason, override_by, override_at, updated_at, updated_by, last_error, version, clock_timestamp()
FROM breaker_state WHERE origin = $1;

-- name: open
-- Opens an origin for everyone ($1 origin, $2 seconds open, $3 consecutive
-- opens, $4 this instance, $5 last error). The more protective verdict
-- wins: a later open_until stays, and a live lease of another instance is
-- kept (its probe is under way). A trip of a closed origin starts the count
-- of consecutive opens afresh from the tripping instance's count.
INSERT INTO breaker_state AS b (origin, state, opened_at, open_until, consecutive_opens, updated_by, last_error)
VALUES ($1, 'open', now(), now() + make_interval(secs => $2::float8), $3, $4, $5)
ON CONFLICT (origin) DO UPDATE SET
    state = CASE WHEN b.probe_owner <> $4 AND b.probe_until >= now() THEN 'half-open' ELSE 'open' END,
    opened_at = now(),
    open_until = greatest(EXCLUDED.open_until, CASE WHEN b.state <> 'closed' THEN b.open_until END),
    consecutive_opens = CASE WHEN b.state = 'closed' THEN EXCLUDED.consecutive_opens
                             ELSE greatest(b.consecutive_opens, EXCLUDED.consecutive_opens) END,
    probe_owner = CASE WHEN b.probe_owner <> $4 AND b.probe_until >= now() THEN b.probe_owner END,
    probe_until = CASE WHEN b.probe_owner <> $4 AND b.probe_until >= now() THEN b.probe_until END,
    updated_by = $4,
    last_error = EXCLUDED.last_error
RETURNING origin, state, opened_at, open_until, consecutive_opens, probe_owner, probe_until,
       override, override_until, override_reason, override_by, override_at, updated_at, updated_by, last_error, version, clock_timestamp();

-- name: close
-- Closes an origin for everyone, only for the holder of the lease ($2).
UPDATE breaker_state SET state = 'closed', opened_at = NULL, open_until = NULL,
    probe_owner = NULL, probe_until = NULL, updated_by = $2
WHERE origin = $1 AND probe_owner = $2
RETURNING origin, state, opened_at, open_until, consecutive_opens, probe_owner, probe_until,
       override, override_until, override_reason, override_by, override_at, updated_at, updated_by, last_error, version, clock_timestamp();

-- name: release
-- Gives back a lease whose probe decided nothing.
UPDATE breaker_state SET state = 'open', probe_owner = NULL, probe_until = NULL, updated_by = $2
WHERE origin = $1 AND probe_owner = $2
RETURNING origin, state, opened_at, open_until, consecutive_opens, probe_owner, probe_until,
       override, override_until, override_reason, override_by, override_at, updated_at, updated_by, last_error, version, clock_timestamp();

-- name: lease
-- Takes the probe lease ($2 this instance, $3 seconds, $4 consecutive
-- opens, $5 the version of the row the instance decided from): only once
-- the cooldown is over and no other instance holds a live lease. A missing
-- row, or a closed one at the version the instance saw, means its open
-- verdict never reached the table (the database was away): taking the
-- lease publishes it, so that the others hold back too. A row closed since
-- (at a later version) is another instance's close, which a probe decided
-- while this instance waited for the statement: it stands.
INSERT INTO breaker_state AS b (origin, state, opened_at, open_until, consecutive_opens, probe_owner, probe_until, updated_by)
VALUES ($1, 'half-open', now(), now(), $4, $2, now() + make_interval(secs => $3::float8), $2)
ON CONFLICT (origin) DO UPDATE SET
    state = 'half-open',
    opened_at = coalesce(b.opened_at, now()),
    open_until = coalesce(b.open_until, now()),
    consecutive_opens = CASE WHEN b.state = 'closed' THEN EXCLUDED.consecutive_opens ELSE b.consecutive_opens END,
    probe_owner = $2,
    probe_until = EXCLUDED.probe_until,
    updated_by = $2
WHERE (b.state = 'closed' AND b.version = $5::bigint)
   OR (b.state <> 'closed' AND (b.open_until IS NULL OR b.open_until <= now())
       AND (b.probe_owner IS NULL OR b.probe_owner = $2 OR b.probe_until < now()))
RETURNING origin, state, opened_at, open_until, consecutive_opens, probe_owner, probe_until,
       override, override_until, override_reason, override_by, override_at, updated_at, updated_by, last_error, version, clock_timestamp();

-- name: renew
-- Extends this instance's lease ($2) by $3 seconds from now.
UPDATE breaker_state SET probe_until = now() + make_interval(secs => $3::float8)
WHERE origin = $1 AND probe_owner = $2
RETURNING origin, state, opened_at, open_until, consecutive_opens, probe_owner, probe_until,
       override, override_until, override_reason, override_by, override_at, updated_at, updated_by, last_error, version, clock_timestamp();

-- name: override
-- Sets an operator's override ($2 none, open or closed; $3 seconds, 0 for
-- no end; $4 reason; $5 who). Closed also clears the automatic verdict: an
-- operator who vouches for an origin means it to be closed when the
-- override lapses, not to resume an old open.
INSERT INTO breaker_state AS b (origin, state, override, override_until, override_reason, override_by, override_at, updated_by)
VALUES ($1, 'closed', $2, CASE WHEN $3::float8 > 0 THEN now() + make_interval(secs => $3::float8) END,
        $4, $5, now(), $5)
ON CONFLICT (origin) DO UPDATE SET
    override = EXCLUDED.override,
    override_until = EXCLUDED.override_until,
    override_reason = EXCLUDED.override_reason,
    override_by = EXCLUDED.override_by,
    override_at = now(),
    updated_by = EXCLUDED.updated_by,
    state = CASE WHEN EXCLUDED.override = 'closed' THEN 'closed' ELSE b.state END,
    opened_at = CASE WHEN EXCLUDED.override = 'closed' THEN NULL ELSE b.opened_at END,
    open_until = CASE WHEN EXCLUDED.override = 'closed' THEN NULL ELSE b.open_until END,
    probe_owner = CASE WHEN EXCLUDED.override = 'closed' THEN NULL ELSE b.probe_owner END,
    probe_until = CASE WHEN EXCLUDED.override = 'closed' THEN NULL ELSE b.probe_until END,
    consecutive_opens = CASE WHEN EXCLUDED.override = 'closed' THEN 0 ELSE b.consecutive_opens END
RETURNING origin, state, opened_at, open_until, consecutive_opens, probe_owner, probe_until,
       override, override_until, override_reason, override_by, override_at, updated_at, updated_by, last_error, version, clock_timestamp();
