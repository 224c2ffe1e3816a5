-- The CRSs PostGIS knows (crs.go).

-- name: KnownSRID
-- Whether srid $1 is in spatial_ref_sys, so that ST_Transform takes
-- geometries in it to EPSG:4326 (an SRID past 998999 is reserved and never
-- there).
SELECT EXISTS (SELECT 1 FROM spatial_ref_sys WHERE srid = $1)
