-- A feed's own table, a partition of features by jurisdiction and feed
-- (partition.go). {{table}} and its kin are filled in by feedTable.sql.

-- name: LookupFeedTable
-- Names the feed's ($2, $3) partition and its jurisdiction's, tells
-- whether the feed's exists, and counts the features poll $1 staged and
-- those the feed held after its last apply, and whether that apply changed
-- anything.
SELECT ingestd_feed_partition($2, $3), ingestd_jurisdiction_partition($2),
	to_regclass(quote_ident(ingestd_feed_partition($2, $3))) IS NOT NULL,
	(SELECT coalesce(sum(features), 0) FROM staged_pages WHERE poll_id = $1),
	coalesce((SELECT feature_count FROM feed_status WHERE jurisdiction = $2 AND feed = $3), 0),
	coalesce((SELECT modified = 0 AND removed = 0 AND added IN (0, features) FROM polls
		WHERE jurisdiction = $2 AND feed = $3 AND status = 'succeeded' ORDER BY started_at DESC LIMIT 1), true)

-- name: CreateLoadTable
-- The feed's table for a large first load: indexes are built after it is
-- filled (BuildLoadKey, BuildLoadGeomIndex). Its pages are filled to 90 %
-- (FeedTableFillFactor), as every feed table's are: the room left lets an
-- apply rewrite a feature whose geometry did not change on its own page,
-- without new entries in the key and the GiST index (a HOT update). An
-- attribute edit is the common one; 500 such upserts take 5.5–7.1 ms
-- against 9.1–11.8 ms on full pages (BenchmarkAttributeEdits).
CREATE TABLE {{table}} (LIKE features INCLUDING DEFAULTS,
	CONSTRAINT {{table_bound}} CHECK (jurisdiction = {{jurisdiction}} AND feed = {{feed}}))
	WITH ({{FeedTableFillFactor}})

-- name: CreateIndexedLoadTable
-- The feed's table for a small first load, with its indexes.
CREATE TABLE {{table}} (LIKE features INCLUDING DEFAULTS INCLUDING INDEXES,
	CONSTRAINT {{table_bound}} CHECK (jurisdiction = {{jurisdiction}} AND feed = {{feed}}))
	WITH ({{FeedTableFillFactor}})

-- name: FeedTableFillFactor
-- The storage parameter of every feed's table (see CreateLoadTable).
fillfactor = 90

-- name: DropLoadTable
-- A held first load leaves no table.
DROP TABLE {{table}}

-- name: LoadIndexMemory
-- Index builds sort in maintenance_work_mem; PostgreSQL's default spills a
-- layer of a few hundred thousand features to disk.
SET LOCAL maintenance_work_mem = '256MB'

-- name: BuildLoadKey
ALTER TABLE {{table}} ADD CONSTRAINT {{table_pkey}} PRIMARY KEY (feature_id, jurisdiction, feed)

-- name: BuildLoadGeomIndex
CREATE INDEX {{table_geom}} ON {{table}} USING gist (geom)

-- name: AttachFeedTable
ALTER TABLE {{jurisdiction_table}} ATTACH PARTITION {{table}} FOR VALUES IN ({{feed}})

-- name: JurisdictionPartitionExists
SELECT to_regclass(quote_ident($1)) IS NOT NULL

-- name: CreateJurisdictionPartition
-- CREATE … (LIKE) + ATTACH rather than CREATE … PARTITION OF: the latter
-- takes an ACCESS EXCLUSIVE lock on features, which would wait for every
-- operator's query on it and block new ones meanwhile.
CREATE TABLE {{jurisdiction_table}} (LIKE features INCLUDING DEFAULTS) PARTITION BY LIST (feed)

-- name: AttachJurisdictionPartition
ALTER TABLE features ATTACH PARTITION {{jurisdiction_table}} FOR VALUES IN ({{jurisdiction}})
