-- Conditional GET: the validators a server sent with a feed's
-- snapshot (HTTP ETag / Last-Modified, or a kind's own version of the layer)
-- are kept with the poll that fetched it, and with the feed once that
-- snapshot applied; the next poll sends them back, and a server that proves
-- the layer unchanged (HTTP 304, or the kind's version check) makes a poll
-- that succeeds with nothing fetched: polls.not_modified.
--
-- Only an applied snapshot's validators are ever sent: a held, failed or
-- refused poll clears feed_status.validators (the next poll fetches in
-- full), and accepting a held snapshot sets them from its poll. They are
-- sent only for the request they came with (validators_for): a feed whose
-- URL, type name, format or CRS changed fetches in full, since another
-- document's Last-Modified could otherwise make its server answer 304.

-- +goose Up
ALTER TABLE polls ADD COLUMN not_modified boolean NOT NULL DEFAULT false;
ALTER TABLE polls ADD COLUMN validators jsonb;
ALTER TABLE polls ADD COLUMN validators_for text;
COMMENT ON COLUMN polls.not_modified IS 'True for a poll the server answered "unchanged" (HTTP 304 Not Modified, or the kind''s version check): it succeeded with nothing fetched, and the feed''s features are those of its last applied snapshot.';
COMMENT ON COLUMN polls.validators IS 'The validators the server sent with this poll''s snapshot: {"etag", "last_modified", "version"}; NULL when none.';
COMMENT ON COLUMN polls.bytes IS 'Response body bytes read (decompressed) by the poll''s successful page requests; 0 for a not_modified poll; NULL for polls recorded before ingestd reported it.';
ALTER TABLE feed_status ADD COLUMN validators jsonb;
ALTER TABLE feed_status ADD COLUMN validators_for text;
COMMENT ON COLUMN polls.validators_for IS 'SHA-256 (hex) of the request the validators came with (URL, type name, version, format, page size, CRS, id property): they are sent back only for the same request.';
COMMENT ON COLUMN feed_status.validators_for IS 'polls.validators_for of the applied snapshot whose validators these are.';
COMMENT ON COLUMN feed_status.validators IS 'The validators of the feed''s last applied snapshot, sent with the next poll (If-None-Match, If-Modified-Since); NULL when there are none, or when the last poll failed, was refused or held.';

-- +goose Down
ALTER TABLE feed_status DROP COLUMN validators_for;
ALTER TABLE feed_status DROP COLUMN validators;
COMMENT ON COLUMN polls.bytes IS 'Response bytes read, when the poller reports them.';
ALTER TABLE polls DROP COLUMN validators_for;
ALTER TABLE polls DROP COLUMN validators;
ALTER TABLE polls DROP COLUMN not_modified;
