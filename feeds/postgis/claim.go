package postgis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd/feeds"
)

// ClaimPoll implements feeds.Store: one conditional UPDATE, so that of several
// instances whose ticks fire together exactly one wins, without holding a
// connection (or a session advisory lock) for the length of the poll.
func (s *Store) ClaimPoll(ctx context.Context, feed feeds.FeedInfo, owner string, lease, minGap time.Duration) (bool, error) {
	var one int
	err := s.pool.QueryRow(ctx, sqlQuery("ClaimPoll"),
		feed.Jurisdiction, feed.Feed, owner, lease, minGap).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("postgis: claiming %s/%s: %w", feed.Jurisdiction, feed.Feed, err)
	}
	return true, nil
}

// ReleasePoll implements feeds.Store.
func (s *Store) ReleasePoll(ctx context.Context, feed feeds.FeedInfo, owner string) error {
	_, err := s.bookkeeping().Exec(ctx, sqlQuery("ReleasePoll"),
		feed.Jurisdiction, feed.Feed, owner)
	if err != nil {
		return fmt.Errorf("postgis: releasing %s/%s: %w", feed.Jurisdiction, feed.Feed, err)
	}
	return nil
}
