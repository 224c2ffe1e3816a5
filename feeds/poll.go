package feeds

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/deadletter"
	"github.com/ingestd/ingestd/pollbudget"
	"github.com/ingestd/ingestd/redact"
	"github.com/ingestd/ingestd/source"
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
	// NotModified: the server proved the layer unchanged since the last
	// applied snapshot (an HTTP 304, or the kind's own version check);
	// nothing was fetched or written, and the feed is fresh as of now.
	NotModified bool
	ApplyResult
}

// Fetcher fetches a layer page by page: each kind's client implements it
// (source.Fetcher, in package source's types only, so that a kind's
// package needs neither feeds nor another kind's package), and *Fetchers
// for every kind, picking by the layer's.
type Fetcher = source.Fetcher

// What a kind does differently from the others is behind the Fetcher and
// these optional interfaces, so that a poll never asks which kind it
// polls: *Fetchers implements each by handing the layer to its kind's
// fetcher, and a fetcher that lacks one gets the default its doc names.

// PageURLer is implemented by a fetcher that can name the request of a
// page of layer (credentials redacted): the URL a parked poll's dead letter
// names. Without it, the letter names the layer's URL.
type PageURLer interface {
	PageURL(layer source.Layer, page int) string
}

// Restarter is implemented by a fetcher whose kind cannot prove that the
// pages a parked poll staged still belong to the server's current layer
// (Socrata: see socrata.Client.RestartReason). A poll of such a layer
// resumed at page n > 0 drops its staged pages and fetches from the first
// page: resuming would apply a snapshot the server never had when the
// layer changed while the poll was parked. Without it, a resumed poll
// proves its pages by reading page n-1 again (PageRereader), or fetches
// from page n.
type Restarter interface {
	// RestartReason says why a resumed poll of layer must start over, for
	// the log; "" lets it resume.
	RestartReason(layer source.Layer) string
}

// poll runs one complete poll of f: every page is staged, and only when the last
// one is in does one transaction apply the snapshot. Any failure before that
// leaves the feed's features exactly as they were.
//
// With letter nil it is a fresh poll from page 0; a refusal by an open breaker
// or a failure after retries then parks it in the dead-letter queue (when the
// manager has one) with its staged pages kept. With letter set it resumes that
// dead letter's checkpoint, and a new deferral is returned as a
// *deadletter.DeferError for the replayer to re-park.
func (m *Manager) poll(ctx context.Context, f *config.Feed, letter *deadletter.Letter, slotWait time.Duration) (PollResult, error) {
	m.metrics.running.Inc()
	defer m.metrics.running.Dec()
	start := m.now()
	res, err := m.pollOnce(ctx, f, letter, slotWait)
	end := m.now()
	outcome := pollOutcome(res, err)
	m.metrics.pollDone(f, outcome, end.Sub(start), res.Features)
	if outcome == outcomeSucceeded || outcome == outcomeNotModified {
		m.noteSuccess(f.Key(), end)
	}
	return res, err
}

// pollOutcome is the outcome label of a poll that returned res and err.
func pollOutcome(res PollResult, err error) string {
	var held *HeldError
	var deferred *deadletter.DeferError
	switch {
	case err == nil && res.NotModified:
		return outcomeNotModified
	case err == nil:
		return outcomeSucceeded
	case errors.As(err, &held):
		return outcomeHeld
	case errors.As(err, &deferred):
		return outcomeParked
	}
	return outcomeFailed
}

