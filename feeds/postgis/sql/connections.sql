-- What the server allows of its connections (connections.go), read when an
-- instance starts.

-- name: ServerConnections
-- reserved_connections is PostgreSQL 16's; to_regclass: a database not
-- migrated yet has no instances table.
SELECT current_setting('max_connections')::int,
	current_setting('superuser_reserved_connections')::int + coalesce(current_setting('reserved_connections', true)::int, 0),
	CASE WHEN to_regclass('instances') IS NULL THEN 0
	     ELSE (SELECT count(*) FROM instances WHERE expires_at > now() AND owner <> $1) END
