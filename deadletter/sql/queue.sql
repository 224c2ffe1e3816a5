-- The dead_letter table: parking, reading, claiming and finishing rows
-- (queue.go). {{letter_columns}} is the letter_columns block, expanded when
-- the file is loaded; {{filter}} is a Filter's condition, with parameters
-- numbered after the statement's own, filled in at run time (it holds
-- column names and parameter numbers only, never a value).

-- name: letter_columns
-- Scanned by scanLetter, in this order.
id, jurisdiction, feed, url, origin, reason, retry_after, attempts, status,
	coalesce(last_error, ''), coalesce(poll_id, 0), next_page, checkpoint_at, coalesce(claimed_by, ''),
	lease_until, created_at, updated_at, finished_at

-- name: park
-- A feed has one open row: parking again updates the pending one (attempts
-- kept); a replaying one returns no row (ErrAlreadyOpen).
INSERT INTO dead_letter AS d (jurisdiction, feed, url, origin, reason, retry_after, last_error,
	poll_id, next_page, checkpoint_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, nullif($8, 0), $9, coalesce($10, now()))
ON CONFLICT (jurisdiction, feed) WHERE status IN ('pending', 'replaying') DO UPDATE SET
	url = excluded.url, origin = excluded.origin, reason = excluded.reason,
	retry_after = excluded.retry_after, last_error = excluded.last_error,
	poll_id = excluded.poll_id, next_page = excluded.next_page,
	checkpoint_at = excluded.checkpoint_at, updated_at = now()
WHERE d.status = 'pending'
RETURNING id

-- name: open
SELECT {{letter_columns}} FROM dead_letter
WHERE jurisdiction = $1 AND feed = $2 AND status IN ('pending', 'replaying')

-- name: get
SELECT {{letter_columns}} FROM dead_letter WHERE id = $1

-- name: list
-- Newest first; the caller appends LIMIT.
SELECT {{letter_columns}} FROM dead_letter WHERE {{filter}} ORDER BY id DESC

-- name: purge
DELETE FROM dead_letter
WHERE status = ANY($1) AND finished_at < now() - $2 * interval '1 microsecond'

-- name: revive
UPDATE dead_letter SET status = 'pending', attempts = 0,
	retry_after = now(), finished_at = NULL, updated_at = now()
WHERE id = $1 AND status = 'abandoned'

-- name: expedite
-- Due at $2 (now when NULL or past); rows already due sooner keep their time.
UPDATE dead_letter SET retry_after = greatest(now(), $2::timestamptz), updated_at = now()
WHERE origin = $1 AND status = 'pending' AND reason = $3 AND retry_after > greatest(now(), $2::timestamptz)

-- name: postpone
UPDATE dead_letter
SET retry_after = greatest(retry_after, now() + $2 * interval '1 microsecond'), updated_at = now()
WHERE id = $1 AND status IN ('pending', 'replaying')

-- name: claim
-- $1 limit, $2 claimant, $3 lease in µs, $4 busy origins, $5 skipped ids;
-- {{filter}} adds the Filter and, unless the operator replays now,
-- retry_after <= now(). DISTINCT ON cannot take FOR UPDATE: pick first (the
-- oldest due row of each origin), then lock what was picked; the lock
-- re-checks status, so a row another instance claimed meanwhile is not
-- taken twice.
WITH pick AS (
	SELECT id AS pick_id FROM (
		SELECT DISTINCT ON (origin) id, retry_after FROM dead_letter
		WHERE status = 'pending' AND origin <> ALL($4) AND id <> ALL($5) AND {{filter}}
		ORDER BY origin, retry_after, id
	) first_of_origin
	ORDER BY retry_after, id
	LIMIT $1
), due AS (
	SELECT id AS due_id FROM dead_letter
	WHERE id IN (SELECT pick_id FROM pick) AND status = 'pending'
	FOR UPDATE SKIP LOCKED
)
UPDATE dead_letter d SET status = 'replaying', claimed_by = $2,
	lease_until = now() + $3 * interval '1 microsecond', updated_at = now()
FROM due WHERE d.id = due.due_id
RETURNING {{letter_columns}}

-- name: requeue_expired
-- Rows whose claimant's lease ran out (it died or lost the database
-- mid-replay) go back to pending, due at once.
WITH expired AS (
	SELECT id AS expired_id, claimed_by AS expired_by FROM dead_letter
	WHERE status = 'replaying' AND lease_until < now()
	FOR UPDATE SKIP LOCKED
)
UPDATE dead_letter d SET status = 'pending', lease_until = NULL, updated_at = now(),
	last_error = 'lease of ' || coalesce(expired_by, '?') || ' expired during a replay'
FROM expired WHERE d.id = expired_id
RETURNING {{letter_columns}}

-- name: renew
UPDATE dead_letter SET lease_until = now() + $3 * interval '1 microsecond'
WHERE id = $1 AND status = 'replaying' AND claimed_by = $2

-- name: holder
SELECT coalesce(claimed_by, ''), status FROM dead_letter WHERE id = $1

-- name: repark
-- One more attempt: pending with the new checkpoint, or abandoned at the
-- max_attempts-th ($3). No row: the claimant ($2) lost its lease.
UPDATE dead_letter SET
	status = CASE WHEN attempts + 1 >= $3 THEN 'abandoned' ELSE 'pending' END,
	finished_at = CASE WHEN attempts + 1 >= $3 THEN now() END,
	attempts = attempts + 1, url = $4, origin = $5, reason = $6, retry_after = $7,
	last_error = $8, poll_id = nullif($9, 0), next_page = $10, checkpoint_at = coalesce($11, checkpoint_at),
	claimed_by = $2, lease_until = NULL, updated_at = now()
WHERE id = $1 AND status = 'replaying' AND claimed_by = $2
RETURNING status, attempts

-- name: mark_done
-- The finishing writes touch a row only while its claimant ($2) holds it.
UPDATE dead_letter SET status = 'done', finished_at = now(), lease_until = NULL, updated_at = now()
WHERE id = $1 AND status = 'replaying' AND claimed_by = $2

-- name: release
UPDATE dead_letter SET status = 'pending', lease_until = NULL, updated_at = now()
WHERE id = $1 AND status = 'replaying' AND claimed_by = $2

-- name: abandon
UPDATE dead_letter SET status = 'abandoned', finished_at = now(), attempts = attempts + 1, last_error = $3,
	lease_until = NULL, updated_at = now()
WHERE id = $1 AND status = 'replaying' AND claimed_by = $2

-- name: scrub_read
-- Scrubbing the configuration's secrets by value from what older versions
-- stored (internal/scrubrows): each row's ctid and texts.
SELECT ctid, url, last_error FROM dead_letter

-- name: scrub_write
-- $1 the ctids, then each column's old and scrubbed values: a row changes
-- only if it still holds the old ones.
UPDATE dead_letter t SET url = u.url, last_error = u.last_error
FROM unnest($1::tid[], $2::text[], $3::text[], $4::text[], $5::text[]) AS u(tid, old_url, url, old_last_error, last_error)
WHERE t.ctid = ANY($1::tid[]) AND t.ctid = u.tid AND t.url IS NOT DISTINCT FROM u.old_url
	AND t.last_error IS NOT DISTINCT FROM u.old_last_error
