package postgis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/source"
)

// AppliedValidators implements feeds.Store: feed_status.validators, which
// only an applied snapshot sets (RecordAppliedFeed) and a failed, refused
// or held poll clears, when feed_status.validators_for is requestKey.
func (s *Store) AppliedValidators(ctx context.Context, feed feeds.FeedInfo, requestKey string) (source.Validators, error) {
	var v *source.Validators
	err := s.pool.QueryRow(ctx, sqlQuery("AppliedValidators"), feed.Jurisdiction, feed.Feed, requestKey).Scan(&v)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return source.Validators{}, nil
	case err != nil:
		return source.Validators{}, fmt.Errorf("postgis: validators of %s/%s: %w", feed.Jurisdiction, feed.Feed, err)
	case v == nil:
		return source.Validators{}, nil
	}
	return *v, nil
}

// RecordFetch implements feeds.Store. Bytes add up over the parts of a
// resumed poll; the validators are the last part's (a one-request layer
// has one part).
func (s *Store) RecordFetch(ctx context.Context, pollID int64, bytes int64, v source.Validators, requestKey string) error {
	var jv *source.Validators
	var key *string
	if !v.IsZero() {
		jv, key = &v, &requestKey
	}
	if _, err := s.pool.Exec(ctx, sqlQuery("RecordFetch"), pollID, bytes, jv, key); err != nil {
		return fmt.Errorf("postgis: record fetch of poll %d: %w", pollID, err)
	}
	return nil
}

// RecordQueueWait implements feeds.Store.
func (s *Store) RecordQueueWait(ctx context.Context, pollID int64, wait time.Duration) error {
	if _, err := s.pool.Exec(ctx, sqlQuery("RecordQueueWait"), pollID, wait); err != nil {
		return fmt.Errorf("postgis: record the queue wait of poll %d: %w", pollID, err)
	}
	return nil
}

// RecordNotModified implements feeds.Store: the poll succeeds with nothing
// staged and nothing written to the feed's features, and the feed's
// last_success_at (its freshness) moves to now.
func (s *Store) RecordNotModified(ctx context.Context, pollID int64, feed feeds.FeedInfo) (feeds.ApplyResult, error) {
	var n int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockFeed(ctx, tx, feed.Jurisdiction, feed.Feed); err != nil {
			return err
		}
		stx, err := lockRunningPoll(ctx, tx, pollID, feed)
		if err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, sqlQuery("RecordNotModifiedFeed"), feed.Jurisdiction, feed.Feed, pollID).Scan(&n); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, sqlQuery("RecordNotModifiedPoll"), pollID, n); err != nil {
			return err
		}
		// A fetcher that answered "not modified" staged nothing; a page
		// it staged anyway must not linger.
		if stx == nil {
			return nil // the jurisdiction has no staging table: nothing was staged
		}
		return deleteStaging(ctx, stx, pollID)
	})
	if err != nil {
		return feeds.ApplyResult{}, fmt.Errorf("postgis: record not-modified poll %d of %s/%s: %w", pollID, feed.Jurisdiction, feed.Feed, err)
	}
	return feeds.ApplyResult{Features: n, Unchanged: n}, nil
}
