-- A file's CRS (kind file): the CRS a poll read its layer in, and how
-- ingestd identified it. A Shapefile's .prj (and a GeoPackage's or
-- FlatGeobuf's WKT without a code) rarely carries an EPSG code: package crs
-- identifies it by its name among PROJ's EPSG and ESRI names, or by its
-- projection, parameters, datum and unit; an operator who wonders where a
-- layer landed sees which way it was.

-- +goose Up
ALTER TABLE ingestd.polls ADD COLUMN crs text;
ALTER TABLE ingestd.polls ADD COLUMN crs_identified_by text
    CHECK (crs_identified_by IN ('authority', 'name', 'parameters', 'setting'));
COMMENT ON COLUMN ingestd.polls.crs IS 'Kind file, succeeded polls: the CRS the layer was read in (EPSG:2263, ESRI:103600), transformed to EPSG:4326 at the apply; NULL otherwise.';
COMMENT ON COLUMN ingestd.polls.crs_identified_by IS 'How crs was identified: authority (the file''s own EPSG code), name (the .prj''s CRS name among PROJ''s EPSG and ESRI names), parameters (its projection, parameters, datum and unit), setting (the feed''s crs:).';

-- +goose Down
ALTER TABLE ingestd.polls DROP COLUMN crs_identified_by;
ALTER TABLE ingestd.polls DROP COLUMN crs;
