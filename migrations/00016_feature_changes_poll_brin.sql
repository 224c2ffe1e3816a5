-- feature_changes: the index by poll becomes a BRIN index.
--
-- Why: the change log is append-only and poll ids grow with time, so the
-- rows of one poll sit in a few consecutive block ranges, which a BRIN
-- index (a min/max per 128 pages) finds, for a few kilobytes. The B-tree it
-- replaces took every written row: about a quarter of the change log's cost
-- (BenchmarkFirstLoadWrites in feeds/postgis measures it), paid by every
-- first load in full. Lookups by poll are an operator's occasional query.

-- +goose Up
DROP INDEX feature_changes_poll_idx;
CREATE INDEX feature_changes_poll_brin ON feature_changes USING brin (poll_id) WITH (autosummarize = on);

-- +goose Down
DROP INDEX feature_changes_poll_brin;
CREATE INDEX feature_changes_poll_idx ON feature_changes (poll_id);