// pollOnce is poll without its metrics: it begins (or resumes) the poll's
// row, fetches and applies under the poll's budget, and ends the row as
// succeeded, held, parked, suspended or failed. slotWait is the time the
// poll waited for its poll slot before it began: queue wait, like the
// budget's, but not bounded by queue_timeout.
func (m *Manager) pollOnce(ctx context.Context, f *config.Feed, letter *deadletter.Letter, slotWait time.Duration) (PollResult, error) {
	p := &pollRun{f: f, letter: letter, start: m.now()}
	p.info = feedInfo(f, p.start)
	p.logger = m.logger.With("jurisdiction", f.Jurisdiction, "feed", f.ID)

	parent := ctx
	// The poll's timeout is its own work: time spent waiting in line for a
	// request slot does not count (the queue_timeout bounds it instead), so
	// a poll queued behind a busy hour's others does not time out before
	// it asked anything.
	ctx, budget, cancel := pollbudget.New(ctx, f.Timeout.Std(), f.QueueTimeout.Std())
	defer cancel()
	p.budget = budget

	var err error
	p.pollID, p.firstPage, p.begun, err = m.beginPoll(ctx, p.info, letter, p.start, p.logger)
	if err != nil {
		return PollResult{}, p.failed(err)
	}
	defer func() { m.recordQueueWait(ctx, f, p.pollID, slotWait+budget.Waited(), p.logger) }()
	p.logger = p.logger.With("poll_id", p.pollID)
	if letter != nil {
		p.logger = p.logger.With("dead_letter_id", letter.ID)
	}

	p.layer = f.Layer()
	err = recoverPanic(p.logger, func() error { return m.fetchAndApply(ctx, p) })
	if qe := pollbudget.QueueCause(ctx); qe != nil && err != nil {
		// Whatever the kind made of its context ending (a "poll timeout"),
		// the cause is the line, not the server.
		err = fmt.Errorf("%w; nothing applied, %d pages staged", qe, p.nextPage())
	}
	if p.applied {
		if err == nil {
			return m.pollSucceeded(p), nil
		}
		if !errors.As(err, new(*PanicError)) {
			err = fmt.Errorf("applying snapshot: %w", err)
		}
		var held *HeldError
		if errors.As(err, &held) {
			// The store finished the poll as held and keeps its staging for
			// `ingestd held accept`: failing or parking it would discard it.
			p.logger.Error("snapshot held", "reason", held.Reason, "previous_features", held.Previous,
				"snapshot_features", held.Snapshot, "pages", p.nextPage())
			return PollResult{}, p.failed(err)
		}
	}
	return m.pollNotApplied(ctx, parent, p, err)
}

// pollRun is one poll as pollOnce's steps see it: its feed and row, the
// layer as prepared, and what the fetch and the apply returned.
type pollRun struct {
	f      *config.Feed
	letter *deadletter.Letter // the dead letter the poll resumes; nil for a fresh poll
	info   FeedInfo
	logger *slog.Logger
	start  time.Time
	budget *pollbudget.Budget

	pollID    int64
	firstPage int       // the page the fetch started at
	begun     time.Time // when the poll's staged pages began
	layer     source.Layer
	stats     source.FetchStats
	res       ApplyResult
	applied   bool // the store was asked to apply the snapshot (or to record it unchanged)
	fetched   bool // pages arrived whose bytes are not recorded yet
	// deltaBase is the applied snapshot's ids, read ahead while a delta
	// was fetched (planDeltas).
	deltaBase *DeltaBase
}

// nextPage is the page after the last one the poll staged.
func (p *pollRun) nextPage() int { return p.firstPage + p.stats.Pages }

// failed is the poll's error for cause.
func (p *pollRun) failed(cause error) error {
	return &PollError{Feed: p.f.Key(), PollID: p.pollID, Err: cause}
}

// fetchAndApply prepares the poll's layer, fetches it into the poll's
// staging and applies the snapshot, or records that the server proved the
// layer unchanged.
func (m *Manager) fetchAndApply(ctx context.Context, p *pollRun) error {
	var warnings []string
	var err error
	p.layer, warnings, err = m.fetcher.Prepare(ctx, p.layer)
	for _, w := range warnings {
		p.logger.Warn("negotiation", "warning", w)
	}
	if err == nil && p.firstPage == 0 {
		// Only a fetch from the first page may be answered "unchanged":
		// a resumed poll has pages of a new version staged already.
		p.layer.Validators, err = m.store.AppliedValidators(ctx, p.info, requestKey(p.layer))
	}
	if err == nil {
		m.planDeltas(ctx, p)
		p.layer, p.firstPage, p.stats, err = m.fetch(ctx, p.layer, p.pollID, p.firstPage, p.logger)
		p.fetched = true
	}
	if err == nil {
		// A delta composed into a whole snapshot, or fetched in full
		// (delta.go); the fetch's mode recorded.
		p.layer, p.stats, err = m.completeFetch(ctx, p.layer, p.info, p.pollID, p.stats, p.deltaBase, p.logger)
	}
	if err == nil {
		err = m.store.RecordFetch(ctx, p.pollID, p.stats.Bytes, p.stats.Validators, requestKey(p.layer))
		p.fetched = false // recorded
	}
	switch {
	case err == nil && p.stats.NotModified:
		if p.stats.Pages > 0 || p.layer.Validators.IsZero() {
			// A fetcher's bug: "unchanged" is only ever an answer to
			// validators, and hands no page over.
			return fmt.Errorf("feeds: the %s fetcher answered not modified after %d pages, to validators %+v", p.layer.Kind, p.stats.Pages, p.layer.Validators)
		}
		p.applied = true
		p.res, err = m.store.RecordNotModified(ctx, p.pollID, p.info)
	case err == nil:
		p.applied = true
		p.info.Declared, p.info.TypedText = p.stats.Declared, p.stats.TypedText
		p.res, err = m.store.Apply(ctx, p.pollID, p.info)
		if err == nil {
			m.recordCompleteness(ctx, p.pollID, p.stats, p.logger)
			m.recordCRS(ctx, p.pollID, p.stats, p.logger)
		}
	}
	return err
}

