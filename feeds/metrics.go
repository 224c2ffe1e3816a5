package feeds

import (
	"time"

	"github.com/ingestd/ingestd/config"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the feeds package's Prometheus series. Labels are bounded by
// the configuration (jurisdiction, feed) or by a fixed set (outcome, reason);
// never a URL.
type metrics struct {
	polls          *prometheus.CounterVec   // jurisdiction, feed, outcome
	pollDuration   *prometheus.HistogramVec // outcome
	featuresLoaded *prometheus.CounterVec   // jurisdiction, feed
	lastSuccess    *prometheus.GaugeVec     // jurisdiction, feed
	// expectedInterval: jurisdiction, feed; with lastSuccess, what the
	// IngestdFeedStale alert rule compares (deploy/prometheus).
	expectedInterval *prometheus.GaugeVec
	running          prometheus.Gauge
	// slotWaiting: ticks waiting for a poll slot (WithPollSlots), which
	// hold no claim yet.
	slotWaiting  prometheus.Gauge
	schedulerLag prometheus.Histogram
	// queueWait: each poll's time in line for request slots, which its
	// timeout does not count (IngestdPollQueueLong alerts on it).
	queueWait    prometheus.Histogram
	ticksSkipped *prometheus.CounterVec // reason
	// invalidFeatures: jurisdiction, feed, reason (InvalidFeatures.Reasons).
	invalidFeatures *prometheus.CounterVec
	// fetches and drift: incremental refresh (delta.go).
	fetches, drift *prometheus.CounterVec
}

// Poll outcomes, the values of the outcome label: the poll's status where
// it ended with one, and parked for a poll handed to the dead letters.
const (
	outcomeSucceeded = string(PollSucceeded)
	outcomeFailed    = string(PollFailed)
	outcomeParked    = "parked"
	outcomeHeld      = string(PollHeld)
	// outcomeNotModified: a success that fetched nothing, the server having
	// proved the layer unchanged (HTTP 304, or the kind's version check).
	outcomeNotModified = "not_modified"
)

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		polls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestd_feeds_polls_total",
			Help: "Polls by feed and outcome (succeeded, not_modified: succeeded with nothing fetched, failed, parked, held).",
		}, []string{"jurisdiction", "feed", "outcome"}),
		pollDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ingestd_feeds_poll_duration_seconds",
			Help:    "Wall time of a poll, from its start to its outcome being recorded.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2.5, 12), // 50 ms .. ~3 h
		}, []string{"outcome"}),
		featuresLoaded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestd_feeds_features_loaded_total",
			Help: "Features in the snapshots applied, by feed.",
		}, []string{"jurisdiction", "feed"}),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ingestd_feeds_last_success_timestamp_seconds",
			Help: "Unix time of the feed's last applied snapshot: read from the database at start, then set by this process's polls.",
		}, []string{"jurisdiction", "feed"}),
		expectedInterval: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ingestd_feeds_expected_interval_seconds",
			Help: "Time between two scheduled polls of the feed (feed_freshness.expected_interval); a feed is stale past twice it.",
		}, []string{"jurisdiction", "feed"}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ingestd_feeds_polls_running",
			Help: "Polls in progress in this process.",
		}),
		slotWaiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ingestd_feeds_polls_waiting_for_slot",
			Help: "Ticks and catch-ups in this process waiting for a poll slot (at most max_in_flight polls run at once); they hold no claim, so other instances may poll their feeds meanwhile.",
		}),
		schedulerLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ingestd_feeds_scheduler_lag_seconds",
			Help:    "Delay between a feed's planned start (cron time plus its offset) and its tick's start; the tick's wait for a poll slot after that is in ingestd_feeds_poll_queue_wait_seconds.",
			Buckets: []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ingestd_feeds_poll_queue_wait_seconds",
			Help:    "Time a poll waited in line: for a poll slot before it claimed its feed (unbounded), then for request slots (an origin's in-flight cap or rate limit, max_in_flight) and database connections (bounded by queue_timeout); not counted against its timeout; 0 for a poll that never waited.",
			Buckets: []float64{0, .01, .1, .5, 1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600},
		}),
		ticksSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestd_feeds_ticks_skipped_total",
			Help: "Scheduled ticks not polled, by reason (running: the previous poll is still running; parked: the feed waits for its dead letter; claimed: another instance polls it or just did; stopped: the instance stopped while the tick waited for a poll slot; origin_busy: the feed was fresh and its tick waited longer than its interval for its origin's poll slots, which went to the origin's overdue and never-loaded feeds).",
		}, []string{"reason"}),
		invalidFeatures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestd_feeds_invalid_features_total",
			Help: "Features of applied snapshots that were repaired, skipped or refused, by feed and reason (invalid_utf8, nul, lone_surrogate, invalid_json, number_out_of_range, id_too_long).",
		}, []string{"jurisdiction", "feed", "reason"}),
	}
	m.fetches, m.drift = newDeltaMetrics()
	if reg != nil {
		reg.MustRegister(m.polls, m.pollDuration, m.featuresLoaded, m.lastSuccess, m.expectedInterval, m.running, m.slotWaiting, m.schedulerLag, m.ticksSkipped,
			m.invalidFeatures, m.queueWait, m.fetches, m.drift)
	}
	return m
}

func (m *metrics) pollDone(f *config.Feed, outcome string, took time.Duration, features int) {
	m.polls.WithLabelValues(f.Jurisdiction, f.ID, outcome).Inc()
	m.pollDuration.WithLabelValues(outcome).Observe(took.Seconds())
	switch outcome {
	case outcomeSucceeded:
		m.featuresLoaded.WithLabelValues(f.Jurisdiction, f.ID).Add(float64(features))
		m.lastSuccess.WithLabelValues(f.Jurisdiction, f.ID).SetToCurrentTime()
	case outcomeNotModified:
		// Fresh, though nothing was loaded.
		m.lastSuccess.WithLabelValues(f.Jurisdiction, f.ID).SetToCurrentTime()
	}
}

// invalidFeaturesSeen counts an applied snapshot's invalid features.
func (m *metrics) invalidFeaturesSeen(f *config.Feed, counts InvalidFeatures) {
	for reason, n := range counts.Reasons() {
		m.invalidFeatures.WithLabelValues(f.Jurisdiction, f.ID, reason).Add(float64(n))
	}
}

// forget drops the series of a feed that left the configuration.
func (m *metrics) forget(jurisdiction, feed string) {
	for _, o := range []string{outcomeSucceeded, outcomeNotModified, outcomeFailed, outcomeParked, outcomeHeld} {
		m.polls.DeleteLabelValues(jurisdiction, feed, o)
	}
	m.featuresLoaded.DeleteLabelValues(jurisdiction, feed)
	m.lastSuccess.DeleteLabelValues(jurisdiction, feed)
	m.expectedInterval.DeleteLabelValues(jurisdiction, feed)
	m.invalidFeatures.DeletePartialMatch(prometheus.Labels{"jurisdiction": jurisdiction, "feed": feed})
	m.fetches.DeletePartialMatch(prometheus.Labels{"jurisdiction": jurisdiction, "feed": feed})
	m.drift.DeletePartialMatch(prometheus.Labels{"jurisdiction": jurisdiction, "feed": feed})
}
