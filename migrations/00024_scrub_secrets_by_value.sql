-- Secrets scrubbed by value.
--
-- Why: servers echo credentials back where no URL redaction sees them: in
-- prose ("Invalid token: …", an HTML page's title, an exception naming the
-- key, an error quoting the request's X-Esri-Authorization header) and in
-- next links that spell the key's parameter otherwise (APIKEY= where the
-- feed's url has apikey=). ingestd now scrubs the configuration's secrets
-- by value wherever it writes text (package redact, Secrets), and scrubs
-- what is already stored at start and with `ingestd scrub-secrets`
-- (feeds/postgis, deadletter and breaker: ScrubSecrets). A migration cannot
-- know the values; this one does what needs no value:
--
-- 1. secrets_scrubbed records how far the polls table was scrubbed, so that
--    a start reads only the polls written since (the first start after this
--    migration reads them all).
-- 2. In a stored next link (staged_pages.next_link: the resume point of a
--    parked OGC API poll), the value of a query parameter named, in any
--    case, like one the feed's url redacts (feed_status.url shows it as
--    name=REDACTED) becomes REDACTED. The resume puts the feed's own value
--    back (ogcapi.Restore matches names case-insensitively and replaces a
--    REDACTED value), so the link still works. Like migration 19 it is
--    cruder than the code: the value need not have been the key.

-- +goose Up
CREATE TABLE secrets_scrubbed (
    singleton     boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    polls_through bigint      NOT NULL,
    scrubbed_at   timestamptz NOT NULL
);
COMMENT ON TABLE secrets_scrubbed IS 'One row: the polls up to polls_through were scrubbed of the configuration''s secrets by value (ingestd run at start, ingestd scrub-secrets); a start scrubs only newer ones.';

-- +goose StatementBegin
CREATE FUNCTION ingestd_redact_link_params(link text, names text[]) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    n text;
BEGIN
    FOREACH n IN ARRAY names LOOP
        -- The name quoted for the pattern: a backslash before every
        -- character but letters, digits and _.
        link := regexp_replace(link, '([?&;]' || regexp_replace(n, '([^[:alnum:]_])', '\\\1', 'g') || ')=[^&;#]*',
            '\1=REDACTED', 'gi');
    END LOOP;
    RETURN link;
END
$$;
-- +goose StatementEnd

UPDATE staged_pages sp SET next_link = ingestd_redact_link_params(sp.next_link, n.names)
FROM polls p, LATERAL (
    SELECT array_agg(DISTINCT m[1]) AS names
    FROM feed_status s, regexp_matches(s.url, '[?&;]([^=&;#?]+)=REDACTED', 'g') AS m
    WHERE s.jurisdiction = p.jurisdiction AND s.feed = p.feed
) n
WHERE p.id = sp.poll_id AND sp.next_link IS NOT NULL AND n.names IS NOT NULL
  AND sp.next_link IS DISTINCT FROM ingestd_redact_link_params(sp.next_link, n.names);

DROP FUNCTION ingestd_redact_link_params(text, text[]);

-- +goose Down
-- Scrubbed values cannot come back, and need not.
DROP TABLE secrets_scrubbed;
