package postgis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd/feeds"
)

// SuspendPoll implements feeds.Store: the poll ends as failed with cause, the
// feed counts a failure, and the staged pages stay for a resume.
func (s *Store) SuspendPoll(ctx context.Context, feed feeds.FeedInfo, pollID int64, retryAfter time.Time, cause error) error {
	var ra *time.Time
	if !retryAfter.IsZero() {
		ra = &retryAfter
	}
	if err := s.endPollKeepingStaging(ctx, feed, pollID, feeds.PollFailed, ra, cause); err != nil {
		return fmt.Errorf("postgis: suspend poll %d of %s/%s: %w", pollID, feed.Jurisdiction, feed.Feed, err)
	}
	return nil
}

// ResumePoll implements feeds.Store. The poll continues under its own id, so
// its polls row ends up describing the whole snapshot, every page included.
func (s *Store) ResumePoll(ctx context.Context, feed feeds.FeedInfo, pollID int64, wantPage int) (int, error) {
	var next int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var status feeds.PollStatus
		var jur, name, stagingSchema string
		var staged bool
		err := tx.QueryRow(ctx, sqlQuery("LockPoll"), pollID).Scan(&status, &jur, &name, &stagingSchema, &staged)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("%w: no poll %d", feeds.ErrCheckpointLost, pollID)
		case err != nil:
			return err
		case jur != feed.Jurisdiction || name != feed.Feed:
			return fmt.Errorf("poll %d belongs to %s/%s", pollID, jur, name)
		case status == feeds.PollSucceeded:
			return fmt.Errorf("%w: poll %d", feeds.ErrCheckpointApplied, pollID)
		}
		tx, err = stagingOf(ctx, tx, pollID, stagingSchema, staged)
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, sqlQuery("StagedPageNumbers"), pollID)
		if err != nil {
			return err
		}
		pages, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			return err
		}
		next = 0
		for _, p := range pages {
			if int(p) != next {
				break
			}
			next++
		}
		if next < wantPage {
			return fmt.Errorf("%w: poll %d has pages 0..%d staged, the checkpoint needs 0..%d",
				feeds.ErrCheckpointLost, pollID, next-1, wantPage-1)
		}
		// The pages are listed, but a crash of PostgreSQL may have
		// emptied them (staging is unlogged).
		if err := checkStagingWhole(ctx, tx, pollID, feed.Jurisdiction, feed.Feed, "checkpoint", next); err != nil {
			return fmt.Errorf("%w: %w", feeds.ErrCheckpointLost, err)
		}
		// Pages past a gap cannot be trusted to belong with the rest; the
		// resumed fetch stages them again.
		if _, err := tx.Exec(ctx, sqlQuery("DeleteStagedFeaturesFrom"), pollID, next); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, sqlQuery("DeleteStagedPagesFrom"), pollID, next); err != nil {
			return err
		}
		// A delta is proved again once the resumed fetch ends (it may
		// end as a full one).
		if _, err := tx.Exec(ctx, sqlQuery("DeleteStagedDelta"), pollID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, sqlQuery("ResumePoll"), pollID, s.owner); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, sqlQuery("FeedResumed"), feed.Jurisdiction, feed.Feed, pollID)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("postgis: resume poll %d of %s/%s: %w", pollID, feed.Jurisdiction, feed.Feed, err)
	}
	return next, nil
}

// DiscardPoll implements feeds.Store. A poll that is still running (one an
// instance died in) is recorded as failed; a refused or failed poll keeps
// its row as history.
func (s *Store) DiscardPoll(ctx context.Context, feed feeds.FeedInfo, pollID int64, cause error) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, sqlQuery("DiscardPoll"), pollID, feed.Jurisdiction, feed.Feed, s.errorText(cause)); err != nil {
			return err
		}
		return deleteStaging(ctx, tx, pollID)
	})
	if err != nil {
		return fmt.Errorf("postgis: discard poll %d of %s/%s: %w", pollID, feed.Jurisdiction, feed.Feed, err)
	}
	return nil
}

// checkStagingWhole fails with a *feeds.StagingLostError when a page of poll
// pollID (below maxPage; -1: all) that recorded features when it was staged
// has no staged rows left. staged_pages is logged and the staging tables
// are not: PostgreSQL's crash recovery empties them whole, while the
// pages stay listed. Every staged page commits its rows with its
// staged_pages row, so a page that kept any row kept all of them, and one
// index probe per page finds a crash's loss: counting the rows instead would
// read every staged row on every apply. The rows are counted only to report
// a loss.
func checkStagingWhole(ctx context.Context, tx pgx.Tx, pollID int64, jurisdiction, feed, what string, maxPage int) error {
	tx, err := withStaging(ctx, tx, pollID)
	if err != nil {
		return err
	}
	var emptied int
	if _, err := tx.Exec(ctx, sqlQuery("ProbePlanner")); err != nil {
		return err
	}
	err = tx.QueryRow(ctx, sqlQuery("EmptiedPages"), pollID, maxPage).Scan(&emptied)
	if err == nil {
		_, err = tx.Exec(ctx, sqlQuery("ProbePlannerReset"))
	}
	if err != nil || emptied == 0 {
		return err
	}
	var pages int
	var recorded, staged int64
	err = tx.QueryRow(ctx, sqlQuery("StagingLoss"), pollID, maxPage).Scan(&pages, &recorded, &staged)
	if err != nil {
		return err
	}
	return &feeds.StagingLostError{Feed: jurisdiction + "/" + feed, PollID: pollID, What: what,
		Staged: staged, Recorded: recorded, Pages: pages}
}
