package statuspage

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports, read from the views at scrape time, the cluster-wide
// figures the page shows first and the alert rules in deploy/prometheus
// need: feeds by feed_freshness status (held and stale included), and which
// origins are stuck open. Every instance reports the same cluster's truth,
// as ingestd_deadletter_letters does; rules aggregate with max.
type Collector struct {
	pool    *pgxpool.Pool
	feeds   string
	origins string
	byState *prometheus.Desc
	stuck   *prometheus.Desc
}

// NewCollector returns a Collector reading through pool; register it on the
// daemon's registry.
func NewCollector(pool *pgxpool.Pool) *Collector {
	h := New(nil, nil) // only for its statements
	return &Collector{
		pool: pool, feeds: h.sql.Get("metric_feeds"), origins: h.sql.Get("metric_origins"),
		byState: prometheus.NewDesc("ingestd_status_feeds",
			"Feeds by feed_freshness status (removed, held, parked, failing, never, stale, fresh), cluster-wide.",
			[]string{"status"}, nil),
		stuck: prometheus.NewDesc("ingestd_status_origin_stuck_open",
			"1 while the origin's breaker is open and stuck (open across stuck_open_after cooldowns), else 0; per breaker_state row, cluster-wide.",
			[]string{"origin"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.byState
	ch <- c.stuck
}

// Collect implements prometheus.Collector. A database that does not answer
// within two seconds yields an invalid metric rather than a stalled scrape.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts := map[string]float64{}
	for _, s := range statusOrder {
		counts[s] = 0 // a status with no feed is 0, not absent: rules compare it
	}
	rows, _ := c.pool.Query(ctx, c.feeds)
	var status string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&status, &n}, func() error { counts[status] = float64(n); return nil }); err != nil {
		ch <- prometheus.NewInvalidMetric(c.byState, err)
		return
	}
	for s, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.byState, prometheus.GaugeValue, n, s)
	}
	rows, _ = c.pool.Query(ctx, c.origins)
	var origin string
	var stuck bool
	if _, err := pgx.ForEachRow(rows, []any{&origin, &stuck}, func() error {
		v := 0.0
		if stuck {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.stuck, prometheus.GaugeValue, v, origin)
		return nil
	}); err != nil {
		ch <- prometheus.NewInvalidMetric(c.stuck, err)
	}
}