// pollSucceeded logs a poll whose snapshot was applied (or proved
// unchanged) and returns its result.
func (m *Manager) pollSucceeded(p *pollRun) PollResult {
	res := p.res
	r := PollResult{PollID: p.pollID, Pages: p.nextPage(), Bytes: p.stats.Bytes, Duration: m.now().Sub(p.start),
		NotModified: p.stats.NotModified, ApplyResult: res}
	if r.NotModified {
		p.logger.Info("poll succeeded: not modified", "features", res.Features, "bytes", r.Bytes,
			"duration_ms", r.Duration.Milliseconds(), "queue_wait_ms", p.budget.Waited().Milliseconds())
		return r
	}
	m.metrics.invalidFeaturesSeen(p.f, res.InvalidFeatures)
	p.logger.Info("poll succeeded", "pages", r.Pages, "first_page", p.firstPage, "features", res.Features, "added", res.Added,
		"modified", res.Modified, "removed", res.Removed, "invalid_geometries", res.InvalidGeometries,
		"invalid_features", res.InvalidFeatures.Reasons(),
		"bytes", r.Bytes, "duration_ms", r.Duration.Milliseconds(), "queue_wait_ms", p.budget.Waited().Milliseconds())
	return r
}

// pollNotApplied ends a poll that changed no feature, for err: it parks
// the poll when the origin is to blame (deferral), suspends an interrupted
// replay with its pages staged, and fails it otherwise. ctx is the poll's,
// parent the caller's.
func (m *Manager) pollNotApplied(ctx, parent context.Context, p *pollRun, err error) (PollResult, error) {
	// Record the outcome even when the poll was cancelled (shutdown, deadline):
	// the operator must see that this attempt did not land.
	recordCtx, cancelRecord := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancelRecord()
	next := p.nextPage()
	attempts := 0
	if p.letter != nil {
		attempts = p.letter.Attempts
	}

	if p.fetched && p.stats.Bytes > 0 {
		// The bytes of the pages that arrived, for the failed or parked
		// poll's row; its validators are never used.
		if rerr := m.store.RecordFetch(recordCtx, p.pollID, p.stats.Bytes, source.Validators{}, ""); rerr != nil {
			p.logger.Error("recording the poll's bytes", "error", rerr)
		}
	}
	if de := m.deferral(p.f, p.layer, p.info, p.pollID, next, p.begun, attempts, err); de != nil && m.letters != nil {
		return m.park(recordCtx, p.info, p.letter, de, p.logger)
	}
	if p.letter != nil && parent.Err() != nil {
		// The replayer or the manager is stopping: keep the pages staged so
		// far, and let the row go back to pending.
		if serr := m.store.SuspendPoll(recordCtx, p.info, p.pollID, time.Time{}, err); serr != nil {
			p.logger.Error("recording interrupted replay", "error", serr)
		}
		p.logger.Info("replay interrupted", "error", err, "pages_staged", next)
		return PollResult{}, p.failed(fmt.Errorf("%w: %w", deadletter.ErrNotNow, err))
	}

	if ferr := m.store.FailPoll(recordCtx, p.pollID, p.info, err); ferr != nil {
		p.logger.Error("recording failed poll", "error", ferr)
	}
	m.logPollFailed(ctx, p, err)
	return PollResult{}, p.failed(err)
}

