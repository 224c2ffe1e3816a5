-- Typed layers: a feed's schema and its drift (schema.go).
-- {{table}} is the feed's table (feedTable.sql).

-- name: PollProfiles
-- Poll $1's page profiles in page order; a NULL is a page staged before
-- version 20 (the schema is then left as it is).
SELECT profile FROM staged_pages WHERE poll_id = $1 ORDER BY page

-- name: StoredColumns
-- The feed's current columns in their order.
SELECT name, type, type_source, non_null, unconverted, coalesce(declared_type, '') FROM feed_columns
WHERE jurisdiction = $1 AND feed = $2 AND removed_at IS NULL
ORDER BY ordinal

-- name: StoredSchema
-- The feed's schema row: its features, the types its stored text values
-- were typed by, the view's signature, whether the view exists, and the
-- applied snapshot's profile (a delta's schema starts from it).
SELECT s.features, s.typed_values, s.signature, to_regclass(ingestd_feed_view($1, $2)) IS NOT NULL, s.profile
FROM feed_schemas s WHERE s.jurisdiction = $1 AND s.feed = $2

-- name: HeldDeclared
-- What the protocol declared when poll $1 was held.
SELECT declared, typed_text FROM poll_declared WHERE poll_id = $1

-- name: SaveHeldDeclared
INSERT INTO poll_declared (poll_id, declared, typed_text) VALUES ($1, $2, $3)
ON CONFLICT (poll_id) DO UPDATE SET declared = excluded.declared, typed_text = excluded.typed_text

-- name: InsertSchemaChanges
-- Poll $1's schema changes of feed ($2, $3), with what was done ($4).
INSERT INTO schema_changes (poll_id, jurisdiction, feed, column_name, change, old_type, new_type,
		old_non_null_share, new_non_null_share, action)
SELECT $1, $2, $3, c.col, c.change, nullif(c.old_type, ''), nullif(c.new_type, ''), c.old_share, c.new_share, $4
FROM unnest($5::text[], $6::text[], $7::text[], $8::text[], $9::float8[], $10::float8[])
	AS c(col, change, old_type, new_type, old_share, new_share)
ON CONFLICT (poll_id, column_name, change) DO UPDATE SET action = excluded.action, detected_at = now()

-- name: SupersedeSchemaChanges
-- The feed's held changes of older polls than $3: a later snapshot is the
-- one an operator decides on (supersedeHeld).
UPDATE schema_changes SET action = 'superseded'
WHERE jurisdiction = $1 AND feed = $2 AND action = 'held' AND poll_id <> $3

-- name: RejectSchemaChanges
UPDATE schema_changes SET action = 'rejected' WHERE poll_id = $1 AND action = 'held'

-- name: UpsertColumns
-- The snapshot's columns ($4 names, in order) of feed ($1, $2), seen by
-- poll $3; $10 the declared types the values contradicted ('' for none).
INSERT INTO feed_columns AS fc (jurisdiction, feed, name, ordinal, view_column, type, type_source,
		non_null, unconverted, declared_type, first_seen_at, last_seen_at, first_poll_id, last_poll_id)
SELECT $1, $2, c.name, c.ord::int, c.view_column, c.type, c.source, c.non_null, c.unconverted, nullif(c.declared, ''),
	now(), now(), $3, $3
FROM unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[], $9::bigint[], $10::text[]) WITH ORDINALITY
	AS c(name, view_column, type, source, non_null, unconverted, declared, ord)
ON CONFLICT (jurisdiction, feed, name) DO UPDATE SET ordinal = excluded.ordinal, view_column = excluded.view_column,
	type = excluded.type, type_source = excluded.type_source, non_null = excluded.non_null,
	unconverted = excluded.unconverted, declared_type = excluded.declared_type,
	last_seen_at = excluded.last_seen_at, last_poll_id = excluded.last_poll_id, removed_at = NULL
-- A column the poll did not change is not written (no dead tuple per
-- column per poll): its last_seen_at is then the feed's last success
-- (view feed_columns_seen).
WHERE (fc.ordinal, fc.view_column, fc.type, fc.type_source, fc.non_null, fc.unconverted, fc.declared_type, fc.removed_at)
	IS DISTINCT FROM (excluded.ordinal, excluded.view_column, excluded.type, excluded.type_source,
		excluded.non_null, excluded.unconverted, excluded.declared_type, NULL::timestamptz)

-- name: RemoveColumns
-- The feed's columns the snapshot ($3) no longer has.
UPDATE feed_columns SET removed_at = now()
WHERE jurisdiction = $1 AND feed = $2 AND removed_at IS NULL AND name <> ALL($3::text[])

-- name: UpsertFeedSchema
INSERT INTO feed_schemas (jurisdiction, feed, view_name, geometry_type, features, declared_by, typed_values, signature, poll_id, profile)
VALUES ($1, $2, ingestd_feed_view($1, $2), nullif($3, ''), $4, nullif($5, ''), $6, $7, $8, $9)
ON CONFLICT (jurisdiction, feed) DO UPDATE SET view_name = excluded.view_name, geometry_type = excluded.geometry_type,
	features = excluded.features, declared_by = excluded.declared_by, typed_values = excluded.typed_values,
	signature = excluded.signature, poll_id = excluded.poll_id, profile = excluded.profile, updated_at = now()
WHERE (feed_schemas.view_name, feed_schemas.geometry_type, feed_schemas.features, feed_schemas.declared_by, feed_schemas.typed_values, feed_schemas.signature, feed_schemas.profile)
	IS DISTINCT FROM (excluded.view_name, excluded.geometry_type, excluded.features, excluded.declared_by, excluded.typed_values, excluded.signature, excluded.profile)
