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
