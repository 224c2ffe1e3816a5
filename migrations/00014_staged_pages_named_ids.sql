-- Each staged page records how many distinct feature ids (from the source,
-- not content hashes) it holds. The apply compares their sum with the
-- snapshot's distinct ids to find an id staged on two pages (an unstable
-- paging order) without grouping every staged row a second time, a GROUP BY
-- that was a large part of an apply's time (BenchmarkStageAndApply in
-- feeds/postgis measures a poll's stage and apply).

-- +goose Up
ALTER TABLE staged_pages ADD COLUMN named_ids integer;
COMMENT ON COLUMN staged_pages.named_ids IS 'Distinct non-empty feature ids on the page, counted by ingestd while staging; NULL for a page staged before this column existed (the apply then groups the staged rows).';

-- +goose Down
ALTER TABLE staged_pages DROP COLUMN named_ids;
