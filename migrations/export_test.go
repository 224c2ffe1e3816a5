package migrations

import (
	"context"
	"database/sql"
)

// UpTo applies the pending migrations up to version, as Up applies them
// all: a test of one migration's effect stops there.
func UpTo(ctx context.Context, db *sql.DB, version int64) ([]int64, error) {
	return up(ctx, db, version)
}
