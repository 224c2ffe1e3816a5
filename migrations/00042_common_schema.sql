-- Schema common, which holds the common layers (common.addresses, …), is
-- made by the migrations, like ingestd, rather than by the first conform
-- into a common layer. Made here, it is made once, before any poll, and
-- under the migration runner's session, which turns Citus's schema-based
-- sharding off: on Citus, common is a plain schema on the coordinator,
-- beside ingestd's tables that its conform reads (decision 0219), and two
-- first conforms cannot both create it.

-- +goose Up
CREATE SCHEMA IF NOT EXISTS common;
COMMENT ON SCHEMA common IS 'The common layers: one table per layer (common.addresses, …), conformed from the feeds of many jurisdictions.';

-- +goose Down
-- The layers in common hold data that no migration made: the schema goes
-- only when it is empty.
-- +goose StatementBegin
DO $$
BEGIN
    IF to_regnamespace('common') IS NOT NULL
       AND NOT EXISTS (SELECT FROM pg_class WHERE relnamespace = to_regnamespace('common')) THEN
        DROP SCHEMA common;
    END IF;
END $$;
-- +goose StatementEnd
