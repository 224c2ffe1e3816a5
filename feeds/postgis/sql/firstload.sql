-- The planner settings and bookkeeping of a feed's first load into its
-- layer table (onecopy_apply.go).

-- name: BulkPlanner
-- Staging's statistics are stale (a new poll's rows are estimated at one),
-- and staging holds every other poll in flight and the dead rows of those
-- applied since. The poll's rows are read by a bitmap scan of the key's
-- poll_id prefix, their pages in order: not by an index scan (a random
-- visit per row, planned for one row), nor by a sequential scan (all of
-- staging for each first load, however small: with a fleet's polls in
-- flight, the reads grow with all of them; decision 0227). Zero setup
-- costs let the planner use workers whatever it thinks the poll's size is.
SET LOCAL enable_indexscan = off; SET LOCAL enable_seqscan = off;
SET LOCAL parallel_setup_cost = 0; SET LOCAL parallel_tuple_cost = 0

-- name: BulkPlannerReset
-- Back to the defaults for the key and index builds, which sort in
-- maintenance_work_mem (PostgreSQL's default spills a large layer to disk).
RESET enable_indexscan; RESET enable_seqscan;
RESET parallel_setup_cost; RESET parallel_tuple_cost;
SET LOCAL maintenance_work_mem = '256MB'

-- name: BulkPagesAndSplit
-- Poll $1's pages, and its ids staged on more than one page given the $2
-- distinct source ids loaded.
SELECT (SELECT count(*) FROM staged_pages WHERE poll_id = $1)::int,
	CASE WHEN {{OnePage}} THEN 0 ELSE {{SplitIDs}} - $2 END

-- name: FirstLoadLogged
-- The change log of a first load: one row, change 'loaded' (migration 28:
-- feature_changes_expanded lists the features it added).
INSERT INTO feature_changes (poll_id, jurisdiction, feed, feature_id, change, changed_at)
