-- Optional, after deploy/roles.sql: a login of its own for one ingestd
-- instance (one per host, say, so that pg_stat_activity and the server log
-- tell them apart and one credential can be revoked alone), acting as the
-- owner role. Run by an administrator:
--
--   psql -v ON_ERROR_STOP=1 -v db=ingestd -v owner=ingestd -v login=ingestd_host1 -f deploy/roles-login.sql
--
-- The login is a member of the owner and switches to it at every session
-- start (the `role` setting), so that the per-feed tables it creates at run
-- time belong to the owner like every other ingestd table: a table owned by
-- the login instead would make a later migration, run as the owner, fail
-- on it. It gains no right the owner lacks, and none beyond it: the
-- separation is of credentials, not of privileges (see README, Roles).

CREATE ROLE :"login" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS NOINHERIT IN ROLE :"owner";
ALTER ROLE :"login" IN DATABASE :"db" SET role = :'owner';
GRANT CONNECT ON DATABASE :"db" TO :"login";
