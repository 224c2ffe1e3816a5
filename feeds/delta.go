package feeds

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestd/ingestd/source"
)

// Incremental refresh. A kind that fetched only what changed
// since the last applied snapshot says so with FetchStats.Delta; before
// the apply, the store composes the whole snapshot in the poll's staging
// (the fetched pages, plus the previous snapshot's features that are still
// listed and were not fetched) and proves it against the server's id list.
// A snapshot that does not prove whole is not applied: the poll drops its
// staging and fetches the layer in full, and the mismatch is recorded as
// the incremental path's drift (polls.drift, the metric). From then on the
// snapshot goes through the same apply, guards, typed views and change log
// as a full one.

// DeltaResult is what composing a delta snapshot found.
type DeltaResult struct {
	// Fetched is the distinct ids the poll fetched, Kept the previous
	// snapshot's features copied in.
	Fetched, Kept int
	// Missing counts the listed ids the composed snapshot lacks (an add
	// the edit date did not show); Extra its ids the server does not list.
	Missing, Extra int
}

// Drift is the ids the composed snapshot got wrong.
func (r DeltaResult) Drift() int { return r.Missing + r.Extra }

// DeltaBase is the feed's applied snapshot's ids, which a store reads
// ahead (Store.ReadDeltaBase) while the poll fetches a delta, for
// Store.ComposeDelta. The store that starts the read ends it with Done;
// ComposeDelta waits for it with Wait. The engine only hands it back.
type DeltaBase struct {
	done chan struct{}
	of   string
	ids  source.IDs
	err  error
}

// NewDeltaBase returns a read ahead that has not ended.
func NewDeltaBase() *DeltaBase { return &DeltaBase{done: make(chan struct{})} }

// Done ends the read, once: the snapshot's ids, read of what the store
// names of (postgis: the feed's table, so that a base of another table is
// read again), or err.
func (b *DeltaBase) Done(of string, ids source.IDs, err error) {
	b.of, b.ids, b.err = of, ids, err
	close(b.done)
}

// Wait waits for Done (or ctx) and returns what it was given.
func (b *DeltaBase) Wait(ctx context.Context) (of string, ids source.IDs, err error) {
	select {
	case <-b.done:
		return b.of, b.ids, b.err
	case <-ctx.Done():
		return "", source.IDs{}, ctx.Err()
	}
}

// completeFetch finishes a fetch before the apply: a delta is composed
// into a whole snapshot, or the layer fetched in full when the composition
// does not prove whole; a reconciling full dump counts its drift; the
// fetch's mode is recorded.
func (m *Manager) completeFetch(ctx context.Context, layer source.Layer, info FeedInfo, pollID int64, stats source.FetchStats, base *DeltaBase, logger *slog.Logger) (source.Layer, source.FetchStats, error) {
	drift := -1
	var err error
	switch {
	case stats.NotModified:
	case stats.Delta != nil:
		var res DeltaResult
		res, err = m.store.ComposeDelta(ctx, pollID, info, *stats.Delta, base)
		if err != nil {
			return layer, stats, err
		}
		if res.Drift() == 0 {
			logger.Debug("delta composed", "since", stats.Delta.Since.String(), "fetched", res.Fetched, "kept", res.Kept, "listed", stats.Delta.IDs.Len())
			break
		}
		drift = res.Drift()
		m.metrics.driftSeen(info, "delta_mismatch", drift)
		logger.Warn("incremental drift: the composed snapshot does not hold the server's ids; fetching the layer in full",
			"since", stats.Delta.Since.String(), "missing", res.Missing, "extra", res.Extra, "listed", stats.Delta.IDs.Len())
		layer, stats, err = m.fetchFull(ctx, layer, pollID, stats, logger, "drift")
	case stats.Reconcile != nil:
		drift, err = m.store.ReconcileDrift(ctx, pollID, info, *stats.Reconcile)
		if err != nil {
			return layer, stats, err
		}
		if drift > 0 {
			m.metrics.driftSeen(info, "reconciliation", drift)
			logger.Warn("incremental drift: the reconciling full dump found features changed without a newer edit date", "features", drift)
		}
	}
	if err != nil {
		return layer, stats, err
	}
	mode := stats.Mode
	switch {
	case stats.NotModified:
		mode = source.ModeNotModified
	case mode == "":
		mode = source.ModeFull
	}
	m.metrics.fetched(info, mode)
	return layer, stats, m.store.RecordFetchMode(ctx, pollID, mode, drift)
}

// planDeltas has the poll read the applied snapshot's ids ahead, into
// p.deltaBase, when its kind plans a delta (ReadDeltaBase).
func (m *Manager) planDeltas(ctx context.Context, p *pollRun) {
	p.layer.DeltaPlanned = func() {
		if p.deltaBase == nil {
			p.deltaBase = m.store.ReadDeltaBase(ctx, p.pollID, p.info)
		}
	}
}

// fetchFull drops what the poll staged and fetches the layer in full
// (its validators dropped: no watermark), adding the bytes already read.
func (m *Manager) fetchFull(ctx context.Context, layer source.Layer, pollID int64, before source.FetchStats, logger *slog.Logger, why string) (source.Layer, source.FetchStats, error) {
	if err := m.restartStaging(ctx, pollID); err != nil {
		return layer, before, err
	}
	layer.Validators = source.Validators{}
	layer, _, stats, err := m.fetch(ctx, layer, pollID, 0, logger)
	stats.Bytes += before.Bytes
	if err == nil && stats.Delta != nil {
		// A kind must dump in full when it has no validators.
		return layer, stats, errors.New("feeds: the fetcher answered a delta to a fetch without validators")
	}
	if err != nil {
		err = fmt.Errorf("the full fetch after the incremental one (%s): %w", why, err)
	}
	return layer, stats, err
}

// newDeltaMetrics are the series of incremental refresh: a sibling of
// ingestd_feeds_polls_total by fetch mode (its own labels kept as they
// are, for the alert rules), and the drift found.
func newDeltaMetrics() (fetches, drift *prometheus.CounterVec) {
	fetches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ingestd_feeds_fetches_total",
		Help: "Fetches that finished, by feed and how they read the layer (full, edit_date, change_tracking, not_modified); polls.fetch_mode.",
	}, []string{"jurisdiction", "feed", "mode"})
	drift = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ingestd_feeds_incremental_drift_total",
		Help: "Features an incremental refresh got wrong, found by a full dump: delta_mismatch (a composed snapshot whose ids were not the server's; the poll fell back to a full dump) or reconciliation (changed without a newer edit date, found by the full_every dump).",
	}, []string{"jurisdiction", "feed", "cause"})
	return fetches, drift
}

func (m *metrics) fetched(info FeedInfo, mode string) {
	m.fetches.WithLabelValues(info.Jurisdiction, info.Feed, mode).Inc()
}

func (m *metrics) driftSeen(info FeedInfo, cause string, n int) {
	m.drift.WithLabelValues(info.Jurisdiction, info.Feed, cause).Add(float64(n))
}