// logPollFailed logs a failed poll: a refusal by an open breaker as a
// warning, any other failure as an error unless the poll's own context
// ended it (shutdown, timeout).
func (m *Manager) logPollFailed(ctx context.Context, p *pollRun, err error) {
	var open *breaker.OpenError
	if errors.As(err, &open) {
		p.logger.Warn("poll refused: origin is open", "origin", open.Origin, "retry_after", open.RetryAfter)
		return
	}
	level := slog.LevelWarn
	if ctx.Err() == nil {
		level = slog.LevelError
	}
	p.logger.Log(ctx, level, "poll failed", "error", err, "pages_staged", p.nextPage(), "duration_ms", m.now().Sub(p.start).Milliseconds(),
		"queue_wait_ms", p.budget.Waited().Milliseconds())
}

// recordQueueWait records the time the poll waited in line for request
// slots: on its row when it waited a millisecond or more, and in the
// histogram always (a
// queue that is too long shows as the share of polls that waited).
func (m *Manager) recordQueueWait(ctx context.Context, f *config.Feed, pollID int64, wait time.Duration, logger *slog.Logger) {
	m.metrics.queueWait.Observe(wait.Seconds())
	if wait < time.Millisecond || pollID == 0 {
		// No write for a wait nobody would act on (a pool connection
		// handed over after a few microseconds).
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := m.store.RecordQueueWait(rctx, pollID, wait); err != nil {
		logger.Error("recording the poll's queue wait", "error", err)
	}
}

// fetch fetches layer from firstPage on into the poll's staging. A poll
// resumed at firstPage > 0 of a kind that cannot prove its staged pages
// current (Restarter) starts over from the first page; one of a kind that
// can read a page again (PageRereader) reads the page before firstPage and
// starts over when it is not what was staged (fetchResumed). fetch returns
// the layer as fetched and the page it started at.
func (m *Manager) fetch(ctx context.Context, layer source.Layer, pollID int64, firstPage int, logger *slog.Logger) (source.Layer, int, source.FetchStats, error) {
	var stats source.FetchStats
	layer.KnownSRID = m.store.KnownSRID
	secrets := layerSecrets(layer)
	stager := newPageStager(ctx, m.store, pollID, layer.Limits, secrets)
	if err := stager.resumeAt(firstPage); err != nil {
		return layer, firstPage, stats, err
	}
	restart := m.restartReason(firstPage, layer)
	var err error
	if restart == "" && firstPage > 0 && m.rereads(layer) {
		stats, err = m.fetchResumed(ctx, layer, pollID, firstPage, stager, logger)
		var disproved *ResumeDisprovedError
		switch {
		case errors.As(err, &disproved):
			restart = disproved.Error()
		case errors.Is(err, source.ErrCannotResume):
			restart = redact.Text(err.Error())
		case stats.Pages == 0:
			// The page before firstPage was not read again (the origin
			// failed first): what is staged still ends at firstPage.
			return layer, firstPage, stats, stager.finish(err)
		default:
			return layer, firstPage - 1, stats, stager.finish(err)
		}
	}
	if restart == "" {
		stats, err = m.fetcher.Fetch(ctx, layer, firstPage, stager.handle)
	} else {
		logger.Info("restarting the resumed poll from the first page", "reason", restart, "checkpoint_page", firstPage)
		_ = stager.finish(nil)
		if err = m.restartStaging(ctx, pollID); err == nil {
			firstPage = 0
			stager = newPageStager(ctx, m.store, pollID, layer.Limits, secrets)
			stats, err = m.fetcher.Fetch(ctx, layer, 0, stager.handle)
		}
	}
	return layer, firstPage, stats, stager.finish(err)
}

// restartReason says why a poll resumed at firstPage must start over from
// the first page (its kind's Restarter), or "" when it continues.
func (m *Manager) restartReason(firstPage int, layer source.Layer) string {
	if r, ok := m.fetcher.(Restarter); ok && firstPage > 0 {
		return r.RestartReason(layer)
	}
	return ""
}

// recordCompleteness records what the applied snapshot's completeness
// rests on, when the fetcher said (FetchStats.Completeness: a kind that
// pages by links tells a total checked against the server's count from
// one that rests on the links alone). The snapshot is applied either way;
// a failure to record is logged.
func (m *Manager) recordCompleteness(ctx context.Context, pollID int64, stats source.FetchStats, logger *slog.Logger) {
	if stats.Completeness == "" {
		return
	}
	if err := m.store.RecordCompleteness(ctx, pollID, stats.Completeness); err != nil {
		logger.Error("recording the poll's completeness", "error", err)
	}
}

// recordCRS records the CRS of the applied snapshot and how it was
// identified, when the fetcher said (FetchStats.CRS: the file kind), and
// logs it. The snapshot is applied either way; a failure to record is
// logged.
func (m *Manager) recordCRS(ctx context.Context, pollID int64, stats source.FetchStats, logger *slog.Logger) {
	if stats.CRS == "" {
		return
	}
	logger.Debug("layer CRS identified", "crs", stats.CRS, "identified_by", stats.CRSBy)
	if err := m.store.RecordCRS(ctx, pollID, stats.CRS, stats.CRSBy); err != nil {
		logger.Error("recording the poll's CRS", "error", err)
	}
}

// restartStaging drops what a resumed poll staged, for a fetch from the
// first page.
func (m *Manager) restartStaging(ctx context.Context, pollID int64) error {
	return m.store.RestartStaging(ctx, pollID)
}

// beginPoll starts a fresh poll, or resumes the checkpoint of letter. It
// returns the poll, the page to fetch first, and when the poll's staged
// pages began (the age of the checkpoint it will leave if parked again).
func (m *Manager) beginPoll(ctx context.Context, info FeedInfo, letter *deadletter.Letter, now time.Time, logger *slog.Logger) (int64, int, time.Time, error) {
	if letter != nil && letter.Checkpoint.PollID != 0 {
		cp := letter.Checkpoint
		log := logger.With("dead_letter_id", letter.ID, "poll_id", cp.PollID)
		age := now.Sub(cp.At)
		reuse := age <= m.dl.MaxCheckpointAge.Std()
		if reuse {
			next, err := m.store.ResumePoll(ctx, info, cp.PollID, cp.Page)
			switch {
			case err == nil:
				log.Info("resuming parked poll", "next_page", next, "checkpoint_page", cp.Page,
					"checkpoint_age", age.Round(time.Second).String())
				return cp.PollID, next, cp.At, nil
			case errors.Is(err, ErrCheckpointApplied):
				return cp.PollID, 0, cp.At, err
			case errors.Is(err, ErrCheckpointLost):
				log.Warn("checkpoint lost: restarting the poll from the first page", "error", err)
			default:
				return cp.PollID, 0, cp.At, err
			}
		} else {
			log.Info("checkpoint too old: restarting the poll from the first page",
				"checkpoint_age", age.Round(time.Second).String(), "max_checkpoint_age", m.dl.MaxCheckpointAge.String())
		}
		if err := m.store.DiscardPoll(ctx, info, cp.PollID, errors.New("superseded by a fresh poll of its dead letter")); err != nil {
			return 0, 0, time.Time{}, fmt.Errorf("discarding old checkpoint: %w", err)
		}
	}
	pollID, err := m.store.BeginPoll(ctx, info)
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("recording poll start: %w", err)
	}
	return pollID, 0, now, nil
}

