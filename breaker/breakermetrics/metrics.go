// Package breakermetrics exports what a breaker.Registry does as Prometheus
// series, through the breaker.Observer the registry calls, so that the
// breaker core (and every protocol package above it) imports no metrics
// client.
package breakermetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestd/ingestd/breaker"
)

// Metrics are the breaker's Prometheus series, labelled by origin (bounded
// by the configuration) and fixed sets of outcomes and states. It is a
// breaker.Observer: pass it in breaker.Config.Observer.
type Metrics struct {
	attempts    *prometheus.CounterVec // origin, outcome: every HTTP attempt
	calls       *prometheus.CounterVec // origin, result: every logical call
	state       *prometheus.GaugeVec   // origin: 0 closed, 1 half-open, 2 open
	transitions *prometheus.CounterVec // origin, from, to
}

var _ breaker.Observer = (*Metrics)(nil)

// New returns the series, registered with reg unless reg is nil.
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
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

// Attempt counts one HTTP attempt.
func (m *Metrics) Attempt(origin string, outcome breaker.Outcome) {
	m.attempts.WithLabelValues(origin, outcome.String()).Inc()
}

// Call counts one logical call.
func (m *Metrics) Call(origin string, result breaker.CallResult) {
	m.calls.WithLabelValues(origin, string(result)).Inc()
}

// StateChange counts a transition and sets the origin's state gauge.
func (m *Metrics) StateChange(ev breaker.StateChange) {
	m.transitions.WithLabelValues(ev.Origin, ev.From.String(), ev.To.String()).Inc()
	m.state.WithLabelValues(ev.Origin).Set(stateValue(ev.To))
}

func stateValue(s breaker.State) float64 {
	switch s {
	case breaker.StateHalfOpen:
		return 1
	case breaker.StateOpen:
		return 2
	}
	return 0
}
