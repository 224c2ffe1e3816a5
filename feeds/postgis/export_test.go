package postgis

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// SetSmallSnapshot sets the size up to which applies take the small
// snapshot paths; tests of the large paths set 0.
func SetSmallSnapshot(s *Store, features int64) { s.smallSnapshot = features }

// SetLargeUnchangedCheck turns the large snapshots' unchanged check on or
// off; tests of ApplyDiff's own handling of an unchanged layer turn it off.
func SetLargeUnchangedCheck(s *Store, on bool) { s.largeUnchangedCheck = on }

// LargeUnchangedChecks is how many times the large snapshots' unchanged
// check ran, and how many times it found the snapshot unchanged.
func LargeUnchangedChecks(s *Store) (ran, unchanged int64) {
	return s.largeChecks.Load(), s.largeUnchanged.Load()
}

// SetBulkIndexMin sets the staged size from which an apply truncates the
// poll's staging (bulkIndexMin).
func SetBulkIndexMin(s *Store, features int) { s.bulkIndexMin = int64(features) }

// BulkFirstLoads is how many times bulkFirstLoad ran, and how many times it
// fell back to FirstLoad (a repeated id, a failed transform).
func BulkFirstLoads(s *Store) (ran, fellBack int64) {
	return s.bulkLoads.Load(), s.bulkFallbacks.Load()
}

// SetPageIDs sets how many distinct ids per page StagePage counts in
// memory before it leaves their count unknown (NULL).
func SetPageIDs(s *Store, n int) { s.pageIDs = n }

// SetLoadHook sets the hook a first load calls in the middle of its
// transaction (atLoadStep): "bulk keyed" (bulkFirstLoad: the table filled
// and keyed, not yet indexed) and "loaded" (every path: the table built,
// not yet attached nor the poll recorded).
func SetLoadHook(s *Store, hook func(ctx context.Context, tx pgx.Tx, step string) error) {
	s.loadHook = hook
}

// SetAfterPrune makes p tell fn the outcome of each prune.
func SetAfterPrune(p *HistoryPruner, fn func(n int64, err error)) { p.afterPrune = fn }

// SetCitus makes s act as on a Citus coordinator (on: a first load builds
// the layer's key in an ALTER of its own, the large unchanged check is
// left to the diff) or as on a single PostgreSQL.
func SetCitus(s *Store, on bool) {
	if on {
		s.citus.Store(citusYes)
	} else {
		s.citus.Store(citusNo)
	}
}
