-- Feature history: every version of a feature that an applied
-- snapshot modified or removed, with the polls and times it was valid
-- from and to, and the layer as of any time.
--
-- Why: feature_changes keeps hashes only, so what a parcel looked like
-- before it was modified, and every removed feature, were gone once a
-- snapshot applied. The current version stays where it is (features, the
-- feed's own table: valid from its changed_at and poll_id, until now);
-- feature_history holds only superseded versions, written by the apply in
-- the statement that supersedes them. A quiet layer adds nothing; a layer
-- that modifies some of its features per poll adds as many rows per poll.
--
-- Validity is half-open, [valid_from, valid_to): a version written by an
-- apply at time T (its transaction's now(), which is also changed_at and
-- feature_changes.changed_at) is the layer's from T on. Applies of one feed
-- are serialised by its advisory lock and take a time later than the
-- feed's last apply (feeds/postgis, lockFeed), so a feed's times increase
-- with its applies.
--
-- Retention: feed_status.history_keep (history: {keep: …} in the config):
-- NULL keeps versions forever, '0' keeps none (history off), else versions
-- whose valid_to is older than it are pruned by the daemon
-- (ingestd_prune_history). feed_status.history_from is the time from which
-- ingestd_layer_as_of is exact: the upgrade's time for feeds that exist
-- now, advanced by pruning and by any apply made with history off.

-- +goose Up
CREATE TABLE feature_history (
    jurisdiction text        NOT NULL,
    feed         text        NOT NULL,
    feature_id   text        NOT NULL,
    geom         geometry(Geometry, 4326),
    properties   jsonb,
    content_hash bytea       NOT NULL,
    valid_from   timestamptz NOT NULL,
    valid_to     timestamptz NOT NULL,
    from_poll    bigint      NOT NULL,
    to_poll      bigint      NOT NULL,
    ended_by     text        NOT NULL CHECK (ended_by IN ('modified', 'removed'))
);
-- A feature's versions (ingestd_feature_history) and the old/new versions
-- of a poll's changes (ingestd_changes_since): led by the feed and the id.
CREATE INDEX feature_history_feature ON feature_history (jurisdiction, feed, feature_id, to_poll);
-- The layer as of a time (versions still valid then: valid_to > at) and
-- pruning (valid_to < cutoff): one range of one feed's entries each.
CREATE INDEX feature_history_valid_to ON feature_history (jurisdiction, feed, valid_to);

COMMENT ON TABLE feature_history IS 'Superseded versions of features: every version a snapshot modified or removed, valid over [valid_from, valid_to). The current version is the feature''s row in features (valid from its changed_at). Pruned per feed by feed_status.history_keep.';
COMMENT ON COLUMN feature_history.geom IS 'The version''s geometry, as features.geom (EPSG:4326, 2D).';
COMMENT ON COLUMN feature_history.properties IS 'The version''s properties, as features.properties.';
COMMENT ON COLUMN feature_history.valid_from IS 'When the apply that wrote this version ran (features.changed_at then).';
COMMENT ON COLUMN feature_history.valid_to IS 'When the apply that modified or removed it ran (feature_changes.changed_at of to_poll).';
COMMENT ON COLUMN feature_history.from_poll IS 'The poll whose snapshot wrote this version.';
COMMENT ON COLUMN feature_history.to_poll IS 'The poll whose snapshot modified or removed it.';
COMMENT ON COLUMN feature_history.ended_by IS 'modified (a newer version followed) or removed.';

ALTER TABLE feed_status ADD COLUMN history_keep interval DEFAULT interval '90 days',
    ADD COLUMN history_from timestamptz;
-- Existing feeds' past before this upgrade was not kept.
UPDATE feed_status SET history_from = now();
COMMENT ON COLUMN feed_status.history_keep IS 'How long superseded versions are kept in feature_history (history: {keep: …}): NULL forever, 0 none (history off).';
COMMENT ON COLUMN feed_status.history_from IS 'ingestd_layer_as_of is exact from this time on (NULL: since the feed''s first load): the upgrade that began history, the last prune, or the last apply made with history off.';

-- The layer as it was applied at a time: the current rows written by then,
-- and the superseded versions valid then.
-- +goose StatementBegin
CREATE FUNCTION ingestd_layer_as_of(jurisdiction text, feed text, at timestamptz)
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
COMMENT ON FUNCTION ingestd_layer_as_of(text, text, timestamptz) IS 'The feed''s features as applied at a time: (feature_id, properties, geom). Raises when the feed''s history is not complete back to then (feed_status.history_from).';

-- +goose StatementBegin
CREATE FUNCTION ingestd_feature_history(jurisdiction text, feed text, feature_id text)
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
COMMENT ON FUNCTION ingestd_feature_history(text, text, text) IS 'Every kept version of one feature, oldest first: valid over [valid_from, valid_to), the current one (if the feature exists) with valid_to NULL.';

-- Prunes feature_history by each feed's history_keep as of $1, at most
-- $2 rows per call (each call a short transaction of its own: the daemon
-- calls it until it returns 0), and moves history_from past what it
-- removed. Applies only insert into feature_history, so neither waits for
-- the other.
-- +goose StatementBegin
CREATE FUNCTION ingestd_prune_history(now_at timestamptz, batch int)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    s record;
    n bigint;
    total bigint := 0;
BEGIN
    FOR s IN SELECT jurisdiction, feed, now_at - history_keep AS cutoff FROM feed_status
        WHERE history_keep IS NOT NULL -- '0' (off): whatever was kept before goes
    LOOP
        DELETE FROM feature_history h WHERE h.ctid IN (
            SELECT x.ctid FROM feature_history x
            WHERE x.jurisdiction = s.jurisdiction AND x.feed = s.feed AND x.valid_to < s.cutoff
            LIMIT batch - total);
        GET DIAGNOSTICS n = ROW_COUNT;
        total := total + n;
        IF n > 0 THEN
            UPDATE feed_status SET history_from = greatest(history_from, s.cutoff)
            WHERE jurisdiction = s.jurisdiction AND feed = s.feed;
        END IF;
        EXIT WHEN total >= batch;
    END LOOP;
    RETURN total;
END
$$;
-- +goose StatementEnd
COMMENT ON FUNCTION ingestd_prune_history(timestamptz, int) IS 'Deletes at most batch versions older than their feed''s history_keep as of now_at; returns how many. The daemon calls it hourly until it returns 0.';

-- +goose Down
DROP FUNCTION ingestd_prune_history(timestamptz, int);
DROP FUNCTION ingestd_feature_history(text, text, text);
DROP FUNCTION ingestd_layer_as_of(text, text, timestamptz);
ALTER TABLE feed_status DROP COLUMN history_keep, DROP COLUMN history_from;
DROP TABLE feature_history;
