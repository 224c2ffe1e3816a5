package postgis

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// atLoadStep calls the test hook, if any, at a step of a first load: the
// feed's table is filled but the transaction that makes it the feed's has
// not committed, so nothing of it may be visible, and a crash there must
// leave the feed as it was (TestFirstLoadCrashLeavesNothing).
func (s *Store) atLoadStep(ctx context.Context, tx pgx.Tx, step string) error {
	if s.loadHook == nil {
		return nil
	}
	return s.loadHook(ctx, tx, step)
}
