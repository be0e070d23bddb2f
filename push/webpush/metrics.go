package webpush

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"amsg/push"
)

// metrics are the sender's Prometheus series. Labels are push.Outcome values
// only: push hosts come from users and would make cardinality unbounded.
type metrics struct {
	attempts   *prometheus.CounterVec // one per HTTP request
	deliveries *prometheus.CounterVec // one per message and device
	latency    prometheus.Histogram
	multipart  prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	return &metrics{
		attempts: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "amsg_push_attempts_total",
			Help: "HTTP requests to push services, by outcome.",
		}, []string{"outcome"})),
		deliveries: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "amsg_push_deliveries_total",
			Help: "Messages delivered or given up per device, by final outcome.",
		}, []string{"outcome"})),
		latency: register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "amsg_push_attempt_duration_seconds",
			Help:    "Time from sending a push request to its response, including encryption.",
			Buckets: prometheus.DefBuckets,
		})),
		multipart: register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "amsg_push_multipart_messages_total",
			Help: "Messages sent as _multipart chunks because they exceeded the inline budget or a push service refused them as too large.",
		})),
	}
}

// register adds c to reg, or returns the collector already registered under
// the same name, so two senders can share one registry. A nil reg leaves c
// unregistered.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if reg == nil {
		return c
	}
	if err := reg.Register(c); err != nil {
		var already prometheus.AlreadyRegisteredError
		if errors.As(err, &already) {
			if existing, ok := already.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err) // a name clash with another kind of collector is a programming error
	}
	return c
}

func (m *metrics) attempt(o push.Outcome, seconds float64) {
	m.attempts.WithLabelValues(string(o)).Inc()
	m.latency.Observe(seconds)
}

func (m *metrics) delivery(o push.Outcome) { m.deliveries.WithLabelValues(string(o)).Inc() }
