-- Staged properties are kept as ingestd's normalised jsonb text (text), with
-- props_hash computed by ingestd, instead of as jsonb with a generated hash.
-- Parsing jsonb was a large part of PostgreSQL's work on every poll,
-- changed or not (scripts/bench.sh gdal measures a poll); now properties are
-- parsed only when a feature is written (cast to jsonb by the apply). The
-- hash is unchanged: SHA-256 of jsonb_send(properties), which ingestd
-- reproduces (feeds/postgis/jsonb.go, tested against PostgreSQL's output).

-- +goose Up
ALTER TABLE staged_features ADD COLUMN props_hash_text bytea;
UPDATE staged_features SET props_hash_text = props_hash;
ALTER TABLE staged_features DROP COLUMN props_hash;
ALTER TABLE staged_features RENAME COLUMN props_hash_text TO props_hash;
ALTER TABLE staged_features ALTER COLUMN props_hash SET NOT NULL;
ALTER TABLE staged_features ALTER COLUMN properties TYPE text USING properties::text;
COMMENT ON COLUMN staged_features.properties IS 'The properties as jsonb text (normalised by ingestd: what jsonb_out prints); NULL for none. Cast to jsonb only for features the apply writes.';
COMMENT ON COLUMN staged_features.props_hash IS 'SHA-256 of jsonb_send(properties::jsonb) (the normalised jsonb text), computed by ingestd; SHA-256 of nothing for no properties.';

-- +goose Down
ALTER TABLE staged_features ALTER COLUMN properties TYPE jsonb USING properties::jsonb;
ALTER TABLE staged_features DROP COLUMN props_hash;
ALTER TABLE staged_features ADD COLUMN props_hash bytea
    GENERATED ALWAYS AS (sha256(coalesce(jsonb_send(properties), '\x'::bytea))) STORED;
COMMENT ON COLUMN staged_features.props_hash IS 'SHA-256 of jsonb_send(properties): the normalised jsonb text, so key order does not matter.';
