-- Scrub credentials that earlier versions stored.
--
-- Why: before issue 14, redaction was a list of sensitive names, and it
-- missed a token given as userinfo (http://TOKEN@host/) and parameters such
-- as pw, ticket, hash, k or access_key_id. Those values sit in polls,
-- feed_status, dead_letter and breaker_state, readable by anyone with SQL
-- access. Code now redacts by default (package redact) before it writes;
-- this removes what is already there. It is cruder than the code on
-- purpose: every userinfo and every query value (harmless ones too) becomes
-- REDACTED, so that no allow-list is kept twice. feed_status.url gets its
-- finer redaction back at the feed's next poll. There is nothing to undo.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION pg_temp.ingestd_scrub(t text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT regexp_replace(
        regexp_replace(t, '([A-Za-z][A-Za-z0-9+.-]*://)[^/?#[:space:]"''<>@]*@', '\1REDACTED@', 'g'),
        '([?&;][^=&;#[:space:]"''<>?]+)=[^&;#[:space:]"''<>]*', '\1=REDACTED', 'g')
$$;
-- +goose StatementEnd

UPDATE polls SET url = pg_temp.ingestd_scrub(url), error = pg_temp.ingestd_scrub(error)
WHERE url IS DISTINCT FROM pg_temp.ingestd_scrub(url) OR error IS DISTINCT FROM pg_temp.ingestd_scrub(error);

UPDATE feed_status SET url = pg_temp.ingestd_scrub(url), last_error = pg_temp.ingestd_scrub(last_error)
WHERE url IS DISTINCT FROM pg_temp.ingestd_scrub(url) OR last_error IS DISTINCT FROM pg_temp.ingestd_scrub(last_error);

UPDATE dead_letter SET url = pg_temp.ingestd_scrub(url), last_error = pg_temp.ingestd_scrub(last_error)
WHERE url IS DISTINCT FROM pg_temp.ingestd_scrub(url) OR last_error IS DISTINCT FROM pg_temp.ingestd_scrub(last_error);

UPDATE breaker_state SET last_error = pg_temp.ingestd_scrub(last_error), override_reason = pg_temp.ingestd_scrub(override_reason)
WHERE last_error IS DISTINCT FROM pg_temp.ingestd_scrub(last_error)
   OR override_reason IS DISTINCT FROM pg_temp.ingestd_scrub(override_reason);

DROP FUNCTION pg_temp.ingestd_scrub(text);

-- +goose Down
-- Scrubbed secrets cannot come back, and need not.
SELECT 1;
