-- The change feed (issue 26).
SELECT a #>> '{b}' FROM t; -- a path, not an issue
-- see #42
