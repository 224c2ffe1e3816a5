-- The history and change-feed functions, and feature_changes_expanded read
-- for one feed, open that feed's table only.
--
-- Why: features is partitioned by jurisdiction and feed, and PostgreSQL
-- opens and locks only the partitions it can rule out while planning, from
-- constants. feature_changes_expanded joined the log's rows to features
-- laterally (f.jurisdiction = c.jurisdiction): no constant reaches the join,
-- so every read of it, and ingestd_changes_since through it, planned and
-- locked every feed's table and indexes. And a statement planned with
-- parameters (a SQL function's body, a plpgsql RETURN QUERY, a client's
-- prepared statement) is planned once generically from its sixth run in a
-- session, which again opens every partition. At 5,000 feeds that is
-- 15,000 locks, more than a stock lock table holds ("out of shared memory"),
-- and seconds of planning (BenchmarkReadsAtScale in feeds/postgis prints
-- each function's locks and times).
--
-- Now the view joins the versions as a plain join, so a feed named on the
-- view reaches features as a constant; and the functions run their
-- statement with EXECUTE … USING, planned at each call with the feed's
-- names as values. Their results are unchanged.

-- +goose Up
SELECT set_config('search_path', 'ingestd, public', true);
CREATE OR REPLACE VIEW feature_changes_expanded AS
SELECT c.poll_id, c.jurisdiction, c.feed, c.feature_id, c.change, c.geometry_changed,
    c.properties_changed, c.old_hash, c.new_hash, c.changed_at
FROM feature_changes c
WHERE c.change <> 'loaded'
UNION ALL
SELECT c.poll_id, c.jurisdiction, c.feed, v.feature_id, 'added', true, true, NULL::bytea, v.content_hash, c.changed_at
FROM feature_changes c
JOIN (
    SELECT f.jurisdiction, f.feed, f.poll_id, f.feature_id, f.content_hash FROM features f
    UNION ALL
    SELECT h.jurisdiction, h.feed, h.from_poll, h.feature_id, h.content_hash FROM feature_history h
) v ON v.jurisdiction = c.jurisdiction AND v.feed = c.feed AND v.poll_id = c.poll_id
WHERE c.change = 'loaded';

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_changes_since(jurisdiction text, feed text, after_poll bigint)
RETURNS TABLE (poll_id bigint, feature_id text, change text, applied_at timestamptz,
    old_properties jsonb, old_geom geometry, new_properties jsonb, new_geom geometry)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY EXECUTE $q$
    SELECT c.poll_id, c.feature_id, c.change, c.changed_at, o.properties, o.geom, n.properties, n.geom
    FROM feature_changes_expanded c
    LEFT JOIN LATERAL (
        SELECT h.properties, h.geom::geometry AS geom FROM feature_history h
        WHERE h.jurisdiction = $1 AND h.feed = $2 AND h.feature_id = c.feature_id AND h.to_poll = c.poll_id
    ) o ON c.change <> 'added'
    LEFT JOIN LATERAL (
        SELECT f.properties, f.geom::geometry AS geom FROM features f
        WHERE f.jurisdiction = $1 AND f.feed = $2 AND f.feature_id = c.feature_id AND f.poll_id = c.poll_id
        UNION ALL
        SELECT h.properties, h.geom::geometry FROM feature_history h
        WHERE h.jurisdiction = $1 AND h.feed = $2 AND h.feature_id = c.feature_id AND h.from_poll = c.poll_id
        LIMIT 1
    ) n ON c.change <> 'removed'
    WHERE c.jurisdiction = $1 AND c.feed = $2 AND c.poll_id > $3
    ORDER BY c.poll_id, c.feature_id
    $q$ USING jurisdiction, feed, after_poll;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_feature_history(jurisdiction text, feed text, feature_id text)
RETURNS TABLE (valid_from timestamptz, valid_to timestamptz, from_poll bigint, to_poll bigint,
    ended_by text, properties jsonb, geom geometry)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY EXECUTE $q$
    SELECT h.valid_from, h.valid_to, h.from_poll, h.to_poll, h.ended_by, h.properties, h.geom::geometry
    FROM feature_history h
    WHERE h.jurisdiction = $1 AND h.feed = $2 AND h.feature_id = $3
    UNION ALL
    SELECT f.changed_at, NULL, f.poll_id, NULL, NULL, f.properties, f.geom::geometry
    FROM features f
    WHERE f.jurisdiction = $1 AND f.feed = $2 AND f.feature_id = $3
    ORDER BY 1
    $q$ USING jurisdiction, feed, feature_id;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_layer_as_of(jurisdiction text, feed text, at timestamptz)
RETURNS TABLE (feature_id text, properties jsonb, geom geometry)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    exact_from timestamptz;
BEGIN
    SELECT s.history_from INTO exact_from FROM feed_status s
    WHERE s.jurisdiction = ingestd_layer_as_of.jurisdiction AND s.feed = ingestd_layer_as_of.feed;
    IF exact_from IS NOT NULL AND at < exact_from THEN
        RAISE EXCEPTION 'ingestd_layer_as_of: %/% has no complete history before % (asked for %)',
            ingestd_layer_as_of.jurisdiction, ingestd_layer_as_of.feed, exact_from, at
            USING HINT = 'history is kept from the upgrade that began it, within history: {keep: …}, and not across applies made with history: off';
    END IF;
    RETURN QUERY EXECUTE $q$
        SELECT f.feature_id, f.properties, f.geom::geometry FROM features f
        WHERE f.jurisdiction = $1 AND f.feed = $2 AND f.changed_at <= $3
        UNION ALL
        SELECT h.feature_id, h.properties, h.geom::geometry FROM feature_history h
        WHERE h.jurisdiction = $1 AND h.feed = $2 AND h.valid_to > $3 AND h.valid_from <= $3
    $q$ USING jurisdiction, feed, at;
END
$$;
-- +goose StatementEnd

-- +goose Down
SELECT set_config('search_path', 'ingestd, public', true);
-- 00028's view and function, 00026's functions.
CREATE OR REPLACE VIEW feature_changes_expanded AS
SELECT c.poll_id, c.jurisdiction, c.feed, c.feature_id, c.change, c.geometry_changed,
    c.properties_changed, c.old_hash, c.new_hash, c.changed_at
FROM feature_changes c
WHERE c.change <> 'loaded'
UNION ALL
SELECT c.poll_id, c.jurisdiction, c.feed, v.feature_id, 'added', true, true, NULL::bytea, v.content_hash, c.changed_at
FROM feature_changes c
CROSS JOIN LATERAL (
    SELECT f.feature_id, f.content_hash FROM features f
    WHERE f.jurisdiction = c.jurisdiction AND f.feed = c.feed AND f.poll_id = c.poll_id
    UNION ALL
    SELECT h.feature_id, h.content_hash FROM feature_history h
    WHERE h.jurisdiction = c.jurisdiction AND h.feed = c.feed AND h.from_poll = c.poll_id
) v
WHERE c.change = 'loaded';

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_changes_since(jurisdiction text, feed text, after_poll bigint)
RETURNS TABLE (poll_id bigint, feature_id text, change text, applied_at timestamptz,
    old_properties jsonb, old_geom geometry, new_properties jsonb, new_geom geometry)
LANGUAGE sql STABLE AS $$
    SELECT c.poll_id, c.feature_id, c.change, c.changed_at, o.properties, o.geom, n.properties, n.geom
    FROM feature_changes_expanded c
    LEFT JOIN LATERAL (
        SELECT h.properties, h.geom::geometry AS geom FROM feature_history h
        WHERE h.jurisdiction = $1 AND h.feed = $2 AND h.feature_id = c.feature_id AND h.to_poll = c.poll_id
    ) o ON c.change <> 'added'
    LEFT JOIN LATERAL (
        SELECT f.properties, f.geom::geometry AS geom FROM features f
        WHERE f.jurisdiction = $1 AND f.feed = $2 AND f.feature_id = c.feature_id AND f.poll_id = c.poll_id
        UNION ALL
        SELECT h.properties, h.geom::geometry FROM feature_history h
        WHERE h.jurisdiction = $1 AND h.feed = $2 AND h.feature_id = c.feature_id AND h.from_poll = c.poll_id
        LIMIT 1
    ) n ON c.change <> 'removed'
    WHERE c.jurisdiction = $1 AND c.feed = $2 AND c.poll_id > $3
    ORDER BY c.poll_id, c.feature_id
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_feature_history(jurisdiction text, feed text, feature_id text)
RETURNS TABLE (valid_from timestamptz, valid_to timestamptz, from_poll bigint, to_poll bigint,
    ended_by text, properties jsonb, geom geometry)
LANGUAGE sql STABLE AS $$
    SELECT h.valid_from, h.valid_to, h.from_poll, h.to_poll, h.ended_by, h.properties, h.geom::geometry
    FROM feature_history h
    WHERE h.jurisdiction = $1 AND h.feed = $2 AND h.feature_id = $3
    UNION ALL
    SELECT f.changed_at, NULL, f.poll_id, NULL, NULL, f.properties, f.geom::geometry
    FROM features f
    WHERE f.jurisdiction = $1 AND f.feed = $2 AND f.feature_id = $3
    ORDER BY 1
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_layer_as_of(jurisdiction text, feed text, at timestamptz)
RETURNS TABLE (feature_id text, properties jsonb, geom geometry)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    exact_from timestamptz;
BEGIN
    SELECT s.history_from INTO exact_from FROM feed_status s
    WHERE s.jurisdiction = ingestd_layer_as_of.jurisdiction AND s.feed = ingestd_layer_as_of.feed;
    IF exact_from IS NOT NULL AND at < exact_from THEN
        RAISE EXCEPTION 'ingestd_layer_as_of: %/% has no complete history before % (asked for %)',
            ingestd_layer_as_of.jurisdiction, ingestd_layer_as_of.feed, exact_from, at
            USING HINT = 'history is kept from the upgrade that began it, within history: {keep: …}, and not across applies made with history: off';
    END IF;
    RETURN QUERY
        SELECT f.feature_id, f.properties, f.geom::geometry FROM features f
        WHERE f.jurisdiction = ingestd_layer_as_of.jurisdiction AND f.feed = ingestd_layer_as_of.feed
          AND f.changed_at <= at
        UNION ALL
        SELECT h.feature_id, h.properties, h.geom::geometry FROM feature_history h
        WHERE h.jurisdiction = ingestd_layer_as_of.jurisdiction AND h.feed = ingestd_layer_as_of.feed
          AND h.valid_to > at AND h.valid_from <= at;
END
$$;
-- +goose StatementEnd
