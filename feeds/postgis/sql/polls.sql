-- Feeds and their polls: feed_status and polls rows (store.go, status.go).

-- name: RegisterFeeds
-- $7: each feed's history retention in microseconds (HistoryKeep); $8,
-- $9: its layer's schema and name ('': the default, ingestd_feed_layer).
INSERT INTO feed_status AS s (jurisdiction, feed, kind, url, origin, expected_interval, configured, history_keep,
	layer_schema, layer_name)
SELECT j, f, k, u, o, CASE WHEN us > 0 THEN us * interval '1 microsecond' END, true, {{HistoryKeep}},
	nullif(ls, ''), nullif(ln, '')
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[], $8::text[], $9::text[])
	AS t(j, f, k, u, o, us, hk, ls, ln)
ON CONFLICT (jurisdiction, feed) DO UPDATE SET
	kind = excluded.kind, url = excluded.url, origin = excluded.origin,
	expected_interval = excluded.expected_interval, configured = true, history_keep = excluded.history_keep,
	layer_schema = excluded.layer_schema, layer_name = excluded.layer_name

-- name: HistoryKeep
-- feeds.History.KeepMicros hk as feed_status.history_keep: -1 forever
-- (NULL), 0 off.
CASE WHEN hk < 0 THEN NULL ELSE hk * interval '1 microsecond' END

-- name: RemoveFeeds
UPDATE feed_status SET configured = false
WHERE configured AND (jurisdiction, feed) IN (SELECT * FROM unnest($1::text[], $2::text[]))

-- name: BeginPoll
-- $8: the feed's history retention (HistoryKeep), which its apply obeys.
-- No row when another instance ($7 is this one) holds the feed's claim or
-- has a poll of it running: an instance taken for dead while its poll
-- waited for a connection or its turn may be alive, its claim ended and
-- its poll not yet interrupted; neither instance's poll may run beside the
-- other's.
WITH p AS (
	INSERT INTO polls (jurisdiction, feed, url, owner, staging_schema)
	SELECT $1, $2, $4, nullif($7, ''), (ingestd_feed_layer($1, $2))[1]
	WHERE $7 = '' OR NOT (
		EXISTS (SELECT FROM feed_status c WHERE c.jurisdiction = $1 AND c.feed = $2 AND c.poll_owner <> $7)
		OR EXISTS (SELECT FROM polls r WHERE r.jurisdiction = $1 AND r.feed = $2 AND r.status = 'running'
			AND r.owner IS DISTINCT FROM $7))
	RETURNING id, started_at, staging_schema
), fs AS (
	INSERT INTO feed_status AS s (jurisdiction, feed, kind, url, origin, expected_interval, last_attempt_at, last_poll_id, history_keep)
	SELECT $1, $2, $3, $4, $5, CASE WHEN $6::bigint > 0 THEN $6 * interval '1 microsecond' END, p.started_at, p.id,
		(SELECT {{HistoryKeep}} FROM (SELECT $8::bigint AS hk) h) FROM p
	ON CONFLICT (jurisdiction, feed) DO UPDATE SET
		last_attempt_at = excluded.last_attempt_at, history_keep = excluded.history_keep,
		last_poll_id = GREATEST(s.last_poll_id, excluded.last_poll_id)
)
SELECT id, staging_schema, to_regclass(format('%I.ingestd_staged', staging_schema)) IS NOT NULL FROM p

-- name: LockPoll
-- The poll's state, its feed, the schema it stages into and whether that
-- schema's staging table exists.
SELECT status, jurisdiction, feed, s, to_regclass(format('%I.ingestd_staged', s)) IS NOT NULL
FROM polls CROSS JOIN LATERAL (SELECT coalesce(staging_schema, (ingestd_feed_layer(jurisdiction, feed))[1]) AS s) x
WHERE id = $1 FOR UPDATE OF polls

-- name: FailPoll
UPDATE polls SET status = 'failed', finished_at = now(), error = $2 WHERE id = $1

-- name: FeedFailed
-- Poll $4 of feed ($1, $2) failed with $3.
-- Its validators go: a failed poll may have met a new version of the layer.
UPDATE feed_status SET last_error = $3, last_error_at = now(),
	consecutive_failures = consecutive_failures + 1,
	last_poll_id = GREATEST(last_poll_id, $4), validators = NULL, validators_for = NULL
WHERE jurisdiction = $1 AND feed = $2

-- name: EndPollKeepingStaging
UPDATE polls SET status = $4, finished_at = now(), error = $2, retry_after = $3
WHERE id = $1

-- name: FeedFailedUntil
-- FeedFailed, with retry_after $4 (poll $5).
UPDATE feed_status SET last_error = $3, last_error_at = now(), retry_after = $4,
	consecutive_failures = consecutive_failures + 1,
	last_poll_id = GREATEST(last_poll_id, $5), validators = NULL, validators_for = NULL
WHERE jurisdiction = $1 AND feed = $2

-- name: LastSuccess
SELECT jurisdiction || '/' || feed, last_success_at
FROM feed_status WHERE last_success_at IS NOT NULL

-- name: RecordCompleteness
-- Kind ogcapi: what a succeeded poll's completeness rests on.
UPDATE polls SET completeness = $2 WHERE id = $1

-- name: RecordCRS
-- Kind file: the CRS a succeeded poll read its layer in, and how it was
-- identified.
UPDATE polls SET crs = $2, crs_identified_by = $3 WHERE id = $1

-- name: RecordFetch
-- What poll $1's fetch read: $2 body bytes (added: a resumed poll fetches
-- in parts) and the validators $3 the server sent (NULL: none) for the
-- request whose key is $4.
UPDATE polls SET bytes = coalesce(bytes, 0) + $2, validators = $3, validators_for = $4
WHERE id = $1

-- name: AppliedValidators
-- The validators of the feed's last applied snapshot, if they came with
-- the request whose key is $3 (NULL: none).
SELECT validators FROM feed_status
WHERE jurisdiction = $1 AND feed = $2 AND validators_for = $3

-- name: RecordNotModifiedPoll
-- Poll $1 succeeded with nothing fetched: the feed's features ($2 of them)
-- are its last applied snapshot's.
UPDATE polls SET status = 'succeeded', not_modified = true, finished_at = now(), pages = 0,
	bytes = coalesce(bytes, 0), features = $2, added = 0, modified = 0, removed = 0, unchanged = $2,
	duplicate_ids = 0, invalid_geometries = 0
WHERE id = $1

-- name: RecordNotModifiedFeed
-- The feed is fresh as of now (poll $3); its features and validators stay.
UPDATE feed_status SET last_success_at = now(), consecutive_failures = 0, retry_after = NULL,
	last_poll_id = GREATEST(last_poll_id, $3)
WHERE jurisdiction = $1 AND feed = $2
RETURNING coalesce(feature_count, 0)

-- name: RecordQueueWait
-- Time poll $1 waited in line for request slots ($2, added: a resumed poll
-- waits in parts).
UPDATE polls SET queue_wait = coalesce(queue_wait, interval '0') + $2::interval
WHERE id = $1
