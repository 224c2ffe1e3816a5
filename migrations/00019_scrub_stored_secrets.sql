-- Scrub credentials that earlier versions stored.
--
-- Why: earlier versions redacted by a list of sensitive names, which
-- missed a token given as userinfo (http://TOKEN@host/) and parameters such
-- as pw, ticket, hash, k or access_key_id. Those values sit in polls,
-- feed_status, dead_letter and breaker_state, readable by anyone with SQL
-- access. Code now redacts by default (package redact) before it writes;
-- this removes what is already there. It is cruder than the code on
-- purpose: every userinfo and every query value (harmless ones too) becomes
-- REDACTED, so that no allow-list is kept twice. feed_status.url gets its
-- finer redaction back at the feed's next poll. There is nothing to undo.

-- +goose Up
-- The helper lives in the schema for the length of the migration (not in
-- pg_temp: a least-privilege owner role need not have TEMPORARY).
-- +goose StatementBegin
CREATE FUNCTION ingestd_scrub_secrets(t text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT regexp_replace(
        regexp_replace(t, '([A-Za-z][A-Za-z0-9+.-]*://)[^/?#[:space:]"''<>@]*@', '\1REDACTED@', 'g'),
        '([?&;][^=&;#[:space:]"''<>?]+)=[^&;#[:space:]"''<>]*', '\1=REDACTED', 'g')
$$;
-- +goose StatementEnd

UPDATE polls SET url = ingestd_scrub_secrets(url), error = ingestd_scrub_secrets(error)
WHERE url IS DISTINCT FROM ingestd_scrub_secrets(url) OR error IS DISTINCT FROM ingestd_scrub_secrets(error);

UPDATE feed_status SET url = ingestd_scrub_secrets(url), last_error = ingestd_scrub_secrets(last_error)
WHERE url IS DISTINCT FROM ingestd_scrub_secrets(url) OR last_error IS DISTINCT FROM ingestd_scrub_secrets(last_error);

UPDATE dead_letter SET url = ingestd_scrub_secrets(url), last_error = ingestd_scrub_secrets(last_error)
WHERE url IS DISTINCT FROM ingestd_scrub_secrets(url) OR last_error IS DISTINCT FROM ingestd_scrub_secrets(last_error);

UPDATE breaker_state SET last_error = ingestd_scrub_secrets(last_error), override_reason = ingestd_scrub_secrets(override_reason)
WHERE last_error IS DISTINCT FROM ingestd_scrub_secrets(last_error)
   OR override_reason IS DISTINCT FROM ingestd_scrub_secrets(override_reason);

DROP FUNCTION ingestd_scrub_secrets(text);

-- +goose Down
-- Scrubbed secrets cannot come back, and need not.
SELECT 1;
