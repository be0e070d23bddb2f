package webpush

import (
	"errors"
	"fmt"

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
	apple      prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "amsg_push_attempts_total",
			Help: "HTTP requests to push services, by outcome.",
		}, []string{"outcome"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "amsg_push_deliveries_total",
			Help: "Messages delivered or given up per device, by final outcome.",
		}, []string{"outcome"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "amsg_push_attempt_duration_seconds",
			Help:    "Time from sending a push request to its response, including encryption.",
			Buckets: prometheus.DefBuckets,
		}),
		multipart: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "amsg_push_multipart_messages_total",
			Help: "Sends to one device that went as _multipart chunks (a message to three devices counts three) because the message exceeded the inline budget or a push service refused it as too large.",
		}),
		apple: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "amsg_push_apple_sends_total",
			Help: "Sends of a message to one device on Apple's push service (*.push.apple.com), where every push must show a notification.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	return m, errors.Join(
		register(reg, &m.attempts),
		register(reg, &m.deliveries),
		register(reg, &m.latency),
		register(reg, &m.multipart),
		register(reg, &m.apple),
	)
}

// register adds *c to reg; when a collector of the same name and type is
// already there (a second Sender on one registry), *c becomes that one so
// both count into the same series.
func register[C prometheus.Collector](reg prometheus.Registerer, c *C) error {
	err := reg.Register(*c)
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(C); ok {
			*c = existing
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("webpush: register metrics: %w", err)
	}
	return nil
}

func (m *metrics) attempt(o push.Outcome, seconds float64) {
	m.attempts.WithLabelValues(string(o)).Inc()
	m.latency.Observe(seconds)
}

func (m *metrics) delivery(o push.Outcome) { m.deliveries.WithLabelValues(string(o)).Inc() }
