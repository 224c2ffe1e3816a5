-- Repair keeps the family; typed views record a declared type the values
-- contradict.
--
-- 1. ingestd_repair_geometry: the one repair of an invalid geometry, for
--    every kind (feeds/postgis apply.sql and firstload.sql call it).
--    ST_MakeValid alone turns a self-intersecting polygon into
--    GEOMETRYCOLLECTION(POLYGON …, LINESTRING …), which a MultiPolygon typed
--    view shows as NULL: 11 of the 3,231 US Census counties at 1:10 m
--    (npm us-atlas). The repair keeps the source geometry's family: the
--    polygonal part of a polygon, the lineal part of a line, the puntal
--    part of points (a single type stays single when one part is left,
--    else becomes the multi type). With nothing of its family left it
--    answers NULL: the geometry is lost, stored as one that could not be
--    parsed. A GeometryCollection has no one family: ST_MakeValid's answer.
-- 2. ingestd_as_geometry (the typed view's cast) also takes a multi
--    geometry of one part in a view of the single type.
-- 3. The stored geometries an earlier repair left as collections in a feed
--    whose view has one family are cut to their family's part now (their
--    source is unchanged, so no poll would rewrite them).
-- 4. feed_columns.declared_type: the type the protocol declared when the
--    values proved a narrower one (integers declared number, ISO dates
--    declared string) and the column took that (schema.Build).

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION ingestd_repair_geometry(g geometry) RETURNS geometry
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE
        WHEN r.family = 0 THEN r.valid
        WHEN ST_IsEmpty(r.part) THEN NULL
        WHEN r.single AND ST_NumGeometries(r.part) = 1 THEN ST_GeometryN(r.part, 1)
        ELSE ST_Multi(r.part)
    END
    FROM (SELECT v.valid, v.family, v.single,
            CASE WHEN v.family > 0 THEN ST_CollectionExtract(v.valid, v.family) END AS part
        FROM (SELECT ST_MakeValid(g) AS valid,
                CASE GeometryType(g)
                    WHEN 'POINT' THEN 1 WHEN 'MULTIPOINT' THEN 1
                    WHEN 'LINESTRING' THEN 2 WHEN 'MULTILINESTRING' THEN 2
                    WHEN 'POLYGON' THEN 3 WHEN 'MULTIPOLYGON' THEN 3
                    ELSE 0 END AS family,
                GeometryType(g) IN ('POINT', 'LINESTRING', 'POLYGON') AS single) v) r
$$;
-- +goose StatementEnd
COMMENT ON FUNCTION ingestd_repair_geometry(geometry) IS 'The repair of an invalid geometry: ST_MakeValid''s answer cut to the source''s family (polygonal, lineal, puntal part), NULL when nothing of it is left; a GeometryCollection as ST_MakeValid repairs it.';

-- CREATE OR REPLACE: the feeds' typed views call it.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_as_geometry(g geometry, geometry_type text) RETURNS geometry
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN geometry_type LIKE 'MULTI%' AND GeometryType(ST_Multi(g)) = geometry_type THEN ST_Multi(g)
        WHEN GeometryType(g) = geometry_type THEN g
        WHEN GeometryType(g) = 'MULTI' || geometry_type AND ST_NumGeometries(g) = 1 THEN ST_GeometryN(g, 1)
    END
$$;
-- +goose StatementEnd

UPDATE features f SET geom = CASE
        WHEN ST_IsEmpty(ST_CollectionExtract(f.geom, CASE WHEN s.geometry_type LIKE '%Polygon' THEN 3
            WHEN s.geometry_type LIKE '%LineString' THEN 2 ELSE 1 END)) THEN NULL
        ELSE ST_Multi(ST_CollectionExtract(f.geom, CASE WHEN s.geometry_type LIKE '%Polygon' THEN 3
            WHEN s.geometry_type LIKE '%LineString' THEN 2 ELSE 1 END))
    END
FROM feed_schemas s
WHERE s.jurisdiction = f.jurisdiction AND s.feed = f.feed
  AND s.geometry_type IN ('Point', 'MultiPoint', 'LineString', 'MultiLineString', 'Polygon', 'MultiPolygon')
  AND GeometryType(f.geom) = 'GEOMETRYCOLLECTION';

ALTER TABLE feed_columns ADD COLUMN declared_type text
    CHECK (declared_type IN ('text', 'bigint', 'numeric', 'double precision', 'boolean', 'date', 'timestamptz', 'jsonb'));
COMMENT ON COLUMN feed_columns.declared_type IS 'The type the protocol declared when every value seen proved a narrower one (integers declared number: bigint; ISO dates declared string: date or timestamptz), which the column took (type_source inferred); NULL when the column''s type is the declared one, or none was declared.';

CREATE OR REPLACE VIEW feed_columns_seen AS
SELECT c.jurisdiction, c.feed, c.name, c.ordinal, c.view_column, c.type, c.type_source, c.non_null, c.unconverted,
    c.first_seen_at,
    CASE WHEN c.removed_at IS NULL THEN greatest(c.last_seen_at, s.last_success_at) ELSE c.last_seen_at END AS last_seen_at,
    c.removed_at, c.declared_type
FROM feed_columns c
LEFT JOIN feed_status s ON s.jurisdiction = c.jurisdiction AND s.feed = c.feed;

-- +goose Down
-- The geometries cut to their family stay cut (they are valid either way).
DROP VIEW feed_columns_seen;
CREATE VIEW feed_columns_seen AS
SELECT c.jurisdiction, c.feed, c.name, c.ordinal, c.view_column, c.type, c.type_source, c.non_null, c.unconverted,
    c.first_seen_at,
    CASE WHEN c.removed_at IS NULL THEN greatest(c.last_seen_at, s.last_success_at) ELSE c.last_seen_at END AS last_seen_at,
    c.removed_at
FROM feed_columns c
LEFT JOIN feed_status s ON s.jurisdiction = c.jurisdiction AND s.feed = c.feed;
COMMENT ON VIEW feed_columns_seen IS 'feed_columns with last_seen_at of current columns as the feed''s last success (a column a poll did not change is not rewritten).';
ALTER TABLE feed_columns DROP COLUMN declared_type;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_as_geometry(g geometry, geometry_type text) RETURNS geometry
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN geometry_type LIKE 'MULTI%' AND GeometryType(ST_Multi(g)) = geometry_type THEN ST_Multi(g)
        WHEN GeometryType(g) = geometry_type THEN g
    END
$$;
-- +goose StatementEnd
DROP FUNCTION ingestd_repair_geometry(geometry);
