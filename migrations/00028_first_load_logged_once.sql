-- A first load logs one change, not one per feature.
--
-- Why: a feed's first load wrote every feature twice more than its own
-- table: once into staging, and once more as an 'added' row of
-- feature_changes, about a quarter of a first load's time
-- (BenchmarkFirstLoadWrites in feeds/postgis measures what it writes).
-- Now the apply of a first load writes one feature_changes row, change
-- 'loaded' with feature_id '' (the poll added every feature of its
-- snapshot), and refreshes keep logging one row per feature added,
-- modified or removed as before.
--
-- Which features a first load added follows from the versions: those it
-- wrote (features.poll_id, or feature_history.from_poll once superseded).
-- feature_changes_expanded is the log as it was: each 'loaded' row
-- expanded into one 'added' row per feature, rows of earlier first loads
-- (stored one per feature) and refreshes as they are. A loaded feature
-- that was later modified or removed with history off, or whose first
-- version was pruned, is no longer listed as added by its first load (its
-- later change still is).

-- +goose Up
ALTER TABLE feature_changes DROP CONSTRAINT feature_changes_change_check,
    ADD CONSTRAINT feature_changes_change_check CHECK (change IN ('added', 'modified', 'removed', 'loaded'));
COMMENT ON COLUMN feature_changes.change IS 'added, modified (content hash changed) or removed (absent from the snapshot); loaded: a first load, which added every feature of its snapshot (one row, feature_id empty; feature_changes_expanded lists them).';

CREATE VIEW feature_changes_expanded AS
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
COMMENT ON VIEW feature_changes_expanded IS 'feature_changes with each first load (change loaded) listed as one added row per feature it wrote (from features and feature_history).';

-- ingestd_changes_since reads the expanded log.
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

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_changes_since(jurisdiction text, feed text, after_poll bigint)
RETURNS TABLE (poll_id bigint, feature_id text, change text, applied_at timestamptz,
    old_properties jsonb, old_geom geometry, new_properties jsonb, new_geom geometry)
LANGUAGE sql STABLE AS $$
    SELECT c.poll_id, c.feature_id, c.change, c.changed_at, o.properties, o.geom, n.properties, n.geom
    FROM feature_changes c
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
DROP VIEW feature_changes_expanded;
-- Each first load's rows, as versions before this migration wrote them.
INSERT INTO feature_changes (poll_id, jurisdiction, feed, feature_id, change, geometry_changed,
    properties_changed, old_hash, new_hash, changed_at)
SELECT poll_id, jurisdiction, feed, feature_id, change, geometry_changed, properties_changed, old_hash, new_hash, changed_at
FROM (SELECT c.poll_id, c.jurisdiction, c.feed, v.feature_id, 'added' AS change, true AS geometry_changed,
        true AS properties_changed, NULL::bytea AS old_hash, v.content_hash AS new_hash, c.changed_at
    FROM feature_changes c
    CROSS JOIN LATERAL (
        SELECT f.feature_id, f.content_hash FROM features f
        WHERE f.jurisdiction = c.jurisdiction AND f.feed = c.feed AND f.poll_id = c.poll_id
    ) v
    WHERE c.change = 'loaded') x;
DELETE FROM feature_changes WHERE change = 'loaded';
ALTER TABLE feature_changes DROP CONSTRAINT feature_changes_change_check,
    ADD CONSTRAINT feature_changes_change_check CHECK (change IN ('added', 'modified', 'removed'));
