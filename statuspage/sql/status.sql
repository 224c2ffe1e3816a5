-- The status page's reads. Every number on the page comes from one of these
-- statements over the views and tables an operator queries by hand
-- (feed_freshness, held_snapshots, dead_letter, breaker_state, polls,
-- features): the page keeps no state of its own.

-- name: feeds
-- The overview's feed table: every feed, in feed_freshness's own words.
SELECT jurisdiction, feed, status,
       extract(epoch FROM age)::float8 AS age_seconds,
       extract(epoch FROM expected_interval)::float8 AS interval_seconds,
       feature_count, coalesce(last_error, '') AS last_error,
       last_error_at, last_success_at, consecutive_failures,
       coalesce(origin, '') AS origin
FROM feed_freshness
ORDER BY jurisdiction, feed;

-- name: origins
-- Every origin a breaker has an opinion on, open ones first.
SELECT origin, state, opened_at, open_until, consecutive_opens, stuck,
       -- An override past its override_until has lapsed (as in feed_freshness).
       CASE WHEN override = 'none' OR override_until <= now() THEN 'none'
            ELSE override END AS override,
       override_until, coalesce(override_reason, '') AS override_reason,
       coalesce(override_by, '') AS override_by
FROM breaker_state
ORDER BY state = 'closed', origin;

-- name: dead_letters_by_status
SELECT status, count(*) FROM dead_letter GROUP BY status ORDER BY status;

-- name: held
SELECT jurisdiction, feed, poll_id, held_at, coalesce(reason, '') AS reason,
       previous_features, snapshot_features
FROM held_snapshots
ORDER BY held_at, jurisdiction, feed;

-- name: feed
-- One feed's row of feed_freshness, with its open dead letter and held
-- snapshot.
SELECT jurisdiction, feed, status,
       extract(epoch FROM age)::float8 AS age_seconds,
       extract(epoch FROM expected_interval)::float8 AS interval_seconds,
       feature_count, coalesce(last_error, '') AS last_error,
       last_error_at, last_success_at, consecutive_failures,
       coalesce(origin, '') AS origin,
       coalesce(kind, '') AS kind, coalesce(url, '') AS url,
       breaker_state, breaker_open_until, breaker_override,
       coalesce(breaker_override_by, '') AS breaker_override_by
FROM feed_freshness
WHERE jurisdiction = $1 AND feed = $2;

-- name: open_dead_letter
SELECT id, status, reason, retry_after, attempts, next_page,
       coalesce(last_error, '') AS last_error, url, created_at
FROM dead_letter
WHERE jurisdiction = $1 AND feed = $2 AND status IN ('pending', 'replaying');

-- name: feed_held
SELECT jurisdiction, feed, poll_id, held_at, coalesce(reason, '') AS reason,
       previous_features, snapshot_features
FROM held_snapshots
WHERE jurisdiction = $1 AND feed = $2;

-- name: polls
-- The feed's last polls, newest first (polls_feed_started_idx).
SELECT id, status, started_at,
       extract(epoch FROM (finished_at - started_at))::float8 AS duration_seconds,
       pages, features, added, modified, removed, coalesce(error, '') AS error,
       coalesce(fetch_mode, '') AS fetch_mode, drift,
       coalesce(crs, '') AS crs, coalesce(crs_identified_by, '') AS crs_identified_by
FROM polls
WHERE jurisdiction = $1 AND feed = $2
ORDER BY started_at DESC
LIMIT $3;

-- name: thumbnail
-- An SVG sketch of the feed's current geometries: a Bernoulli sample of
-- about $4 features ($3 percent of the feed's rows, from its layer table
-- only: TABLESAMPLE needs a table, features is a view), each part simplified to a 400th of the sample's extent and written
-- with the digits that extent needs, stopped once $5 bytes of path data are
-- out, so the thumbnail's size is bounded whatever the layer holds.
-- ST_AsSVG writes y downwards (-latitude), as SVG draws.
WITH sample AS MATERIALIZED (
    SELECT geom FROM ingestd_layer_sample($1, $2, $3, $4)
), extent AS (
    SELECT ST_Extent(geom) AS box FROM sample
), scale AS (
    SELECT box,
           greatest(ST_XMax(box) - ST_XMin(box), ST_YMax(box) - ST_YMin(box), 1e-9) AS size
    FROM extent
), parts AS (
    SELECT (ST_Dump(ST_Force2D(geom))).geom AS g FROM sample
), svg AS (
    SELECT ST_Dimension(p.g) = 0 AS dot,
           CASE WHEN ST_Dimension(p.g) = 0
                -- A point is a zero-length line, drawn as a dot by round caps.
                THEN format('M%s %sl0 0',
                            round(ST_X(p.g)::numeric, d.digits), round(-ST_Y(p.g)::numeric, d.digits))
                ELSE ST_AsSVG(ST_SimplifyPreserveTopology(p.g, s.size / 400), 0, d.digits)
           END AS path
    FROM parts p, scale s,
         LATERAL (SELECT greatest(0, ceil(-log(s.size / 2000)))::int AS digits) d
), bounded AS (
    SELECT dot, path, sum(length(path) + 1) OVER (ROWS UNBOUNDED PRECEDING) AS upto
    FROM svg
)
SELECT coalesce((SELECT string_agg(path, ' ') FROM bounded WHERE upto <= $5 AND NOT dot), '') AS paths,
       coalesce((SELECT string_agg(path, ' ') FROM bounded WHERE upto <= $5 AND dot), '') AS dots,
       (SELECT count(*) FROM sample) AS sampled,
       ST_XMin(box) AS minx, ST_YMin(box) AS miny, ST_XMax(box) AS maxx, ST_YMax(box) AS maxy
FROM extent;

-- name: metric_feeds
-- Feeds by feed_freshness status, cluster-wide, for /metrics.
SELECT status, count(*) FROM feed_freshness GROUP BY status;

-- name: metric_origins
SELECT origin, (stuck AND state <> 'closed') AS stuck_open FROM breaker_state;
