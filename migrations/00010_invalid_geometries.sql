-- Invalid geometries are counted per poll and repaired (or skipped), never
-- allowed to abort a layer. A geometry PostgreSQL cannot even parse (a ring
-- of three points, a ring that does not close) is caught while staging and
-- staged without its geometry.

-- +goose Up
ALTER TABLE staged_features ADD COLUMN geom_broken boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN staged_features.geom_broken IS 'The source geometry could not be stored as it is (too few points, an unclosed ring, a non-finite coordinate); geom_ewkb is NULL.';
ALTER TABLE polls ADD COLUMN invalid_geometries integer;
COMMENT ON COLUMN polls.invalid_geometries IS 'Added or modified features whose geometry was invalid: repaired with ST_MakeValid (NULL when it could not be parsed at all), or skipped, per the feed''s invalid_geometry.';

-- +goose Down
ALTER TABLE polls DROP COLUMN invalid_geometries;
ALTER TABLE staged_features DROP COLUMN geom_broken;
