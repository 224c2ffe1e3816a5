package postgis

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd/feeds"
)

// PrunedFeed is a feed that Prune marked removed (or would, on a dry run),
// with the open dead letters it abandoned.
type PrunedFeed struct {
	Jurisdiction, Feed string
	// Letters are the ids of the feed's open dead letters.
	Letters []int64
}

// Prune is the explicit, operator-run removal (`ingestd feeds prune`): every
// feed absent from keep (a whole configuration) that is still marked
// configured, or still has an open dead letter, is marked removed, its open
// dead letters are abandoned ("pruned") and their checkpoints' staging is
// deleted, and their rows in common layers are deleted (a common layer holds
// the configured feeds' rows). Features and history stay. With dryRun nothing changes and the
// result says what would. Start-up, reloads and one-off commands never do
// this: the configuration one instance has says nothing of the others'.
//
// The dead_letter rows are written here rather than through package
// deadletter so that the feeds and their letters change in one transaction.
func (s *Store) Prune(ctx context.Context, keep []feeds.FeedInfo, dryRun bool) ([]PrunedFeed, error) {
	jur, feed := make([]string, len(keep)), make([]string, len(keep))
	for i, f := range keep {
		jur[i], feed[i] = f.Jurisdiction, f.Feed
	}
	var out []PrunedFeed
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, sqlQuery("PruneCandidates"), jur, feed)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (PrunedFeed, error) {
			var p PrunedFeed
			err := r.Scan(&p.Jurisdiction, &p.Feed, &p.Letters)
			return p, err
		})
		if err != nil || dryRun || len(out) == 0 {
			return err
		}
		pj, pf := make([]string, len(out)), make([]string, len(out))
		var letters []int64
		for i, p := range out {
			pj[i], pf[i] = p.Jurisdiction, p.Feed
			letters = append(letters, p.Letters...)
		}
		if _, err := tx.Exec(ctx, sqlQuery("UnconfigureFeeds"), pj, pf); err != nil {
			return err
		}
		if err := retirePrunedCommonRows(ctx, tx, pj, pf); err != nil {
			return err
		}
		if len(letters) == 0 {
			return nil
		}
		rows, err = tx.Query(ctx, sqlQuery("AbandonPrunedLetters"), letters)
		if err != nil {
			return err
		}
		polls, err := pgx.CollectRows(rows, pgx.RowTo[*int64])
		if err != nil {
			return err
		}
		for _, id := range polls {
			if id == nil {
				continue
			}
			// A checkpoint being replayed right now is left to its
			// replay; any other's pages will never be resumed.
			stx, err := withStaging(ctx, tx, *id)
			if err != nil {
				return err
			}
			if _, err := stx.Exec(ctx, sqlQuery("DeletePrunedStagedFeatures"), *id); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, sqlQuery("DeletePrunedStagedPages"), *id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgis: prune feeds: %w", err)
	}
	return out, nil
}

// retirePrunedCommonRows deletes the pruned feeds' rows from the common
// layers they conformed into.
func retirePrunedCommonRows(ctx context.Context, tx pgx.Tx, jurisdictions, feedIDs []string) error {
	rows, err := tx.Query(ctx, sqlQuery("CommonFeedsOf"), jurisdictions, feedIDs)
	if err != nil {
		return err
	}
	type commonFeed struct{ jurisdiction, feed, layer string }
	common, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (commonFeed, error) {
		var c commonFeed
		err := r.Scan(&c.jurisdiction, &c.feed, &c.layer)
		return c, err
	})
	if err != nil {
		return err
	}
	for _, c := range common {
		if err := retireCommonRows(ctx, tx, c.jurisdiction, c.feed, c.layer); err != nil {
			return err
		}
	}
	return nil
}
