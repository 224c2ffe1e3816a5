-- A poll stages into its jurisdiction's schema: <schema>.ingestd_staged,
-- unlogged, with the columns and key staged_features had. Why: Citus
-- schema-based sharding places each jurisdiction's schema on one node;
-- with staging in ingestd's schema every apply diffed the layer on its
-- worker against staging on the coordinator (docs/decisions/0226).
--
-- polls.staging_schema records where a poll stages, set when it begins,
-- so that a layer's schema changed while the poll runs does not split its
-- pages between two tables. The rows still staged (held snapshots, the
-- checkpoints of dead letters and parked polls) move to their poll's
-- table; staged_pages, the logged record of each page, stays in ingestd.
-- ingestd.staged_features becomes a view over every jurisdiction's table,
-- for an operator's look.

-- +goose Up
SELECT set_config('search_path', 'ingestd, public', true);

ALTER TABLE polls ADD COLUMN staging_schema text;
COMMENT ON COLUMN polls.staging_schema IS 'The schema whose ingestd_staged table holds what the poll staged (its jurisdiction''s when it began); NULL for a poll begun before version 47.';

-- +goose StatementBegin
CREATE FUNCTION ingestd_poll_staging(poll bigint)
 RETURNS text
 LANGUAGE sql
 STABLE
AS $function$
    SELECT coalesce(p.staging_schema, (ingestd.ingestd_feed_layer(p.jurisdiction, p.feed))[1])
    FROM ingestd.polls p WHERE p.id = poll
$function$;
-- +goose StatementEnd
COMMENT ON FUNCTION ingestd_poll_staging(bigint) IS 'The schema whose ingestd_staged table holds what poll staged.';

-- +goose StatementBegin
DO $$
DECLARE
    s record;
BEGIN
    UPDATE ingestd.polls p SET staging_schema = (ingestd.ingestd_feed_layer(p.jurisdiction, p.feed))[1]
    WHERE p.id IN (SELECT DISTINCT poll_id FROM ingestd.staged_features) AND p.staging_schema IS NULL;
    FOR s IN SELECT DISTINCT p.staging_schema AS schema FROM ingestd.polls p
        WHERE p.id IN (SELECT DISTINCT poll_id FROM ingestd.staged_features)
    LOOP
        EXECUTE format('CREATE SCHEMA IF NOT EXISTS %I', s.schema);
        EXECUTE format($t$CREATE UNLOGGED TABLE IF NOT EXISTS %I.ingestd_staged (
            poll_id bigint NOT NULL,
            page integer NOT NULL,
            ordinal integer NOT NULL,
            feature_id text NOT NULL,
            srid integer NOT NULL,
            geom_ewkb bytea,
            properties text,
            geom_hash bytea NOT NULL,
            geom_broken boolean NOT NULL DEFAULT false,
            props_hash bytea NOT NULL,
            invalid_feature smallint NOT NULL DEFAULT 0,
            content_hash bytea,
            PRIMARY KEY (poll_id, page, ordinal))$t$, s.schema);
        EXECUTE format('INSERT INTO %I.ingestd_staged (poll_id, page, ordinal, feature_id, srid, geom_ewkb, properties, '
            'geom_hash, geom_broken, props_hash, invalid_feature, content_hash) '
            'SELECT f.poll_id, f.page, f.ordinal, f.feature_id, f.srid, f.geom_ewkb, f.properties, f.geom_hash, '
            'f.geom_broken, f.props_hash, f.invalid_feature, f.content_hash FROM ingestd.staged_features f '
            'JOIN ingestd.polls p ON p.id = f.poll_id WHERE p.staging_schema = $1', s.schema) USING s.schema;
    END LOOP;
END
$$;
-- +goose StatementEnd

DROP TABLE staged_features;

-- +goose StatementBegin
CREATE FUNCTION ingestd_staged_rows(rel regclass)
 RETURNS TABLE(poll_id bigint, page integer, ordinal integer, feature_id text, srid integer, geom_ewkb bytea,
    properties text, geom_hash bytea, geom_broken boolean, props_hash bytea, invalid_feature smallint, content_hash bytea)
 LANGUAGE plpgsql
 STABLE
AS $function$
BEGIN
    RETURN QUERY EXECUTE format('SELECT s.poll_id, s.page, s.ordinal, s.feature_id, s.srid, s.geom_ewkb, s.properties, '
        's.geom_hash, s.geom_broken, s.props_hash, s.invalid_feature, s.content_hash FROM %s s', rel);
END
$function$;
-- +goose StatementEnd
COMMENT ON FUNCTION ingestd_staged_rows(regclass) IS 'The rows of one jurisdiction''s staging table (rel, a <schema>.ingestd_staged).';

CREATE VIEW staged_features AS
SELECT s.*
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
CROSS JOIN LATERAL ingestd_staged_rows(c.oid::regclass) s
WHERE c.relname = 'ingestd_staged' AND c.relkind = 'r' AND n.nspname NOT IN ('ingestd', 'public', 'pg_catalog');
COMMENT ON VIEW staged_features IS 'Features of polls in progress, from every jurisdiction''s <schema>.ingestd_staged (polls.staging_schema says which a poll stages into); emptied when the poll is applied or fails.';

-- +goose Down
SELECT set_config('search_path', 'ingestd, public', true);

CREATE UNLOGGED TABLE staged_features_down AS SELECT * FROM staged_features;
DROP VIEW staged_features;
DROP FUNCTION ingestd_staged_rows(regclass);
CREATE UNLOGGED TABLE staged_features (
    poll_id bigint NOT NULL,
    page integer NOT NULL,
    ordinal integer NOT NULL,
    feature_id text NOT NULL,
    srid integer NOT NULL,
    geom_ewkb bytea,
    properties text,
    geom_hash bytea NOT NULL,
    geom_broken boolean NOT NULL DEFAULT false,
    props_hash bytea NOT NULL,
    invalid_feature smallint NOT NULL DEFAULT 0,
    content_hash bytea,
    PRIMARY KEY (poll_id, page, ordinal)
);
COMMENT ON TABLE staged_features IS 'Features of polls in progress, one row per feature as the source sent it; emptied when the poll is applied or fails.';
INSERT INTO staged_features SELECT * FROM staged_features_down;
DROP TABLE staged_features_down;

-- +goose StatementBegin
DO $$
DECLARE
    s record;
BEGIN
    FOR s IN SELECT c.oid::regclass AS rel FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relname = 'ingestd_staged' AND c.relkind = 'r' AND n.nspname NOT IN ('ingestd', 'public', 'pg_catalog')
    LOOP
        EXECUTE format('DROP TABLE %s', s.rel);
    END LOOP;
END
$$;
-- +goose StatementEnd

DROP FUNCTION ingestd_poll_staging(bigint);
ALTER TABLE polls DROP COLUMN staging_schema;
