-- OGC API – Features pages by links, not offsets: a parked poll of an
-- ogcapi feed resumes at the next link of its last staged page, which only
-- the server could build. Each staged page records it (in the same
-- transaction as the page), with the feed's own query parameters and
-- userinfo left out (ogcapi.Storable), so that no credential the config
-- holds is written here; the resume puts them back.

-- +goose Up
ALTER TABLE staged_pages ADD COLUMN next_link text;
COMMENT ON COLUMN staged_pages.next_link IS 'The page''s next link (kind ogcapi) without the feed url''s own query parameters and userinfo; NULL for kinds that page by offset, '''' on the last page.';

-- +goose Down
ALTER TABLE staged_pages DROP COLUMN next_link;
