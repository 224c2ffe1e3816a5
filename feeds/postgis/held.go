package postgis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd/feeds"
)

// ErrNoHeld is returned (wrapped) by AcceptHeld and RejectHeld when the feed
// has no held snapshot: none was held, an operator already decided, or a
// later poll superseded it.
var ErrNoHeld = errors.New("postgis: no held snapshot")

// HeldSnapshot is a snapshot a guard holds, as `ingestd held list` shows it.
type HeldSnapshot struct {
	Jurisdiction, Feed string
	PollID             int64
	HeldAt             time.Time
	Reason             string
	// Previous is the feed's current feature count; Snapshot the held
	// snapshot's distinct features.
	Previous, Snapshot int
}

// ListHeld returns the held snapshots, oldest first.
func (s *Store) ListHeld(ctx context.Context) ([]HeldSnapshot, error) {
	rows, err := s.pool.Query(ctx, sqlQuery("ListHeld"))
	if err != nil {
		return nil, fmt.Errorf("postgis: list held snapshots: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (HeldSnapshot, error) {
		var h HeldSnapshot
		err := r.Scan(&h.Jurisdiction, &h.Feed, &h.PollID, &h.HeldAt, &h.Reason, &h.Previous, &h.Snapshot)
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgis: list held snapshots: %w", err)
	}
	return out, nil
}

// AcceptHeld applies the feed's held snapshot without asking the guards, as
// if its poll had just succeeded, and returns what it changed. The feed's
// conform is not at hand: the rows of the features the snapshot removed
// leave its common layer, the others are conformed again at its next
// applied poll (AcceptHeldWith conforms them now).
//
// A snapshot that is no longer whole (PostgreSQL's crash recovery empties
// the unlogged staged_features, while the pages and counts recorded when the
// snapshot was staged and held stay) is not applied: what is left would
// remove every feature of the lost pages. It is discarded instead (the poll
// ends as rejected, the hold is cleared) and the error wraps a
// *feeds.StagingLostError: the feed must be polled again.
func (s *Store) AcceptHeld(ctx context.Context, jurisdiction, feed string) (feeds.ApplyResult, error) {
	return s.acceptHeld(ctx, jurisdiction, feed, nil, false)
}

// AcceptHeldWith is AcceptHeld with the feed's conform at hand (from the
// configuration; nil: the feed has none): its common rows follow the
// snapshot in the same transaction, as an applied poll's do.
func (s *Store) AcceptHeldWith(ctx context.Context, jurisdiction, feed string, common *feeds.CommonConform) (feeds.ApplyResult, error) {
	return s.acceptHeld(ctx, jurisdiction, feed, common, true)
}

func (s *Store) acceptHeld(ctx context.Context, jurisdiction, feed string, common *feeds.CommonConform, commonKnown bool) (feeds.ApplyResult, error) {
	var r *applyRun
	var pollID int64
	var lost *feeds.StagingLostError
	err := s.inApplyTx(ctx, func(tx pgx.Tx) error {
		var err error
		if pollID, err = lockHeld(ctx, tx, jurisdiction, feed); err != nil {
			return err
		}
		// Every statement of the apply names the poll's staging table.
		if tx, err = withStaging(ctx, tx, pollID); err != nil {
			return err
		}
		if lost, err = heldWhole(ctx, tx, pollID, jurisdiction, feed); err != nil || lost != nil {
			if err == nil {
				err = s.discardHeld(ctx, tx, pollID, jurisdiction, feed, "lost: "+lost.Error())
			}
			return err
		}
		r = newApplyRun(tx, pollID, jurisdiction, feed, nil, nil)
		r.common, r.commonKnown = common, commonKnown
		return s.applySnapshot(ctx, r)
	})
	if err == nil && lost != nil {
		s.logger.ErrorContext(ctx, "held snapshot lost: discarded, not applied", "poll_id", pollID,
			"jurisdiction", jurisdiction, "feed", feed, "staged", lost.Staged, "recorded", lost.Recorded)
		err = lost
	}
	if err != nil {
		return feeds.ApplyResult{}, fmt.Errorf("postgis: accept held snapshot of %s/%s: %w", jurisdiction, feed, err)
	}
	out := r.out
	s.logger.WarnContext(ctx, "held snapshot accepted", "poll_id", pollID, "jurisdiction", jurisdiction,
		"feed", feed, "features", out.res.Features, "added", out.res.Added, "modified", out.res.Modified,
		"removed", out.res.Removed)
	return out.res, nil
}

// RejectHeld discards the feed's held snapshot: its poll ends as rejected,
// its staging is deleted, and the feed's features stay as they were.
func (s *Store) RejectHeld(ctx context.Context, jurisdiction, feed string) error {
	var pollID int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if pollID, err = lockHeld(ctx, tx, jurisdiction, feed); err != nil {
			return err
		}
		return s.discardHeld(ctx, tx, pollID, jurisdiction, feed, "")
	})
	if err != nil {
		return fmt.Errorf("postgis: reject held snapshot of %s/%s: %w", jurisdiction, feed, err)
	}
	s.logger.WarnContext(ctx, "held snapshot rejected", "poll_id", pollID, "jurisdiction", jurisdiction, "feed", feed)
	return nil
}

