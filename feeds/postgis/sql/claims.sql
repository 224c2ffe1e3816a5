-- Claims of a feed's next poll (claim.go).

-- name: ClaimPoll
-- One conditional UPDATE: of several instances whose ticks fire together
-- exactly one wins.
UPDATE feed_status
SET poll_owner = $3, poll_lease_until = now() + $4::interval, poll_claimed_at = now()
WHERE jurisdiction = $1 AND feed = $2
  AND (poll_lease_until IS NULL OR poll_lease_until < now() OR poll_owner = $3)
  AND (poll_claimed_at IS NULL OR poll_claimed_at <= now() - $5::interval)
RETURNING 1

-- name: ReleasePoll
-- A claim under which no poll began (it found another instance's poll
-- still running) leaves no claim time behind: its tick did not happen, and
-- a claim within half an interval of it would otherwise be refused as that
-- same tick.
UPDATE feed_status s SET poll_owner = NULL, poll_lease_until = NULL,
	poll_claimed_at = CASE WHEN EXISTS (SELECT FROM polls p
		WHERE p.jurisdiction = s.jurisdiction AND p.feed = s.feed AND p.started_at >= s.poll_claimed_at)
		THEN s.poll_claimed_at END
WHERE jurisdiction = $1 AND feed = $2 AND poll_owner = $3

-- name: FeedsByOrigin
-- The configured feeds of each origin, for `ingestd breaker list`.
SELECT origin, jurisdiction || '/' || feed FROM feed_status
WHERE configured AND origin IS NOT NULL ORDER BY jurisdiction, feed
