package feeds

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/wfs"
)

// ErrPollInProgress is returned when a feed is asked to poll while a poll of it
// is still running in this process.
var ErrPollInProgress = errors.New("feeds: a poll of this feed is already running")

// PollError is a poll that did not complete. Nothing it fetched was applied.
type PollError struct {
	Feed string
	// PollID is the poll's row in polls (0 if it never got one).
	PollID int64
	Err    error
}

func (e *PollError) Error() string {
	return fmt.Sprintf("feed %s: poll %d failed: %v", e.Feed, e.PollID, e.Err)
}

func (e *PollError) Unwrap() error { return e.Err }

// PollResult describes a completed poll.
type PollResult struct {
	PollID   int64
	Pages    int
	Bytes    int64
	Duration time.Duration
	ApplyResult
}

// Fetcher fetches a layer page by page; *wfs.Client implements it.
type Fetcher interface {
	Fetch(ctx context.Context, layer wfs.Layer, firstPage int, handle wfs.PageFunc) (wfs.FetchStats, error)
}

// poll runs one complete poll of f: every page is staged, and only when the last
// one is in does one transaction apply the snapshot. Any failure before that
// leaves the feed's features exactly as they were.
func (m *Manager) poll(ctx context.Context, f *Feed) (PollResult, error) {
	start := time.Now()
	info := feedInfo(f, start)
	logger := m.logger.With("jurisdiction", f.Jurisdiction, "feed", f.ID)

	ctx, cancel := context.WithTimeout(ctx, f.Timeout.Std())
	defer cancel()

	pollID, err := m.store.BeginPoll(ctx, info)
	if err != nil {
		return PollResult{}, &PollError{Feed: f.Key(), Err: fmt.Errorf("recording poll start: %w", err)}
	}
	logger = logger.With("poll_id", pollID)

	stats, err := m.fetcher.Fetch(ctx, f.Layer(), 0, func(ctx context.Context, page wfs.Page, features wfs.FeatureReader) error {
		_, err := m.store.StagePage(ctx, pollID, page.Index, features)
		return err
	})
	if err == nil {
		var res ApplyResult
		res, err = m.store.Apply(ctx, pollID, info)
		if err == nil {
			r := PollResult{PollID: pollID, Pages: stats.Pages, Bytes: stats.Bytes, Duration: time.Since(start), ApplyResult: res}
			logger.Info("poll succeeded", "pages", r.Pages, "features", res.Features, "added", res.Added,
				"modified", res.Modified, "removed", res.Removed, "bytes", r.Bytes, "duration_ms", r.Duration.Milliseconds())
			return r, nil
		}
		err = fmt.Errorf("applying snapshot: %w", err)
	}

	// Record the failure even when the poll was cancelled (shutdown, deadline):
	// the operator must see that this attempt did not land.
	recordCtx, cancelRecord := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancelRecord()
	if ferr := m.store.FailPoll(recordCtx, pollID, info, err); ferr != nil {
		logger.Error("recording failed poll", "error", ferr)
	}
	level := slog.LevelWarn
	var open *breaker.OpenError
	if errors.As(err, &open) {
		logger.Warn("poll refused: origin is open", "origin", open.Origin, "retry_after", open.RetryAfter)
	} else {
		if ctx.Err() == nil {
			level = slog.LevelError
		}
		logger.Log(ctx, level, "poll failed", "error", err, "pages_staged", stats.Pages, "duration_ms", time.Since(start).Milliseconds())
	}
	return PollResult{}, &PollError{Feed: f.Key(), PollID: pollID, Err: err}
}

// feedInfo describes f to the store.
func feedInfo(f *Feed, now time.Time) FeedInfo {
	info := FeedInfo{
		Jurisdiction:     f.Jurisdiction,
		Feed:             f.ID,
		Kind:             f.Kind,
		URL:              wfs.RedactURL(f.URL),
		ExpectedInterval: f.ExpectedInterval(now),
	}
	if u, err := url.Parse(f.URL); err == nil {
		info.Origin = breaker.Origin(u)
	}
	return info
}
