package postgis

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// ServerConnections is what the server allows of its connections and how
// many ingestd instances hold a share of them, read at an instance's start.
type ServerConnections struct {
	// MaxConnections and Reserved are the server's max_connections and
	// the slots it keeps for superusers (superuser_reserved_connections,
	// and reserved_connections where the server has it).
	MaxConnections, Reserved int
	// Others is the live instances besides self (table instances).
	Others int
}

// ReadServerConnections reads the server's connection settings and the live
// instances other than self (instances.owner). A database not migrated yet
// has no instances table: none is running then.
func ReadServerConnections(ctx context.Context, pool *pgxpool.Pool, self string) (ServerConnections, error) {
	var c ServerConnections
	err := pool.QueryRow(ctx, sqlQuery("ServerConnections"), self).Scan(&c.MaxConnections, &c.Reserved, &c.Others)
	if err != nil {
		return c, fmt.Errorf("postgis: reading max_connections: %w", err)
	}
	return c, nil
}
