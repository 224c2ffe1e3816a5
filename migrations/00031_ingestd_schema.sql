-- ingestd's own tables out of public: every table, partition,
-- view, sequence and function of ingestd moves to schema ingestd, so that
-- public holds PostGIS's objects and an analyst's own, and QGIS's browser
-- lists ingestd's layers under the jurisdictions' schemas only.
--
-- ALTER … SET SCHEMA keeps every row, index, constraint, owned sequence,
-- trigger and grant, and views (and the layers' materialized views) keep
-- pointing at what they read (by oid). Function bodies name tables
-- unqualified: they, feeds/postgis/sql and breaker/pgshare/sql resolve
-- them through search_path, which becomes "ingestd, public" (public for
-- PostGIS's geometry type and functions):
--   - for the database (ALTER DATABASE, when the migrating role may: a
--     superuser or the database's owner), so psql and QGIS find
--     feed_freshness as the docs show it;
--   - for the migrating role itself (ALTER ROLE, a non-superuser's own);
--   - and ingestd's own connections set it in the pool (cmd/ingestd).
-- goose's version table is not moved here: migrations.Up moves it into
-- ingestd once this version made the schema, and DownTo moves it back and
-- drops the schema after the Down (migrations.go, VersionTable), which
-- therefore leaves both in place.

-- +goose Up
CREATE SCHEMA IF NOT EXISTS ingestd;
COMMENT ON SCHEMA ingestd IS 'ingestd''s own tables, views and functions (feed_freshness, polls, dead_letter, features…); the typed layers are in the jurisdictions'' schemas.';
-- +goose StatementBegin
DO $$
DECLARE
    r record;
BEGIN
    -- Relations of public that are not PostGIS's (extension members) nor
    -- goose's; a sequence owned by a column moves with its table.
    FOR r IN
        SELECT c.oid::regclass AS rel, c.relkind FROM pg_class c
        WHERE c.relnamespace = 'public'::regnamespace
          AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
          AND c.relname NOT IN ('goose_db_version', 'goose_db_version_id_seq')
          AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_class'::regclass
                          AND d.objid = c.oid AND d.deptype = 'e')
          AND NOT (c.relkind = 'S' AND EXISTS (SELECT FROM pg_depend d
                   WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i')))
    LOOP
        EXECUTE format('ALTER %s %s SET SCHEMA ingestd',
            CASE r.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
                WHEN 'f' THEN 'FOREIGN TABLE' WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END, r.rel);
    END LOOP;
    FOR r IN
        SELECT p.oid::regprocedure AS fn FROM pg_proc p
        WHERE p.pronamespace = 'public'::regnamespace
          AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass
                          AND d.objid = p.oid AND d.deptype = 'e')
    LOOP
        EXECUTE format('ALTER ROUTINE %s SET SCHEMA ingestd', r.fn);
    END LOOP;
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE format('ALTER ROLE %I SET search_path = ingestd, public', current_user);
    END IF;
    BEGIN
        EXECUTE format('ALTER DATABASE %I SET search_path = ingestd, public', current_database());
    EXCEPTION WHEN insufficient_privilege THEN
        RAISE NOTICE 'ingestd: search_path not set for database %: not its owner', current_database();
    END;
END
$$;
-- +goose StatementEnd
-- The rest of this session (goose's own bookkeeping is qualified).
SELECT set_config('search_path', 'ingestd, public', true);

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT c.oid::regclass AS rel, c.relkind FROM pg_class c
        WHERE c.relnamespace = 'ingestd'::regnamespace
          AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
          AND c.relname <> 'goose_db_version'
          AND NOT (c.relkind = 'S' AND EXISTS (SELECT FROM pg_depend d
                   WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i')))
    LOOP
        EXECUTE format('ALTER %s %s SET SCHEMA public',
            CASE r.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
                WHEN 'f' THEN 'FOREIGN TABLE' WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END, r.rel);
    END LOOP;
    FOR r IN SELECT p.oid::regprocedure AS fn FROM pg_proc p WHERE p.pronamespace = 'ingestd'::regnamespace LOOP
        EXECUTE format('ALTER ROUTINE %s SET SCHEMA public', r.fn);
    END LOOP;
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE format('ALTER ROLE %I RESET search_path', current_user);
    END IF;
    BEGIN
        EXECUTE format('ALTER DATABASE %I RESET search_path', current_database());
    EXCEPTION WHEN insufficient_privilege THEN
        NULL;
    END;
END
$$;
-- +goose StatementEnd
SELECT set_config('search_path', 'public', true);