// lockHeld takes the feed's apply lock and returns its held poll, locked.
func lockHeld(ctx context.Context, tx pgx.Tx, jurisdiction, feed string) (int64, error) {
	if err := lockFeed(ctx, tx, jurisdiction, feed); err != nil {
		return 0, err
	}
	var pollID int64
	err := tx.QueryRow(ctx, sqlQuery("LockHeldPoll"), jurisdiction, feed).Scan(&pollID)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, ErrNoHeld
	}
	return pollID, err
}

// discardHeld ends the held poll as rejected, with why ("" keeps its hold
// reason, prefixed "rejected: "), clears the feed's hold and deletes the
// snapshot's staging.
func (s *Store) discardHeld(ctx context.Context, tx pgx.Tx, pollID int64, jurisdiction, feed, why string) error {
	if _, err := tx.Exec(ctx, sqlQuery("RejectHeldPoll"), pollID, s.errorText(errors.New(why))); err != nil {
		return err
	}
	if why != "" {
		// feed_freshness shows last_error: the operator sees why nothing
		// was applied.
		if _, err := tx.Exec(ctx, sqlQuery("HeldDiscardedError"), jurisdiction, feed, s.errorText(errors.New(why))); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(ctx, sqlQuery("ClearHold"), jurisdiction, feed); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, sqlQuery("RejectSchemaChanges"), pollID); err != nil {
		return err
	}
	return deleteStaging(ctx, tx, pollID)
}

// heldWhole checks the held snapshot of poll pollID against what was
// recorded when it was staged (staged_pages) and when it was held (the
// poll's pages, features and duplicate ids, which are logged as well; they
// also catch a snapshot held before staged_pages was logged, whose pages a
// crash emptied with its rows). It returns the loss, or nil when whole.
func heldWhole(ctx context.Context, tx pgx.Tx, pollID int64, jurisdiction, feed string) (*feeds.StagingLostError, error) {
	err := checkStagingWhole(ctx, tx, pollID, jurisdiction, feed, "held snapshot", -1)
	var lost *feeds.StagingLostError
	if errors.As(err, &lost) {
		return lost, nil
	}
	if err != nil {
		return nil, err
	}
	var wantPages, havePages int
	var want, have int64
	if tx, err = withStaging(ctx, tx, pollID); err != nil {
		return nil, err
	}
	err = tx.QueryRow(ctx, sqlQuery("HeldRecorded"), pollID).Scan(&wantPages, &want, &havePages, &have)
	if err != nil {
		return nil, err
	}
	if havePages < wantPages || have < want {
		return &feeds.StagingLostError{Feed: jurisdiction + "/" + feed, PollID: pollID, What: "held snapshot",
			Staged: have, Recorded: want, Pages: wantPages}, nil
	}
	return nil, nil
}
