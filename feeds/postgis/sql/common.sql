-- Common layers (common.go): a feed's conformed rows in schema common.
-- {{layer}} is the common layer's table, {{table}} the feed's own table;
-- the other placeholders are the layer's column lists and geometry
-- expression (commonTable.sql), built from quoted identifiers.

-- name: CommonFeed
-- The layer and conform digest the feed's conformed rows were made with.
SELECT layer, digest FROM common_feeds WHERE jurisdiction = $1 AND feed = $2

-- name: RecordCommonFeed
INSERT INTO common_feeds (jurisdiction, feed, layer, digest, conformed_at)
VALUES ($1, $2, $3, $4, now())
ON CONFLICT (jurisdiction, feed) DO UPDATE
SET layer = excluded.layer, digest = excluded.digest, conformed_at = excluded.conformed_at

-- name: ForgetCommonFeed
DELETE FROM common_feeds WHERE jurisdiction = $1 AND feed = $2

-- name: StaleCommonFeed
-- A snapshot applied without the feed's conform at hand (an operator
-- accepted a held one): its next apply conforms the feed's rows in full.
UPDATE common_feeds SET digest = '' WHERE jurisdiction = $1 AND feed = $2

-- name: CommonFeedsOf
-- The common layers of feeds ($1, $2), for a prune.
SELECT jurisdiction, feed, layer FROM common_feeds
WHERE (jurisdiction, feed) IN (SELECT * FROM unnest($1::text[], $2::text[]))

-- name: CreateCommonSchema
CREATE SCHEMA IF NOT EXISTS common

-- name: CreateCommonLayer
-- The feature's own geometry type stays in geom's typmod so that QGIS
-- lists the table as a layer of that type without asking.
CREATE TABLE IF NOT EXISTS {{layer}} (
	jurisdiction text NOT NULL,
	feed text NOT NULL,
	feature_id text NOT NULL,
	{{columns}},
	geom geometry({{geomtype}}, 4326),
	PRIMARY KEY (jurisdiction, feed, feature_id)
)

-- name: IndexCommonLayer
CREATE INDEX IF NOT EXISTS {{index}} ON {{layer}} USING gist (geom)

-- name: DeleteCommonRows
DELETE FROM {{layer}} WHERE jurisdiction = $1 AND feed = $2

-- name: DeleteRemovedCommonRows
-- The rows of the features poll $3 removed. The ids are an array so that
-- the layer is searched by its key whatever its statistics say (a layer
-- just filled has none, and a join then scans every row of the feed).
DELETE FROM {{layer}} t
WHERE t.jurisdiction = $1 AND t.feed = $2 AND t.feature_id = ANY (ARRAY(
	SELECT c.feature_id FROM feature_changes c
	WHERE c.poll_id = $3 AND c.jurisdiction = $1 AND c.feed = $2 AND c.change = 'removed'))

-- name: ChangedFeaturesPage
-- The features poll $3 added or modified, after feature id $4, in id
-- order, $5 at most: a page of what to conform again.
SELECT c.feature_id, f.properties::text, ST_AsEWKB({{geom}})
FROM feature_changes c
JOIN {{table}} f ON f.feature_id = c.feature_id
WHERE c.poll_id = $3 AND c.jurisdiction = $1 AND c.feed = $2 AND c.change IN ('added', 'modified')
	AND c.feature_id > $4
ORDER BY c.feature_id
LIMIT $5

-- name: DeclareAllFeatures
-- Every feature of the feed with its layer geometry, in no order: one
-- scan, fetched a page at a time to be conformed. Read in text: the
-- geometry arrives as the hex EWKB that CopyCommonRows reads.
DECLARE {{cursor}} NO SCROLL CURSOR FOR SELECT f.feature_id, f.properties::text, {{geom}} FROM {{table}} f

-- name: CopyCommonRows
-- A page of the feed's conformed rows, its rows of the layer deleted
-- just before: no conflict to resolve, and COPY inserts a page at a time.
COPY {{layer}} (jurisdiction, feed, feature_id, {{names}}, geom) FROM STDIN

-- name: UpsertCommonRows
-- Conformed values arrive as one text array per column ("" is no value:
-- NULL), the layer's geometries (the page's query made them) as EWKB in
-- $4: no join with the feed's table, which would read all of it per page.
-- A row whose values and geometry stay (the feature changed in a property
-- the conform does not read) is not rewritten: no new version of it.
INSERT INTO {{layer}} AS t (jurisdiction, feed, feature_id, {{names}}, geom)
SELECT $1, $2, u.id, {{values}}, ST_GeomFromEWKB(u.g)
FROM unnest($3::text[], $4::bytea[], {{arrays}}) AS u (id, g, {{aliases}})
ON CONFLICT (jurisdiction, feed, feature_id) DO UPDATE SET {{sets}}, geom = excluded.geom, changed_at = now()
WHERE ({{olds}}, t.geom) IS DISTINCT FROM ({{news}}, excluded.geom)
