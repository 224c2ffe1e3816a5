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

// DeltaBase is what a store read ahead, while a delta was fetched, of the
// applied snapshot the delta builds on (ReadDeltaBase): opaque outside
// that store; nil when nothing was read ahead.
type DeltaBase any

// incrementalStore is implemented by a Store that composes delta
// snapshots and records how each poll fetched (postgis.Store).
type incrementalStore interface {
	// ReadDeltaBase starts reading, in the background, what composing
	// poll pollID's delta needs of the feed's applied snapshot, for
	// ComposeDelta: the poll calls it when the kind plans a delta
	// (source.Layer.DeltaPlanned), so that the read overlaps the fetch of
	// the changes. The poll's claim on the feed keeps the snapshot as it
	// was read until the apply: no other poll applies to the feed, and a
	// feed with a held snapshot (which an operator may accept at any
	// time) has no validators, so its polls never read a delta.
	ReadDeltaBase(ctx context.Context, pollID int64, feed FeedInfo) DeltaBase
	// ComposeDelta composes poll pollID's whole snapshot in its staging
	// from the pages it fetched and the feed's applied features (those
	// base read ahead, or read now when base is nil), as d says, and
	// proves it against d.IDs.
	ComposeDelta(ctx context.Context, pollID int64, feed FeedInfo, d source.Delta, base DeltaBase) (DeltaResult, error)
	// ReconcileDrift counts the staged features of a full dump that
	// differ from the feed's stored ones while their edit date is at most
	// r.Cutoff.
	ReconcileDrift(ctx context.Context, pollID int64, feed FeedInfo, r source.Reconcile) (int, error)
	// RecordFetchMode records how the poll fetched (polls.fetch_mode)
	// and the drift it found (drift < 0: none compared).
	RecordFetchMode(ctx context.Context, pollID int64, mode string, drift int) error
}

// completeFetch finishes a fetch before the apply: a delta is composed
// into a whole snapshot, or the layer fetched in full when the composition
// does not prove whole; a reconciling full dump counts its drift; the
// fetch's mode is recorded. A store that cannot compose gets a full fetch.
func (m *Manager) completeFetch(ctx context.Context, layer source.Layer, info FeedInfo, pollID int64, stats source.FetchStats, base DeltaBase, logger *slog.Logger) (source.Layer, source.FetchStats, error) {
	st, ok := m.store.(incrementalStore)
	drift := -1
	var err error
	switch {
	case stats.NotModified:
	case stats.Delta != nil && !ok:
		layer, stats, err = m.fetchFull(ctx, layer, pollID, stats, logger, "the store cannot compose a delta")
	case stats.Delta != nil:
		var res DeltaResult
		res, err = st.ComposeDelta(ctx, pollID, info, *stats.Delta, base)
		if err != nil {
			return layer, stats, err
		}
		if res.Drift() == 0 {
			logger.Debug("delta composed", "since", stats.Delta.Since, "fetched", res.Fetched, "kept", res.Kept, "listed", len(stats.Delta.IDs))
			break
		}
		drift = res.Drift()
		m.metrics.driftSeen(info, "delta_mismatch", drift)
		logger.Warn("incremental drift: the composed snapshot does not hold the server's ids; fetching the layer in full",
			"since", stats.Delta.Since, "missing", res.Missing, "extra", res.Extra, "listed", len(stats.Delta.IDs))
		layer, stats, err = m.fetchFull(ctx, layer, pollID, stats, logger, "drift")
	case stats.Reconcile != nil && ok:
		drift, err = st.ReconcileDrift(ctx, pollID, info, *stats.Reconcile)
		if err != nil {
			return layer, stats, err
		}
		if drift > 0 {
			m.metrics.driftSeen(info, "reconciliation", drift)
			logger.Warn("incremental drift: the reconciling full dump found features changed without a newer edit date", "features", drift)
		}
	}
	if err != nil || !ok {
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
	return layer, stats, st.RecordFetchMode(ctx, pollID, mode, drift)
}

// planDeltas has the poll read the applied snapshot's ids ahead, into
// p.deltaBase, when its kind plans a delta (ReadDeltaBase).
func (m *Manager) planDeltas(ctx context.Context, p *pollRun) {
	st, ok := m.store.(incrementalStore)
	if !ok {
		return
	}
	p.layer.DeltaPlanned = func() {
		if p.deltaBase == nil {
			p.deltaBase = st.ReadDeltaBase(ctx, p.pollID, p.info)
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
