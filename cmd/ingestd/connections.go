package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/feeds/postgis"
)

// listenerConns is the connections a polling instance holds outside its
// pool: the shared breaker state's LISTEN (pgshare).
const listenerConns = 1

// connectionBudget is what one polling instance needs of the server's
// connections and what the server allows, read at start.
type connectionBudget struct {
	// Pool is the pool's size (pool_max_conns) and Need the instance's
	// whole need: the pool and the listener.
	Pool, Need int
	// MaxConnections and Reserved are the server's max_connections and
	// the slots it keeps for superusers (superuser_reserved_connections,
	// and reserved_connections where the server has it).
	MaxConnections, Reserved int
	// Others is the live instances besides this one (table instances).
	Others int
}

// Allowed is the connections ordinary roles may open.
func (b connectionBudget) Allowed() int { return b.MaxConnections - b.Reserved }

// Fits is how many instances of this size the server holds at once.
func (b connectionBudget) Fits() int { return b.Allowed() / b.Need }

// checkConnections reads the server's connection settings and the live
// instances, and says at start what this instance needs: an error when the
// server cannot hold even this instance's pool, a warning when the
// instances running with this one (each assumed of this size) would need
// more than the server allows — connections past max_connections are
// refused, and polls fail on them instead of waiting in line — and an
// info line otherwise. self is this instance's id (instances.owner).
func checkConnections(ctx context.Context, pool *pgxpool.Pool, self string, logger *slog.Logger) (connectionBudget, error) {
	b := connectionBudget{Pool: int(pool.Config().MaxConns)}
	b.Need = b.Pool + listenerConns
	server, err := postgis.ReadServerConnections(ctx, pool, self)
	if err != nil {
		return b, fmt.Errorf("database: %w", err)
	}
	b.MaxConnections, b.Reserved, b.Others = server.MaxConnections, server.Reserved, server.Others
	attrs := []any{"pool_max_conns", b.Pool, "connections_needed", b.Need, "max_connections", b.MaxConnections,
		"reserved_connections", b.Reserved, "other_instances", b.Others}
	switch {
	case b.Need > b.Allowed():
		return b, fmt.Errorf("database: this instance needs up to %d connections (a pool of %d, pool_max_conns, plus %d for the shared breaker state) "+
			"but the server allows %d (max_connections %d less %d reserved): set pool_max_conns lower in DATABASE_URL or raise max_connections",
			b.Need, b.Pool, listenerConns, b.Allowed(), b.MaxConnections, b.Reserved)
	case (b.Others+1)*b.Need > b.Allowed():
		logger.Warn(fmt.Sprintf("database connections: %d instances of %d connections need %d, more than the %d the server allows "+
			"(max_connections %d less %d reserved); past it connections are refused and polls fail: "+
			"set pool_max_conns to at most %d in each instance's DATABASE_URL, or raise max_connections to %d",
			b.Others+1, b.Need, (b.Others+1)*b.Need, b.Allowed(), b.MaxConnections, b.Reserved,
			b.Allowed()/(b.Others+1)-listenerConns, (b.Others+1)*b.Need+b.Reserved), attrs...)
	default:
		logger.Info(fmt.Sprintf("database connections: this instance needs up to %d; %d instances of this size fit the server's %d (max_connections %d less %d reserved)",
			b.Need, b.Fits(), b.Allowed(), b.MaxConnections, b.Reserved), attrs...)
	}
	return b, nil
}
