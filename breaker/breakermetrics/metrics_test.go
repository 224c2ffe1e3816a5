package breakermetrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ingestd/ingestd/breaker"
)

// The series keep the names and labels the alert rules and the cluster
// tests read (deploy/prometheus, cmd/ingestd).
func TestSeriesNamesAndLabels(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	m := New(reg)
	const origin = "https://gis.example.org:443"
	m.Attempt(origin, breaker.Failure)
	m.Call(origin, breaker.CallRefused)
	m.StateChange(breaker.StateChange{Origin: origin, From: breaker.StateClosed, To: breaker.StateOpen})

	want := `
# HELP ingestd_breaker_calls_total Logical calls by origin and result: success or failure (what the breaker counted), neither (429s, cancellations), refused (open breaker, no request sent).
# TYPE ingestd_breaker_calls_total counter
ingestd_breaker_calls_total{origin="https://gis.example.org:443",result="refused"} 1
# HELP ingestd_breaker_requests_total HTTP attempts by origin and outcome (success, failure, throttled, ignored).
# TYPE ingestd_breaker_requests_total counter
ingestd_breaker_requests_total{origin="https://gis.example.org:443",outcome="failure"} 1
# HELP ingestd_breaker_state State of the origin's breaker in this instance: 0 closed, 1 half-open, 2 open.
# TYPE ingestd_breaker_state gauge
ingestd_breaker_state{origin="https://gis.example.org:443"} 2
# HELP ingestd_breaker_transitions_total Breaker state changes by origin.
# TYPE ingestd_breaker_transitions_total counter
ingestd_breaker_transitions_total{from="closed",origin="https://gis.example.org:443",to="open"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
