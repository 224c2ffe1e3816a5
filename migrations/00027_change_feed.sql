-- The change feed: what a consumer that follows a layer reads.
--
-- After each applied snapshot that added, modified or removed features the
-- apply sends NOTIFY ingestd_changes with a JSON payload (jurisdiction,
-- feed, poll_id, added, modified, removed, applied_at), delivered when it
-- commits. ingestd_changes_since(jurisdiction, feed, after_poll) is what
-- the consumer then reads: the changes of every poll after the last one it
-- saw, with the old and new version of each feature (feature_history and
-- the feed's table), so it resumes from a poll id and misses nothing the
-- history still holds.
--
-- And the layer as of a time with its typed columns:
-- ingestd_layer_as_of_typed(jurisdiction, feed, at, NULL::<typed view>)
-- returns rows of the feed's typed view (ingestd_feed_view), computed by
-- the view's own casts over ingestd_layer_as_of.

-- +goose Up
-- No new index on feature_changes: poll_id > after_poll is a range of
-- its BRIN index (feature_changes_poll_brin), the recent tail a consumer
-- resumes from; another B-tree would be written for every change of every
-- first load.
-- +goose StatementBegin
CREATE FUNCTION ingestd_changes_since(jurisdiction text, feed text, after_poll bigint)
RETURNS TABLE (poll_id bigint, feature_id text, change text, applied_at timestamptz,
    old_properties jsonb, old_geom geometry, new_properties jsonb, new_geom geometry)
LANGUAGE sql STABLE AS $$
    SELECT c.poll_id, c.feature_id, c.change, c.changed_at, o.properties, o.geom, n.properties, n.geom
    FROM feature_changes c
    -- The version the change superseded (modified, removed).
    LEFT JOIN LATERAL (
        SELECT h.properties, h.geom::geometry AS geom FROM feature_history h
        WHERE h.jurisdiction = $1 AND h.feed = $2 AND h.feature_id = c.feature_id AND h.to_poll = c.poll_id
    ) o ON c.change <> 'added'
    -- The version it wrote (added, modified): current, or superseded since.
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
COMMENT ON FUNCTION ingestd_changes_since(text, text, bigint) IS 'The changes of a feed''s polls after after_poll, in poll order: each feature added, modified or removed, with its old and new properties and geometry (NULL where history was off or pruned).';

-- +goose StatementBegin
CREATE FUNCTION ingestd_layer_as_of_typed(jurisdiction text, feed text, at timestamptz, row_type anyelement)
RETURNS SETOF anyelement LANGUAGE plpgsql STABLE AS $$
DECLARE
    v text := ingestd_feed_view(jurisdiction, feed);
    def text;
BEGIN
    IF to_regclass(quote_ident(v)) IS NULL THEN
        RAISE EXCEPTION 'ingestd_layer_as_of_typed: %/% has no typed view %', jurisdiction, feed, v;
    END IF;
    -- The view reads "FROM <the feed's table> f": read the layer as of
    -- the time instead (first_seen_at and changed_at are not kept per
    -- version: NULL).
    def := regexp_replace(pg_get_viewdef(quote_ident(v)::regclass), 'FROM\s+\S+\s+f\s*;?\s*$',
        'FROM (SELECT $1 AS jurisdiction, $2 AS feed, a.feature_id, a.properties, a.geom, '
        || 'NULL::timestamptz AS first_seen_at, NULL::timestamptz AS changed_at '
        || 'FROM ingestd_layer_as_of($1, $2, $3) a) f');
    RETURN QUERY EXECUTE def USING jurisdiction, feed, at;
END
$$;
-- +goose StatementEnd
COMMENT ON FUNCTION ingestd_layer_as_of_typed(text, text, timestamptz, anyelement) IS 'The feed''s typed view as of a time: pass NULL::<the typed view> (ingestd_feed_view(jurisdiction, feed)) as row_type. Columns as the view has them now.';

-- +goose Down
DROP FUNCTION ingestd_layer_as_of_typed(text, text, timestamptz, anyelement);
DROP FUNCTION ingestd_changes_since(text, text, bigint);
