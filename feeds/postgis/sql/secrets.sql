-- Scrubbing the configuration's secrets by value (redact.Secrets) from text
-- the feeds' tables already hold: what versions that did not scrub by value
-- wrote where a server echoed a credential back. The scrubbing itself is
-- Go's (internal/scrubrows): each ScrubRead* returns a row's ctid and its
-- texts; each ScrubWrite* takes $1 the ctids, then each column's old and
-- new values, and changes a row only if it still holds the old ones
-- (another instance may have written it meanwhile).

-- name: ScrubReadFeedStatus
SELECT ctid, url, last_error, held_reason FROM feed_status

-- name: ScrubWriteFeedStatus
UPDATE feed_status t SET url = u.url, last_error = u.last_error, held_reason = u.held_reason
FROM unnest($1::tid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
	AS u(tid, old_url, url, old_last_error, last_error, old_held_reason, held_reason)
WHERE t.ctid = ANY($1::tid[]) AND t.ctid = u.tid AND t.url IS NOT DISTINCT FROM u.old_url
	AND t.last_error IS NOT DISTINCT FROM u.old_last_error AND t.held_reason IS NOT DISTINCT FROM u.old_held_reason

-- name: ScrubReadPages
SELECT ctid, next_link FROM staged_pages WHERE next_link IS NOT NULL

-- name: ScrubWritePages
UPDATE staged_pages t SET next_link = u.next_link
FROM unnest($1::tid[], $2::text[], $3::text[]) AS u(tid, old_next_link, next_link)
WHERE t.ctid = ANY($1::tid[]) AND t.ctid = u.tid AND t.next_link IS NOT DISTINCT FROM u.old_next_link

-- name: ScrubPollsRange
-- The polls to scrub: after the last one a scrub went through
-- (secrets_scrubbed.polls_through; 0 for all), up to the newest.
SELECT CASE WHEN $1::boolean THEN 0 ELSE coalesce((SELECT polls_through FROM secrets_scrubbed), 0) END,
	coalesce((SELECT max(id) FROM polls), 0)

-- name: ScrubReadPolls
-- $1 < id <= $2.
SELECT ctid, url, error FROM polls WHERE id > $1 AND id <= $2

-- name: ScrubWritePolls
UPDATE polls t SET url = u.url, error = u.error
FROM unnest($1::tid[], $2::text[], $3::text[], $4::text[], $5::text[]) AS u(tid, old_url, url, old_error, error)
WHERE t.ctid = ANY($1::tid[]) AND t.ctid = u.tid AND t.url IS NOT DISTINCT FROM u.old_url
	AND t.error IS NOT DISTINCT FROM u.old_error

-- name: ScrubPollsDone
-- Polls up to $1 are scrubbed: a later start scrubs only newer ones.
INSERT INTO secrets_scrubbed (polls_through, scrubbed_at) VALUES ($1, now())
ON CONFLICT (singleton) DO UPDATE SET polls_through = greatest(secrets_scrubbed.polls_through, excluded.polls_through),
	scrubbed_at = now()
