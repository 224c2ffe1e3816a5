package feeds

import (
	"context"
	"time"

	"github.com/ingestd/ingestd/wfs"
)

// Store is where polls land. feeds/postgis implements it; main wires it in.
//
// A poll stages pages as they arrive and applies them in one step at the end,
// so a poll that does not finish changes nothing a reader sees.
type Store interface {
	// RegisterFeeds records the configured feeds (so that feed_freshness lists
	// feeds never polled) with their expected interval between polls.
	RegisterFeeds(ctx context.Context, feeds []FeedInfo) error
	// LastSuccess returns, per feed key ("jurisdiction/feed"), when its last
	// successful poll applied; feeds that never succeeded are absent.
	LastSuccess(ctx context.Context) (map[string]time.Time, error)
	// BeginPoll records the start of a poll and returns its id.
	BeginPoll(ctx context.Context, feed FeedInfo) (pollID int64, err error)
	// StagePage copies one page of features into the poll's staging area. It
	// stages all of the page or none of it, and returns how many it staged.
	StagePage(ctx context.Context, pollID int64, page int, features wfs.FeatureReader) (int, error)
	// Apply replaces the feed's features with everything the poll staged, in
	// one transaction, and records the poll as succeeded.
	Apply(ctx context.Context, pollID int64, feed FeedInfo) (ApplyResult, error)
	// FailPoll records the poll as failed with pollErr, discards what it
	// staged and leaves the feed's features untouched.
	FailPoll(ctx context.Context, pollID int64, feed FeedInfo, pollErr error) error
}

// FeedInfo identifies a feed to the store.
type FeedInfo struct {
	Jurisdiction string
	Feed         string
	Kind         string
	URL          string // credentials redacted
	Origin       string
	// ExpectedInterval is the time between two scheduled polls.
	ExpectedInterval time.Duration
}

// ApplyResult counts what applying a snapshot changed.
type ApplyResult struct {
	Features  int // features in the snapshot
	Added     int
	Modified  int
	Removed   int
	Unchanged int
}
