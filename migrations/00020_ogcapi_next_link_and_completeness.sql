-- OGC API – Features (kind ogcapi) pages by links, not offsets.
--
-- A parked poll resumes at the next link of its last staged page, which only
-- the server could build: each staged page records it (in the same
-- transaction as the page), with the feed's own query parameters and
-- userinfo left out (ogcapi.Storable), so that no credential the config
-- holds is written here; the resume puts them back.
--
-- A poll records what its completeness rests on: the server's numberMatched
-- (the total equalled it) or, when the server reports none, its next links
-- alone, which an operator may want to know of a layer.

-- +goose Up
ALTER TABLE staged_pages ADD COLUMN next_link text;
COMMENT ON COLUMN staged_pages.next_link IS 'The page''s next link (kind ogcapi) without the feed url''s own query parameters and userinfo; NULL for kinds that page by offset, '''' on the last page.';
ALTER TABLE polls ADD COLUMN completeness text CHECK (completeness IN ('number_matched', 'links_only'));
COMMENT ON COLUMN polls.completeness IS 'Kind ogcapi, succeeded polls: number_matched (the total equalled the server''s numberMatched) or links_only (the server reported none: completeness rests on its next links). NULL otherwise.';

-- +goose Down
ALTER TABLE polls DROP COLUMN completeness;
ALTER TABLE staged_pages DROP COLUMN next_link;
