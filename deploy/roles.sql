-- One-time setup of ingestd's database, run by a PostgreSQL administrator
-- (a superuser) before the first `ingestd migrate`:
--
--   psql -v ON_ERROR_STOP=1 -v db=ingestd -v owner=ingestd -f deploy/roles.sql
--   psql -c '\password ingestd'       # or use certificate / peer authentication
--
-- After it, `ingestd migrate` and `ingestd run` connect as the owner role and
-- never need a superuser: the only step that does (CREATE EXTENSION postgis)
-- is done here. The owner role owns ingestd's tables, functions and the
-- per-feed tables the daemon creates as partitions of `features` at run time
-- (PostgreSQL lets only the owner of a partitioned table add partitions, and
-- only a table's owner run ANALYZE on it). It is not a superuser, cannot
-- create databases or roles, does not own the database (so it cannot alter
-- or drop it, nor create schemas), does not own the extension (so it cannot
-- drop or replace PostGIS), and may connect to this database only.
--
-- The file is plain SQL apart from psql's :variables and one \connect; run
-- it statement by statement, one per line.

CREATE ROLE :"owner" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
CREATE DATABASE :"db";
-- Nobody else connects by default; grant CONNECT to readers explicitly.
REVOKE ALL ON DATABASE :"db" FROM PUBLIC;
GRANT CONNECT ON DATABASE :"db" TO :"owner";
-- CREATE: a schema per jurisdiction for its typed layers (raleigh.zoning),
-- made by the apply of its first feed; owning schemas is all it allows.
GRANT CREATE ON DATABASE :"db" TO :"owner";
-- ingestd's tables are in schema ingestd (migration 31), PostGIS's in
-- public: every role connecting finds feed_freshness, polls… unqualified.
ALTER DATABASE :"db" SET search_path = ingestd, public;

\connect :"db"

-- Needs a superuser: PostGIS is not a trusted extension.
CREATE EXTENSION IF NOT EXISTS postgis;
-- ingestd's objects live in schema public (PostgreSQL 15 no longer lets
-- every role create there), beside PostGIS's.
GRANT USAGE, CREATE ON SCHEMA public TO :"owner";
