-- Moves an existing ingestd database, migrated and run until now as a
-- superuser, to the least-privilege setup of deploy/roles.sql: the owner
-- role takes over every ingestd object (tables, the per-feed tables, views,
-- sequences, functions, the migration table), PostGIS stays the
-- superuser's. Stop every ingestd instance first; run by an administrator
-- (a superuser), once:
--
--   psql -v ON_ERROR_STOP=1 -v db=ingestd -v owner=ingestd -f deploy/roles-existing.sql
--
-- then point DATABASE_URL at the owner role and start ingestd again. Running
-- it twice is harmless.

-- psql does not expand :variables inside DO blocks; they read the owner's
-- name from this session setting instead.
SELECT set_config('ingestd.owner', :'owner', false);
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = current_setting('ingestd.owner')) THEN
        EXECUTE format('CREATE ROLE %I LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS',
            current_setting('ingestd.owner'));
    END IF;
END
$$;
REVOKE ALL ON DATABASE :"db" FROM PUBLIC;
GRANT CONNECT ON DATABASE :"db" TO :"owner";
-- CREATE: a schema per jurisdiction for its typed layers (raleigh.zoning),
-- made by the apply of its first feed; owning schemas is all it allows.
GRANT CREATE ON DATABASE :"db" TO :"owner";
-- ingestd's tables are in schema ingestd (migration 31), PostGIS's in
-- public: every role connecting finds feed_freshness, polls… unqualified.
ALTER DATABASE :"db" SET search_path = ingestd, public;

\connect :"db"

GRANT USAGE, CREATE ON SCHEMA public TO :"owner";
SELECT set_config('ingestd.owner', :'owner', false);
DO $$
DECLARE
    new_owner text := current_setting('ingestd.owner');
    r record;
BEGIN
    -- Schema ingestd (version 31) and, below, what it holds.
    IF to_regnamespace('ingestd') IS NOT NULL THEN
        EXECUTE format('ALTER SCHEMA ingestd OWNER TO %I', new_owner);
    END IF;
    -- Relations of schema public that PostGIS did not create. Indexes follow
    -- their tables; a serial's sequence follows its table (and refuses a
    -- change of its own).
    FOR r IN
        SELECT c.oid::regclass AS rel, c.relkind FROM pg_class c
        WHERE c.relnamespace IN ('public'::regnamespace, to_regnamespace('ingestd'))
          AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
          AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_class'::regclass
                          AND d.objid = c.oid AND d.deptype = 'e')
          AND NOT (c.relkind = 'S' AND EXISTS (SELECT FROM pg_depend d
                   WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i')))
    LOOP
        EXECUTE format('ALTER %s %s OWNER TO %I',
            CASE r.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
                WHEN 'f' THEN 'FOREIGN TABLE' WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END,
            r.rel, new_owner);
    END LOOP;
    -- Functions of schema public that PostGIS did not create (the partition
    -- names, the breaker-state triggers).
    FOR r IN
        SELECT p.oid::regprocedure AS fn FROM pg_proc p
        WHERE p.pronamespace IN ('public'::regnamespace, to_regnamespace('ingestd'))
          AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass
                          AND d.objid = p.oid AND d.deptype = 'e')
    LOOP
        EXECUTE format('ALTER ROUTINE %s OWNER TO %I', r.fn, new_owner);
    END LOOP;
    -- The jurisdictions' schemas of typed layers (version 30), and the
    -- layers in them: the owner rebuilds them at each schema change.
    FOR r IN
        SELECT c.oid::regclass AS rel, c.relkind, c.relnamespace::regnamespace AS nsp FROM feed_schemas s
        JOIN pg_class c ON c.oid = to_regclass(s.view_name)
        WHERE c.relnamespace <> 'public'::regnamespace AND to_regproc('ingestd_feed_layer') IS NOT NULL
    LOOP
        EXECUTE format('ALTER SCHEMA %s OWNER TO %I', r.nsp, new_owner);
        EXECUTE format('ALTER %s %s OWNER TO %I', CASE r.relkind WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'r' THEN 'TABLE' ELSE 'VIEW' END,
            r.rel, new_owner);
    END LOOP;
    -- Each jurisdiction's staging and history tables (versions 46 and 47),
    -- with their schema (a jurisdiction whose first poll failed has no
    -- layer yet): every poll writes them.
    FOR r IN
        SELECT c.oid::regclass AS rel, c.relnamespace::regnamespace AS nsp FROM pg_class c
        WHERE c.relname IN ('ingestd_staged', 'ingestd_history') AND c.relkind = 'r'
          AND c.relnamespace NOT IN ('public'::regnamespace, 'pg_catalog'::regnamespace)
          AND c.relnamespace IS DISTINCT FROM to_regnamespace('ingestd')
    LOOP
        EXECUTE format('ALTER SCHEMA %s OWNER TO %I', r.nsp, new_owner);
        EXECUTE format('ALTER TABLE %s OWNER TO %I', r.rel, new_owner);
    END LOOP;
END
$$;
