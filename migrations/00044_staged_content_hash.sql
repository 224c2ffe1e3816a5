-- Each staged row carries its 16-byte content hash, the bytes a layer
-- table keeps in ingestd_hash (the first 16 bytes of
-- SHA-256(geom_hash || props_hash)), computed by ingestd while it stages
-- the row (docs/decisions/0221-content-hash-at-staging.md). The apply
-- compares it with the layer's instead of hashing every staged row in
-- PostgreSQL again.
--
-- Nullable and without a default: adding it changes the catalog only, no
-- row of staging is rewritten. A row staged before this version has none
-- (a poll resumed across the upgrade), and the apply computes it then.

-- +goose Up
SELECT set_config('search_path', 'ingestd, public', true);
ALTER TABLE staged_features ADD COLUMN content_hash bytea;
COMMENT ON COLUMN staged_features.content_hash IS 'The first 16 bytes of SHA-256(geom_hash || props_hash): the layer''s ingestd_hash for this row, computed by ingestd while staging; NULL for a row staged before version 44 (the apply computes it).';

-- +goose Down
SELECT set_config('search_path', 'ingestd, public', true);
ALTER TABLE staged_features DROP COLUMN content_hash;
