package breaker

import "github.com/prometheus/client_golang/prometheus"

// metrics are the breaker package's Prometheus series, labelled by origin
// (bounded by the configuration) and fixed sets of outcomes and states.
type metrics struct {
	attempts    *prometheus.CounterVec // origin, outcome: every HTTP attempt
	calls       *prometheus.CounterVec // origin, result: every logical call
	state       *prometheus.GaugeVec   // origin: 0 closed, 1 half-open, 2 open
	transitions *prometheus.CounterVec // origin, from, to
}

// Results of a logical call, the values of the result label.
const (
	resultSuccess = "success"
	resultFailure = "failure"
	resultNeither = "neither"
	resultRefused = "refused"
)

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestd_breaker_requests_total",
			Help: "HTTP attempts by origin and outcome (success, failure, throttled, ignored).",
		}, []string{"origin", "outcome"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestd_breaker_calls_total",
			Help: "Logical calls by origin and result: success or failure (what the breaker counted), neither (429s, cancellations), refused (open breaker, no request sent).",
		}, []string{"origin", "result"}),
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ingestd_breaker_state",
			Help: "State of the origin's breaker in this instance: 0 closed, 1 half-open, 2 open.",
		}, []string{"origin"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestd_breaker_transitions_total",
			Help: "Breaker state changes by origin.",
		}, []string{"origin", "from", "to"}),
	}
	if reg != nil {
		reg.MustRegister(m.attempts, m.calls, m.state, m.transitions)
	}
	return m
}

func stateValue(s State) float64 {
	switch s {
	case StateHalfOpen:
		return 1
	case StateOpen:
		return 2
	}
	return 0
}
