package postgis

import "github.com/jackc/pgx/v5/pgxpool"

// ReservedConns is the size of the reserved pool the daemon gives a
// polling store (WithReservedPool): one connection for the heartbeat and
// one for the polls ending, so that neither waits behind the other's
// slowest statement.
const ReservedConns = 2

// WithReservedPool makes the store write what must not wait behind the
// polls through reserved instead of its pool: the instance's heartbeat and
// retirement, the end of a poll (failed, refused or suspended) and the
// release of a poll's claim. When the polls' fetches and applies hold
// every connection of the pool, a heartbeat queued behind them lapses
// (another instance's sweep then ends this one's polls) and a poll that
// cannot record its end leaves its claim and its staged rows behind. The
// reserved pool's connections are taken only by these short statements.
func WithReservedPool(reserved *pgxpool.Pool) Option {
	return func(s *Store) { s.reserved = reserved }
}

// bookkeeping is the pool of the statements WithReservedPool names: the
// reserved pool, or the store's own without one.
func (s *Store) bookkeeping() *pgxpool.Pool {
	if s.reserved != nil {
		return s.reserved
	}
	return s.pool
}
