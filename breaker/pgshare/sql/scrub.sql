-- Scrubbing the configuration's secrets by value (redact.Secrets) from the
-- texts breaker_state holds: what versions that did not scrub by value
-- wrote where a server echoed a credential back. The scrubbing is Go's
-- (internal/scrubrows). Only the texts change; the trigger stamps a new
-- version and instances re-read the same verdict.

-- name: scrub_read
SELECT ctid, last_error, override_reason FROM breaker_state

-- name: scrub_write
-- $1 the ctids, then each column's old and scrubbed values: a row changes
-- only if it still holds the old ones.
UPDATE breaker_state t SET last_error = u.last_error, override_reason = u.override_reason
FROM unnest($1::tid[], $2::text[], $3::text[], $4::text[], $5::text[])
	AS u(tid, old_last_error, last_error, old_override_reason, override_reason)
WHERE t.ctid = ANY($1::tid[]) AND t.ctid = u.tid AND t.last_error IS NOT DISTINCT FROM u.old_last_error
	AND t.override_reason IS NOT DISTINCT FROM u.old_override_reason