// deferral decides whether err parks the poll rather than failing it, and
// if so where it resumes and when. Only the origin's trouble parks: a refusal
// by its open breaker, a request that failed after its retries on a closed
// one, or a 429 whose Retry-After outlasts the poll (parked until then). Our own mistakes (a 404, a bad typeName, a server ignoring
// startIndex) and local errors fail the poll: retrying them changes nothing.
func (m *Manager) deferral(f *config.Feed, layer source.Layer, info FeedInfo, pollID int64, page int, begun time.Time, attempts int, err error) *deadletter.DeferError {
	now := m.now()
	p := deadletter.Parking{
		Jurisdiction: f.Jurisdiction,
		Feed:         f.ID,
		URL:          m.pageURL(layer, page),
		Origin:       info.Origin,
		Checkpoint:   deadletter.Checkpoint{PollID: pollID, Page: page, At: begun},
		Err:          err,
	}
	var open *breaker.OpenError
	var retry *breaker.RetryError
	var throttled *breaker.ThrottledError
	switch {
	case errors.As(err, &throttled):
		// A 429 asked for longer than the poll may wait: come back then.
		p.Reason = deadletter.ReasonFailed
		p.Origin = throttled.Origin
		p.RetryAfter = now.Add(throttled.RetryAfter + m.jitter(throttled.RetryAfter/10))
	case errors.As(err, &open):
		p.Reason = deadletter.ReasonCircuitOpen
		p.Origin = open.Origin
		// Jitter so that the feeds one origin refused together do not all
		// come back for its single probe at the same instant.
		p.RetryAfter = now.Add(open.RetryAfter + m.jitter(open.RetryAfter/10))
	case errors.As(err, &retry):
		p.Reason = deadletter.ReasonFailed
		p.Origin = retry.Origin
		p.RetryAfter = now.Add(m.failedBackoff(attempts, info.ExpectedInterval))
	default:
		return nil
	}
	return &deadletter.DeferError{Parking: p}
}

