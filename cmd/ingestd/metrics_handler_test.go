package main

import (
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// failingCollector is a collector whose gathering fails, as the database
// collectors' do when their query times out.
type failingCollector struct{ desc *prometheus.Desc }

func (c failingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c failingCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.NewInvalidMetric(c.desc, errors.New("context deadline exceeded"))
}

// One failing collector leaves its metrics out of the scrape; the others
// are served with 200, and the failure is counted and logged.
func TestMetricsSurviveAFailingCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(failingCollector{prometheus.NewDesc("ingestd_status_feeds", "feeds by status", nil, nil)})
	up := prometheus.NewGauge(prometheus.GaugeOpts{Name: "ingestd_up_test", Help: "a metric that gathers"})
	up.Set(1)
	reg.MustRegister(up)
	var logs strings.Builder
	h := metricsHandler(reg, slog.New(slog.NewTextHandler(&logs, nil)))

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != 200 || !strings.Contains(string(body), "ingestd_up_test 1") {
		t.Fatalf("scrape: HTTP %d, body:\n%s", rec.Code, body)
	}
	if !strings.Contains(logs.String(), "context deadline exceeded") {
		t.Errorf("the collector's failure was not logged: %q", logs.String())
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if body, _ := io.ReadAll(rec.Body); !strings.Contains(string(body), `promhttp_metric_handler_errors_total{cause="gathering"} 1`) {
		t.Errorf("the failure is not counted:\n%s", body)
	}
}
