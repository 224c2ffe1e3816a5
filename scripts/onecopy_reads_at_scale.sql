-- onecopy_reads_at_scale.sql — what the reads of `features` and of the
-- history and change-feed functions cost at :n feeds once each feed's
-- features are its layer table (migration 43, decision 0201): planning,
-- execution, relation locks held, and 7 runs of a statement prepared on the
-- connection (PostgreSQL plans generically from the sixth).
--
--   psql "$URL_OF_A_MIGRATED_SCRATCH_DATABASE" -X -v n=5000 -f scripts/onecopy_reads_at_scale.sql
--
-- Builds :n layers of 20 points each (a key, a GiST index, two typed
-- columns, ingestd's bookkeeping), 100 feeds a jurisdiction schema, with
-- their feed_layers, feed_columns, feed_status rows and a first load's
-- 'loaded' change, in schemas scale_j1 … (dropped at the end, 100 layers a
-- statement: one DROP … CASCADE would hold a lock per relation at once).
-- Run it in a scratch database: it writes ingestd's tables.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SET search_path = ingestd, public;
SELECT format('CREATE SCHEMA scale_j%s', j) FROM generate_series(1, (:n + 99) / 100) j \gexec
SELECT format($$CREATE TABLE scale_j%1$s.f%2$s (feature_id text PRIMARY KEY, name text, n bigint, geom geometry(Point, 4326),
        first_seen_at timestamptz, changed_at timestamptz, ingestd_poll bigint NOT NULL, ingestd_hash bytea,
        ingestd_rest jsonb, ingestd_absent text[], ingestd_geom_single boolean, ingestd_geom geometry);
    CREATE INDEX ON scale_j%1$s.f%2$s USING gist (geom);
    INSERT INTO scale_j%1$s.f%2$s SELECT 'id' || k, 'name ' || k, k, ST_SetSRID(ST_MakePoint(k, %2$s), 4326), now(), now(), %2$s,
        substring(sha256(convert_to(k::text, 'UTF8')) FOR 16), NULL, NULL, NULL, NULL FROM generate_series(1, 20) k$$,
    (i - 1) / 100 + 1, i)
FROM generate_series(1, :n) i \gexec
INSERT INTO feed_layers (jurisdiction, feed, layer, select_sql)
SELECT 'scale_j' || ((i - 1) / 100 + 1), 'f' || i, format('scale_j%s.f%s', (i - 1) / 100 + 1, i), NULL FROM generate_series(1, :n) i;
INSERT INTO feed_columns (jurisdiction, feed, name, ordinal, view_column, type, type_source, first_seen_at, last_seen_at, first_poll_id, last_poll_id)
SELECT 'scale_j' || ((i - 1) / 100 + 1), 'f' || i, c.name, c.o, c.name, c.type, 'inferred', now(), now(), i, i
FROM generate_series(1, :n) i, (VALUES ('name', 1, 'text'), ('n', 2, 'bigint')) c(name, o, type);
INSERT INTO feed_status (jurisdiction, feed, last_success_at) SELECT 'scale_j' || ((i - 1) / 100 + 1), 'f' || i, now() FROM generate_series(1, :n) i;
INSERT INTO feature_changes (poll_id, jurisdiction, feed, feature_id, change, changed_at)
SELECT i, 'scale_j' || ((i - 1) / 100 + 1), 'f' || i, '', 'loaded', now() FROM generate_series(1, :n) i;
ANALYZE feed_layers, feed_columns, feed_status, feature_changes;
\set j '''scale_j1'''
\set f '''f17'''

-- Each reader once in a transaction: its plan's times and the locks held.
BEGIN;
EXPLAIN (ANALYZE, SUMMARY, COSTS OFF, TIMING OFF) SELECT * FROM features WHERE jurisdiction = :j AND feed = :f AND feature_id = 'id3';
SELECT 'features, one feed and feature named' AS reader, count(*) AS locks_held FROM pg_locks WHERE pid = pg_backend_pid();
COMMIT;
BEGIN;
EXPLAIN (ANALYZE, SUMMARY, COSTS OFF, TIMING OFF) SELECT * FROM features_seen WHERE jurisdiction = :j AND feed = :f;
SELECT 'features_seen, one feed named' AS reader, count(*) AS locks_held FROM pg_locks WHERE pid = pg_backend_pid();
COMMIT;
BEGIN;
EXPLAIN (ANALYZE, SUMMARY, COSTS OFF, TIMING OFF) SELECT * FROM feature_changes_expanded WHERE jurisdiction = :j AND feed = :f;
SELECT 'feature_changes_expanded, one feed named' AS reader, count(*) AS locks_held FROM pg_locks WHERE pid = pg_backend_pid();
COMMIT;
BEGIN;
EXPLAIN (ANALYZE, SUMMARY, COSTS OFF, TIMING OFF) SELECT * FROM ingestd_changes_since(:j, :f, 0);
SELECT 'ingestd_changes_since' AS reader, count(*) AS locks_held FROM pg_locks WHERE pid = pg_backend_pid();
COMMIT;
BEGIN;
EXPLAIN (ANALYZE, SUMMARY, COSTS OFF, TIMING OFF) SELECT * FROM ingestd_feature_history(:j, :f, 'id3');
SELECT 'ingestd_feature_history' AS reader, count(*) AS locks_held FROM pg_locks WHERE pid = pg_backend_pid();
COMMIT;
BEGIN;
EXPLAIN (ANALYZE, SUMMARY, COSTS OFF, TIMING OFF) SELECT * FROM ingestd_layer_as_of(:j, :f, now());
SELECT 'ingestd_layer_as_of' AS reader, count(*) AS locks_held FROM pg_locks WHERE pid = pg_backend_pid();
COMMIT;

-- Prepared on the connection, 7 runs each (the last two generic plans).
PREPARE by_feed(text, text, text) AS SELECT * FROM features WHERE jurisdiction = $1 AND feed = $2 AND feature_id = $3;
PREPARE changes(text, text) AS SELECT * FROM feature_changes_expanded WHERE jurisdiction = $1 AND feed = $2;
\timing on
SELECT 'features prepared, 7 runs' AS reader;
EXECUTE by_feed(:j, :f, 'id3') \g /dev/null
EXECUTE by_feed(:j, :f, 'id3') \g /dev/null
EXECUTE by_feed(:j, :f, 'id3') \g /dev/null
EXECUTE by_feed(:j, :f, 'id3') \g /dev/null
EXECUTE by_feed(:j, :f, 'id3') \g /dev/null
EXECUTE by_feed(:j, :f, 'id3') \g /dev/null
EXECUTE by_feed(:j, :f, 'id3') \g /dev/null
SELECT 'feature_changes_expanded prepared, 7 runs' AS reader;
EXECUTE changes(:j, :f) \g /dev/null
EXECUTE changes(:j, :f) \g /dev/null
EXECUTE changes(:j, :f) \g /dev/null
EXECUTE changes(:j, :f) \g /dev/null
EXECUTE changes(:j, :f) \g /dev/null
EXECUTE changes(:j, :f) \g /dev/null
EXECUTE changes(:j, :f) \g /dev/null
SELECT 'ingestd_feature_history, 7 runs' AS reader;
SELECT count(*) FROM ingestd_feature_history(:j, :f, 'id3') \g /dev/null
SELECT count(*) FROM ingestd_feature_history(:j, :f, 'id3') \g /dev/null
SELECT count(*) FROM ingestd_feature_history(:j, :f, 'id3') \g /dev/null
SELECT count(*) FROM ingestd_feature_history(:j, :f, 'id3') \g /dev/null
SELECT count(*) FROM ingestd_feature_history(:j, :f, 'id3') \g /dev/null
SELECT count(*) FROM ingestd_feature_history(:j, :f, 'id3') \g /dev/null
SELECT count(*) FROM ingestd_feature_history(:j, :f, 'id3') \g /dev/null
\timing off

-- A reader that names no feed: every layer, and a lock on each.
BEGIN;
\timing on
SELECT count(*) AS every_feature FROM features;
\timing off
SELECT 'features, no feed named' AS reader, count(*) AS locks_held FROM pg_locks WHERE pid = pg_backend_pid();
COMMIT;

DELETE FROM feature_changes WHERE jurisdiction LIKE 'scale\_j%';
DELETE FROM feed_status WHERE jurisdiction LIKE 'scale\_j%';
DELETE FROM feed_columns WHERE jurisdiction LIKE 'scale\_j%';
DELETE FROM feed_layers WHERE jurisdiction LIKE 'scale\_j%';
SELECT format('DROP TABLE %s', string_agg(format('scale_j%s.f%s', (i - 1) / 100 + 1, i), ', '))
FROM generate_series(1, :n) i GROUP BY (i - 1) / 100 \gexec
SELECT format('DROP SCHEMA scale_j%s', j) FROM generate_series(1, (:n + 99) / 100) j \gexec