// failedBackoff is the wait after the attempts-th replay of a failed poll
// (0: the first failure): FailedBackoff doubling per attempt, with up to 10%
// jitter, capped at the feed's schedule interval, since by then the feed's
// next tick would have polled it anyway.
func (m *Manager) failedBackoff(attempts int, interval time.Duration) time.Duration {
	d := m.dl.FailedBackoff.Std()
	for range min(attempts, 20) {
		d *= 2
	}
	d += m.jitter(d / 10)
	if interval > 0 {
		d = min(d, interval)
	}
	return d
}

// jitter returns a random duration in [0, maxJitter], capped at 30s.
func (m *Manager) jitter(maxJitter time.Duration) time.Duration {
	maxJitter = min(maxJitter, 30*time.Second)
	if maxJitter <= 0 {
		return 0
	}
	return time.Duration(m.rand() * float64(maxJitter))
}

// park records a deferred poll and keeps its staged pages. A fresh poll is
// parked here; a replay's deferral is returned for the replayer to re-park
// its own row, or, on the row's last attempt, its staging is dropped.
func (m *Manager) park(ctx context.Context, info FeedInfo, letter *deadletter.Letter, de *deadletter.DeferError, logger *slog.Logger) (PollResult, error) {
	pollID := de.Checkpoint.PollID
	fail := func(cause error) (PollResult, error) {
		if err := m.store.FailPoll(ctx, pollID, info, cause); err != nil {
			logger.Error("recording failed poll", "error", err)
		}
		return PollResult{}, &PollError{Feed: info.Jurisdiction + "/" + info.Feed, PollID: pollID, Err: cause}
	}
	if letter != nil && letter.LastAttempt {
		// The replayer abandons the row on this deferral: nothing will
		// resume these pages.
		return fail(de)
	}
	var rerr error
	if de.Reason == deadletter.ReasonCircuitOpen {
		rerr = m.store.RecordRefused(ctx, info, pollID, de.RetryAfter, de.Err)
	} else {
		rerr = m.store.SuspendPoll(ctx, info, pollID, de.RetryAfter, de.Err)
	}
	if rerr != nil {
		logger.Error("recording parked poll", "error", rerr)
		return fail(de.Err)
	}
	if letter == nil {
		id, err := m.parkLetter(ctx, de.Parking, logger)
		if err != nil {
			logger.Error("parking poll in the dead-letter queue: the manager stopped before the letter could be written; the feed is polled afresh at its next tick or catch-up",
				"error", err)
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), parkAttempt)
			defer cancel()
			if derr := m.store.DiscardPoll(dctx, info, pollID, err); derr != nil {
				logger.Error("discarding staged pages", "error", derr)
			}
			return PollResult{}, &PollError{Feed: info.Jurisdiction + "/" + info.Feed, PollID: pollID, Err: de.Err}
		}
		logger = logger.With("dead_letter_id", id)
	}
	logger.Warn("poll parked", "reason", de.Reason, "origin", de.Origin, "url", de.URL,
		"next_page", de.Checkpoint.Page, "retry_after", de.RetryAfter, "error", de.Err)
	return PollResult{}, &PollError{Feed: info.Jurisdiction + "/" + info.Feed, PollID: pollID, Err: de}
}

