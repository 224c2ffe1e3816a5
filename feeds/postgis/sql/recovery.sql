-- Instances, their claims and running polls (recovery.go).

-- name: Heartbeat
INSERT INTO instances (owner, host, pid, pid_ns, expires_at) VALUES ($1, $2, $3, nullif($4, ''), now() + $5::interval)
ON CONFLICT (owner) DO UPDATE SET heartbeat_at = now(), expires_at = excluded.expires_at, pid_ns = excluded.pid_ns

-- name: Retire
DELETE FROM instances WHERE owner = $1

-- name: Activity
-- Claims, running polls and expired instances, with their owner's
-- liveness (0 unknown, 1 live, 2 expired). Ages are by the database's
-- clock, the one that wrote them.
WITH work AS (
	SELECT poll_owner AS owner, jurisdiction, feed, 0::bigint AS poll_id,
		extract(epoch FROM now() - coalesce(poll_claimed_at, now()))::float8 AS age,
		coalesce(poll_lease_until < now(), true) AS expired
	FROM feed_status WHERE poll_owner IS NOT NULL
	UNION ALL
	SELECT coalesce(owner, ''), jurisdiction, feed, id,
		extract(epoch FROM now() - coalesce(active_at, started_at))::float8, false
	FROM polls WHERE status = 'running'
	UNION ALL
	SELECT owner, '', '', 0, 0, false FROM instances WHERE expires_at < now()
)
SELECT w.owner, w.jurisdiction, w.feed, w.poll_id, w.age, w.expired,
	CASE WHEN i.owner IS NULL THEN 0 WHEN i.expires_at < now() THEN 2 ELSE 1 END, coalesce(i.pid_ns, '')
FROM work w LEFT JOIN instances i ON i.owner = w.owner
ORDER BY w.owner, w.jurisdiction, w.feed, w.poll_id

-- name: InterruptPoll
-- Waits for an apply of the poll in flight; status is then no longer
-- running and nothing happens.
UPDATE polls SET status = 'failed', finished_at = now(), error = $2
WHERE id = $1 AND status = 'running' AND coalesce(owner, '') = $3

-- name: PollParked
-- A replay's poll is its dead letter's checkpoint.
SELECT EXISTS (SELECT FROM dead_letter
	WHERE poll_id = $1 AND status IN ('pending', 'replaying'))

-- name: InterruptClaim
-- A claim within half an interval of the last one counts as the same tick.
-- When the tick's poll did not succeed, the claim's time goes too, so that
-- the feed may be polled at once; when it succeeded (its owner died before
-- releasing the claim), the time stays and the tick is not polled twice.
-- Returns whether the tick was done.
UPDATE feed_status SET poll_owner = NULL, poll_lease_until = NULL,
	poll_claimed_at = CASE WHEN last_success_at >= poll_claimed_at THEN poll_claimed_at END
WHERE jurisdiction = $1 AND feed = $2 AND poll_owner = $3
RETURNING poll_claimed_at IS NOT NULL
