package deadletter

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports the dead-letter table as ingestd_deadletter_letters{status},
// read from Postgres at scrape time, so every instance reports the cluster's
// truth rather than what it parked itself.
type Collector struct {
	pool *pgxpool.Pool
	desc *prometheus.Desc
}

// NewCollector returns a Collector reading through pool; register it on the
// daemon's registry.
func NewCollector(pool *pgxpool.Pool) *Collector {
	return &Collector{
		pool: pool,
		desc: prometheus.NewDesc("ingestd_deadletter_letters",
			"Dead letters by status (pending, replaying, done, abandoned), cluster-wide.",
			[]string{"status"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector. A database that does not answer
// within two seconds yields no sample rather than a stalled scrape.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts := map[Status]float64{StatusPending: 0, StatusReplaying: 0, StatusDone: 0, StatusAbandoned: 0}
	rows, err := c.pool.Query(ctx, `SELECT status, count(*) FROM dead_letter GROUP BY status`)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var status Status
		var n int64
		if err := rows.Scan(&status, &n); err != nil {
			ch <- prometheus.NewInvalidMetric(c.desc, err)
			return
		}
		counts[status] = float64(n)
	}
	if err := rows.Err(); err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	for status, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, n, string(status))
	}
}