// parkRetryFirst and parkRetryMax are the first and the longest wait
// between two attempts to write a dead letter: the database was busy or
// away, and a poll refused by its origin is parked, never dropped.
const (
	parkRetryFirst = time.Second
	parkRetryMax   = 30 * time.Second
	parkAttempt    = 10 * time.Second // one attempt's bound
)

// parkLetter writes p to the dead-letter queue, retrying a failed write
// (parkRetryFirst after the failed attempt began, doubling up to
// parkRetryMax, on the manager's clock) until it is written or the manager stops. ctx supplies values
// only: the poll's own deadline has passed by the time a busy database
// lets the letter in.
func (m *Manager) parkLetter(ctx context.Context, p deadletter.Parking, logger *slog.Logger) (int64, error) {
	base := context.WithoutCancel(ctx)
	wait := parkRetryFirst
	for attempt := 1; ; attempt++ {
		// The next attempt's time is from this one's start: an attempt
		// that took its whole parkAttempt is retried without a wait.
		retryAt := m.now().Add(wait)
		actx, cancel := context.WithTimeout(base, parkAttempt)
		stop := context.AfterFunc(m.ctx, cancel)
		id, err := m.letters.Park(actx, p)
		stop()
		cancel()
		if err == nil {
			return id, nil
		}
		logger.Warn("writing the dead letter failed: retrying", "attempt", attempt, "retry_in", wait, "error", err)
		select {
		case <-m.ctx.Done():
			return 0, err
		case <-m.clock.At(retryAt):
		}
		wait = min(2*wait, parkRetryMax)
	}
}

// pageURL is the (redacted) request of page of layer: the one a dead letter
// names (PageURLer).
func (m *Manager) pageURL(layer source.Layer, page int) string {
	if p, ok := m.fetcher.(PageURLer); ok {
		return p.PageURL(layer, page)
	}
	return redact.URL(layer.URL)
}

// feedInfo describes f to the store.
func feedInfo(f *config.Feed, now time.Time) FeedInfo {
	info := FeedInfo{
		Jurisdiction:     f.Jurisdiction,
		Feed:             f.ID,
		Kind:             f.Kind,
		URL:              redact.URL(f.URL),
		ExpectedInterval: f.ExpectedInterval(now),
		Guard:            guardOf(f),
		History:          f.History,
		LayerSchema:      f.LayerSchema,
		LayerName:        f.LayerName,
		Common:           NewCommonConform(f.Conform),
	}
	if u, err := url.Parse(f.URL); err == nil {
		info.Origin = breaker.Origin(u)
	}
	return info
}

// PanicError is a poll that panicked: a bug, which no input may turn into
// the end of the process. The poll fails like any other, naming the feed,
// and the daemon goes on; the stack is logged.
type PanicError struct {
	Value string
}

func (e *PanicError) Error() string {
	return "panic while polling (a bug in ingestd; the log has the stack): " + e.Value
}

// recoverPanic runs fn, turning a panic into a *PanicError. It is the last
// resort at the poll's boundary; the goroutines a poll starts (the page
// stager's COPY) recover on their own, since a recover here cannot reach them.
func recoverPanic(logger *slog.Logger, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: fmt.Sprint(r)}
			logger.Error("poll panicked", "panic", err.(*PanicError).Value, "stack", string(debug.Stack()))
		}
	}()
	return fn()
}

// requestKey identifies what a layer's validators answer for: the request
// as prepared (URL, type name, paging, CRS, id property, and the kind's
// own settings' Identity),
// hashed so that a token in the URL is not stored. Validators are sent back
// only for the same key: after the feed's URL changed, another document's
// Last-Modified could make the server answer 304 to a request it never saw.
func requestKey(l source.Layer) string {
	h := sha256.New()
	var typeName, sortBy string
	if n, ok := l.Settings.(source.NamedLayer); ok {
		typeName, sortBy = n.LayerNames()
	}
	parts := []string{l.Kind, l.URL, typeName, strconv.Itoa(l.PageSize), strconv.Itoa(l.SRID), l.IDProperty, sortBy}
	if l.Settings != nil {
		parts = append(parts, l.Settings.Identity()...)
	}
	for _, part := range parts {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}
