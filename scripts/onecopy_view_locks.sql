-- onecopy_view_locks.sql — decision 0200: what a `features` view that is a
-- UNION ALL of :n layer tables costs a reader that names one feed (planning
-- time, locks held) and what regenerating it costs, beside a list
-- partitioned table of the same :n partitions (today's features).
--
--   psql "$DATABASE_URL" -X -v n=5000 -f scripts/onecopy_view_locks.sql
--   (-v skip_union=1 leaves out the UNION ALL view: minutes at n=5000)
--
-- Also the alternative: features as a view of the catalog of layers (one
-- row per layer) joined LATERAL to a function that reads one layer, so a
-- reader's predicate on jurisdiction and feed picks the layers first.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
DROP SCHEMA IF EXISTS onecopy_locks CASCADE; -- (a leftover of a run stopped midway: small n only)
CREATE SCHEMA onecopy_locks;
CREATE TABLE onecopy_locks.parted (jurisdiction text, feed text, feature_id text, v int,
    PRIMARY KEY (feature_id, jurisdiction, feed)) PARTITION BY LIST (feed);
SELECT format('CREATE TABLE onecopy_locks.l%s (feature_id text PRIMARY KEY, v int);
    CREATE TABLE onecopy_locks.p%s PARTITION OF onecopy_locks.parted FOR VALUES IN (%L);', i, i, 'f' || i)
FROM generate_series(1, :n) i \gexec
-- The catalog of layers and the lateral view.
CREATE TABLE onecopy_locks.layers (jurisdiction text, feed text, layer regclass, PRIMARY KEY (jurisdiction, feed));
INSERT INTO onecopy_locks.layers SELECT 'j', 'f' || i, format('onecopy_locks.l%s', i)::regclass FROM generate_series(1, :n) i;
ANALYZE onecopy_locks.layers;
CREATE FUNCTION onecopy_locks.layer_rows(l regclass) RETURNS TABLE (feature_id text, v int)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY EXECUTE format('SELECT feature_id, v FROM %s', l);
END
$$;
CREATE VIEW onecopy_locks.features_lateral AS
SELECT l.jurisdiction, l.feed, r.feature_id, r.v FROM onecopy_locks.layers l CROSS JOIN LATERAL onecopy_locks.layer_rows(l.layer) r;
BEGIN;
EXPLAIN (ANALYZE, SUMMARY, COSTS OFF, TIMING OFF) SELECT * FROM onecopy_locks.features_lateral WHERE jurisdiction = 'j' AND feed = 'f17' AND feature_id = 'x';
SELECT 'lateral view, one feed named' AS reader, count(*) AS locks_held FROM pg_locks WHERE pid = pg_backend_pid();
COMMIT;
BEGIN;
EXPLAIN (ANALYZE, SUMMARY, COSTS OFF, TIMING OFF) SELECT * FROM onecopy_locks.features_lateral WHERE jurisdiction = 'j' AND feed = 'f17' AND feature_id = 'x';
COMMIT;
\if :{?skip_union}
\else
-- The view, as the store would regenerate it: constants for jurisdiction
-- and feed, so that a reader's predicate on them leaves one branch.
SELECT 'CREATE OR REPLACE VIEW onecopy_locks.features AS ' || string_agg(
    format('SELECT %L::text AS jurisdiction, %L::text AS feed, feature_id, v FROM onecopy_locks.l%s', 'j', 'f' || i, i),
    ' UNION ALL ' ORDER BY i) AS viewsql FROM generate_series(1, :n) i \gset
\timing on
-- Regenerating the view (a layer created or dropped), three times.
:viewsql;
:viewsql;
:viewsql;
\timing off
-- A reader that names one feed: planning time and the locks it holds.
BEGIN;
EXPLAIN (ANALYZE, SUMMARY, COSTS OFF, TIMING OFF) SELECT * FROM onecopy_locks.features WHERE jurisdiction = 'j' AND feed = 'f17' AND feature_id = 'x';
SELECT 'view, one feed named' AS reader, count(*) AS locks_held FROM pg_locks WHERE pid = pg_backend_pid();
COMMIT;
BEGIN;
EXPLAIN (ANALYZE, SUMMARY, COSTS OFF, TIMING OFF) SELECT * FROM onecopy_locks.features WHERE jurisdiction = 'j' AND feed = 'f17' AND feature_id = 'x';
COMMIT;
BEGIN;
EXPLAIN (ANALYZE, SUMMARY, COSTS OFF, TIMING OFF) SELECT * FROM onecopy_locks.parted WHERE jurisdiction = 'j' AND feed = 'f17' AND feature_id = 'x';
SELECT 'partitioned, one feed named' AS reader, count(*) AS locks_held FROM pg_locks WHERE pid = pg_backend_pid();
COMMIT;
BEGIN;
EXPLAIN (ANALYZE, SUMMARY, COSTS OFF, TIMING OFF) SELECT * FROM onecopy_locks.parted WHERE jurisdiction = 'j' AND feed = 'f17' AND feature_id = 'x';
COMMIT;
\endif
-- A layer's own table, read by name (what the store's hot paths do).
BEGIN;
EXPLAIN (ANALYZE, SUMMARY, COSTS OFF, TIMING OFF) SELECT * FROM onecopy_locks.l17 WHERE feature_id = 'x';
SELECT 'layer table by name' AS reader, count(*) AS locks_held FROM pg_locks WHERE pid = pg_backend_pid();
COMMIT;
-- Dropped 100 tables a statement: one DROP SCHEMA … CASCADE would hold a
-- lock per relation (table, TOAST, indexes) at once in a shared lock table.
DROP VIEW IF EXISTS onecopy_locks.features;
DROP VIEW onecopy_locks.features_lateral;
SELECT format('DROP TABLE %s', string_agg(format('onecopy_locks.l%s, onecopy_locks.p%s', i, i), ', '))
FROM generate_series(1, :n) i GROUP BY (i - 1) / 100 \gexec
DROP SCHEMA onecopy_locks CASCADE;
