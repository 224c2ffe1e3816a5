-- The safe casts PostgreSQL did not inline.
--
-- A SQL function is inlined into the query that calls it only when its
-- body is a single expression (no FROM) no more volatile than the
-- function is declared. Three of the safe casts were not, and each call
-- went through the SQL function executor, several times the cost of the
-- inlined expression (EXPLAIN VERBOSE shows the call; an inlined cast
-- shows its CASE; BenchmarkSafeCasts in feeds/postgis times both):
--
-- - ingestd_as_double read ingestd_as_numeric in a FROM clause;
-- - ingestd_as_date and ingestd_as_timestamptz cast text to a date, which
--   PostgreSQL declares STABLE (the text's reading depends on DateStyle
--   and TimeZone), inside functions declared IMMUTABLE; they are declared
--   STABLE now, and inlined. Their values do not change: the text they cast is ISO 8601 by their own check, and it
--   carries a zone (+00 when it had none).
--
-- A delta's layer refresh spent most of its time in these calls. STABLE is
-- all a typed select needs: no index or generated column uses the casts.

-- +goose Up
SELECT set_config('search_path', 'ingestd, public', true);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_as_double(v jsonb) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN ingestd_as_numeric(v) = 0 OR abs(ingestd_as_numeric(v)) BETWEEN 1e-307 AND 1e308
        THEN ingestd_as_numeric(v)::double precision END
$$;
-- +goose StatementEnd
ALTER FUNCTION ingestd_as_date(jsonb) STABLE;
ALTER FUNCTION ingestd_as_timestamptz(jsonb) STABLE;

-- +goose Down
SELECT set_config('search_path', 'ingestd, public', true);

ALTER FUNCTION ingestd_as_timestamptz(jsonb) IMMUTABLE;
ALTER FUNCTION ingestd_as_date(jsonb) IMMUTABLE;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ingestd_as_double(v jsonb) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN n = 0 OR abs(n) BETWEEN 1e-307 AND 1e308 THEN n::double precision END
    FROM (SELECT ingestd_as_numeric(v) AS n) x
$$;
-- +goose StatementEnd
