package migrations

import (
	"context"
	"database/sql"
)

// SessionLocker is the lock goose takes on the connection it migrates
// through, as Up and DownTo give it.
type SessionLocker interface {
	SessionLock(ctx context.Context, conn *sql.Conn) error
	SessionUnlock(ctx context.Context, conn *sql.Conn) error
}

// NewSessionLocker returns the lock Up and DownTo give goose.
func NewSessionLocker() (SessionLocker, error) { return newUnshardedLocker() }

// ShardingSetting is Citus's schema-based sharding switch.
const ShardingSetting = shardingSetting

// UpTo applies the pending migrations up to version, as Up applies them
// all: a test of one migration's effect stops there.
func UpTo(ctx context.Context, db *sql.DB, version int64) ([]int64, error) {
	return up(ctx, db, version)
}
