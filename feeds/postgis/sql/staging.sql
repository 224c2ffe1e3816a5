-- A poll's staging: its pages COPYed into its jurisdiction's staging table
-- ({{staged}} in each statement: <schema>.ingestd_staged, stagedTx), listed
-- in staged_pages (store.go, checkpoint.go).

-- name: LockPollForStaging
-- FOR SHARE makes a concurrent FailPoll or Apply of the poll wait for the
-- page, so staging never lands after the poll was cleaned up.
-- With the schema the poll stages into and whether its staging table
-- exists.
SELECT status, s, to_regclass(format('%I.ingestd_staged', s)) IS NOT NULL
FROM polls CROSS JOIN LATERAL (SELECT coalesce(staging_schema, (ingestd_feed_layer(jurisdiction, feed))[1]) AS s) x
WHERE id = $1 FOR SHARE OF polls

-- name: DeleteStagedPage
DELETE FROM {{staged}} WHERE poll_id = $1 AND page = $2

-- name: StagingCopy
-- The COPY StagePage sends; copySource writes its rows in this order.
COPY {{staged}} (poll_id, page, ordinal, feature_id, srid, geom_ewkb, properties,
	geom_hash, props_hash, content_hash, geom_broken, invalid_feature) FROM STDIN (FORMAT binary)

-- name: RecordStagedPage
-- $6 is the page's profile (schema.Profile: typed layers); $7 its next
-- link (kinds that page by links: where a resumed poll reads the page
-- after it again), NULL for the others.
INSERT INTO staged_pages (poll_id, page, features, named_ids, invalid_features, profile, next_link) VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (poll_id, page) DO UPDATE SET features = excluded.features, named_ids = excluded.named_ids,
	invalid_features = excluded.invalid_features, profile = excluded.profile, next_link = excluded.next_link, staged_at = now()

-- name: StagedNextLink
-- The next link a staged page recorded. No row, or NULL: none was.
SELECT next_link FROM staged_pages WHERE poll_id = $1 AND page = $2

-- name: StagedPageDigest
-- Page $2 of poll $1 as a resume compares it (feeds.PageDigest): its
-- features, and SHA-256 over each one's id and content hashes, sorted: the
-- same features in another order are the same page.
SELECT count(*)::int, sha256(convert_to(coalesce(string_agg(feature_id || E'\t' || coalesce(encode(geom_hash, 'hex'), '')
	|| E'\t' || coalesce(encode(props_hash, 'hex'), ''), E'\n' ORDER BY feature_id COLLATE "C", geom_hash, props_hash), ''), 'UTF8'))
FROM {{staged}} WHERE poll_id = $1 AND page = $2

-- name: StagedFeatures
SELECT coalesce(sum(features), 0) FROM staged_pages WHERE poll_id = $1

-- name: DeleteStagedFeatures
DELETE FROM {{staged}} WHERE poll_id = $1

-- name: LockStagingAlone
-- truncateStaging's lock: staging to this transaction alone, or at once an
-- error (55P03) when any other session uses it.
LOCK TABLE {{staged}} IN ACCESS EXCLUSIVE MODE NOWAIT

-- name: OthersStaged
-- Whether a poll other than $1 has features staged: two probes of the key.
SELECT EXISTS (SELECT FROM {{staged}} WHERE poll_id < $1)
	OR EXISTS (SELECT FROM {{staged}} WHERE poll_id > $1)

-- name: TruncateStagedFeatures
TRUNCATE {{staged}}

-- name: DeleteStagedPages
DELETE FROM staged_pages WHERE poll_id = $1

-- name: ProbePlanner
-- EmptiedPages must probe the primary key once per page. Staging's
-- statistics are always stale (a poll's rows were just COPYed), and the
-- planner then scans all of the staging table for every page: 10 s for a
-- poll of 1M features in 200 pages, instead of milliseconds.
SET LOCAL enable_seqscan = off

-- name: ProbePlannerReset
SET LOCAL enable_seqscan TO DEFAULT

-- name: EmptiedPages
-- Counts poll $1's pages (below $2; -1: all) that recorded features when
-- they were staged but have no staged row left. A scalar subquery, not
-- NOT EXISTS: the planner cannot turn it into an anti-join over all of
-- staging, so each page costs one probe of the primary key. The pages
-- are read first, into an array (a MATERIALIZED CTE): on Citus staging
-- is on the jurisdiction's worker and staged_pages on the coordinator,
-- and Citus refuses a subquery of one correlated with the other.
WITH pages AS MATERIALIZED (
	SELECT coalesce(array_agg(p.page), '{}') AS pages FROM staged_pages p
	WHERE p.poll_id = $1 AND ($2 < 0 OR p.page < $2) AND p.features > 0
)
SELECT count(*)::int FROM pages, unnest(pages.pages) AS u(page)
WHERE (SELECT 1 FROM {{staged}} f WHERE f.poll_id = $1 AND f.page = u.page LIMIT 1) IS NULL

-- name: StagingLoss
-- Poll $1's pages (below $2; -1: all), the features they recorded, and the
-- rows left: a loss's report.
SELECT count(*)::int, coalesce(sum(p.features), 0)::bigint,
	(SELECT count(*) FROM {{staged}} f WHERE f.poll_id = $1 AND ($2 < 0 OR f.page < $2))
FROM staged_pages p
WHERE p.poll_id = $1 AND ($2 < 0 OR p.page < $2)

-- name: PollStaging
-- The schema whose staging table poll $1 stages into, and whether the
-- table exists. No row: no such poll.
SELECT s, to_regclass(format('%I.ingestd_staged', s)) IS NOT NULL
FROM (SELECT ingestd_poll_staging($1) AS s) x WHERE s IS NOT NULL
