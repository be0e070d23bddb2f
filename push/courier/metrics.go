package courier

import "github.com/prometheus/client_golang/prometheus"

// metrics are the courier's Prometheus series; Collectors hands them to the
// process's registry.
type metrics struct {
	streamSkips prometheus.Counter
}

func newMetrics() metrics {
	return metrics{
		streamSkips: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "amsg_push_stream_skips_total",
			Help: "Web Push copies not sent to a device because its SSE stream had delivered the push (push policy visible).",
		}),
	}
}

// Collectors returns the courier's metrics, for a Prometheus registry.
func (c *Courier) Collectors() []prometheus.Collector {
	return []prometheus.Collector{c.metrics.streamSkips}
}
