-- Every feed's table leaves a tenth of each page free (fillfactor 90), as
-- the store now creates them (sql/partition.sql, CreateLoadTable).
--
-- An apply upserts a changed feature over its stored row. On a full page
-- the new version goes to another page, with new entries in the key and
-- the GiST index; with room on its page, a feature whose geometry did not
-- change (an attribute edit, the common one) is rewritten there without
-- touching either index (a HOT update): such upserts are faster and nearly
-- all HOT on pages with room, a minority on full pages
-- (BenchmarkAttributeEdits in feeds/postgis measures both).
--
-- Setting it rewrites nothing: pages written from now on keep the room,
-- and a full page gains it as its rows are updated and the dead versions
-- pruned.

-- +goose Up
SELECT set_config('search_path', 'ingestd, public', true);
-- +goose StatementBegin
DO $$
DECLARE
    t regclass;
BEGIN
    FOR t IN SELECT relid FROM pg_partition_tree('ingestd.features') WHERE isleaf LOOP
        EXECUTE format('ALTER TABLE %s SET (fillfactor = 90)', t);
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
SELECT set_config('search_path', 'ingestd, public', true);
-- +goose StatementBegin
DO $$
DECLARE
    t regclass;
BEGIN
    FOR t IN SELECT relid FROM pg_partition_tree('ingestd.features') WHERE isleaf LOOP
        EXECUTE format('ALTER TABLE %s RESET (fillfactor)', t);
    END LOOP;
END
$$;
-- +goose StatementEnd
