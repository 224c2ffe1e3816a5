-- feature_changes: index by poll instead of the primary key (poll_id,
-- feature_id). Within one apply every row has the same poll_id, jurisdiction,
-- feed and changed_at, so both remaining indexes take each row at the same
-- leaf (B-tree deduplication keeps them small); the primary key put every
-- row at a random place by feature_id, which made the change log of a
-- first load cost about twice as much (scripts/bench.sh gdal measures a
-- first load). Uniqueness per poll holds by construction: the
-- apply writes a snapshot that holds each id once, and a removed id is not
-- in it.

-- +goose Up
ALTER TABLE feature_changes DROP CONSTRAINT feature_changes_pkey;
CREATE INDEX feature_changes_poll_idx ON feature_changes (poll_id);

-- +goose Down
DROP INDEX feature_changes_poll_idx;
ALTER TABLE feature_changes ADD PRIMARY KEY (poll_id, feature_id);
