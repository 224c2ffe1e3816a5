-- onecopy_ddl_count.sql — decision 0200: the DDL commands a feed's first load
-- runs, counted by an event trigger in a database of the bench's own.
--
--   psql "$DATABASE_URL" -X -v on=1 -f scripts/onecopy_ddl_count.sql   # install, empty the log
--   ingestd poll -config … JURISDICTION/NEW_FEED                        # a first load
--   psql "$DATABASE_URL" -X -v on=0 -f scripts/onecopy_ddl_count.sql   # print, uninstall
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
\if :on
CREATE TABLE IF NOT EXISTS public.onecopy_ddl_log (at timestamptz DEFAULT clock_timestamp(), tag text, obj text);
TRUNCATE public.onecopy_ddl_log;
CREATE OR REPLACE FUNCTION public.onecopy_ddl_log_fn() RETURNS event_trigger LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
    FOR r IN SELECT * FROM pg_event_trigger_ddl_commands() LOOP
        INSERT INTO public.onecopy_ddl_log (tag, obj) VALUES (r.command_tag, r.object_identity);
    END LOOP;
END
$$;
DROP EVENT TRIGGER IF EXISTS onecopy_ddl_log_trg;
CREATE EVENT TRIGGER onecopy_ddl_log_trg ON ddl_command_end EXECUTE FUNCTION public.onecopy_ddl_log_fn();
\else
SELECT tag, obj FROM public.onecopy_ddl_log ORDER BY at;
SELECT count(*) AS ddl_commands FROM public.onecopy_ddl_log;
DROP EVENT TRIGGER IF EXISTS onecopy_ddl_log_trg;
DROP FUNCTION IF EXISTS public.onecopy_ddl_log_fn();
DROP TABLE IF EXISTS public.onecopy_ddl_log;
\endif
