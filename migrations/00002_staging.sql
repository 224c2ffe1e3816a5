-- Staging for polls in progress: pages are COPYed here as they arrive and
-- applied to features in one transaction when the poll completes.

-- +goose Up
-- UNLOGGED: staging is written once and read once, so WAL for it is pure
-- cost. Unlogged tables survive a clean restart of PostgreSQL and of ingestd
-- (so a poll can resume from the pages it staged), but are emptied by crash
-- recovery; both tables are unlogged so that they are emptied together and a
-- resume never sees a page recorded whose rows are gone.
CREATE UNLOGGED TABLE staged_features (
    poll_id      bigint  NOT NULL,
    page         integer NOT NULL,
    ordinal      integer NOT NULL,
    feature_id   text    NOT NULL,
    srid         integer NOT NULL,
    geom_ewkb    bytea,
    properties   jsonb,
    content_hash bytea   NOT NULL,
    PRIMARY KEY (poll_id, page, ordinal)
);

COMMENT ON TABLE staged_features IS 'Features of polls in progress, one row per feature as the source sent it; emptied when the poll is applied or fails.';
COMMENT ON COLUMN staged_features.page IS 'Page number within the poll (0-based as the poller counts).';
COMMENT ON COLUMN staged_features.ordinal IS 'Position within the page; with page, orders the snapshot (the last duplicate id wins).';
COMMENT ON COLUMN staged_features.feature_id IS 'Source id, or the hex content hash for features without one.';
COMMENT ON COLUMN staged_features.srid IS 'SRID the source declared (0 when none, taken as 4326).';
COMMENT ON COLUMN staged_features.geom_ewkb IS 'Geometry as EWKB in the source CRS; NULL for a null geometry. Kept as bytea so COPY does no geometry parsing; Apply parses and transforms.';
COMMENT ON COLUMN staged_features.content_hash IS 'SHA-256 over EWKB and properties, computed by ingestd.';

CREATE UNLOGGED TABLE staged_pages (
    poll_id   bigint      NOT NULL,
    page      integer     NOT NULL,
    features  integer     NOT NULL,
    staged_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (poll_id, page)
);

COMMENT ON TABLE staged_pages IS 'Pages fully staged per poll in progress: the checkpoint a resumed poll continues from.';

-- +goose Down
DROP TABLE staged_pages;
DROP TABLE staged_features;
