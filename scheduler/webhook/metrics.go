package webhook

import (
	"github.com/prometheus/client_golang/prometheus"

	"amsg/store"
)

// tries counts the requests sent, by what became of their deliveries:
// done, pending (to be tried again) or failed (given up). Its endpoint
// label is the endpoint's id, never its URL.
func newTries() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "amsg_webhook_tries_total",
		Help: "Webhook requests sent, by endpoint id and result: done (2xx), pending (tried again later) or failed (given up).",
	}, []string{"endpoint", "result"})
}

// Collectors returns the dispatcher's metrics, for a Prometheus registry.
func (d *Dispatcher) Collectors() []prometheus.Collector { return []prometheus.Collector{d.tries} }

func (d *Dispatcher) countTry(endpointID string, try store.WebhookTry) {
	d.tries.WithLabelValues(endpointID, try.State).Inc()
}
