package webpush

import (
	"amsg/push"
	"amsg/push/tracing"
)

// traceDelivery ends a push's span (push/tracing) with the push service's
// host (never the endpoint's path, which identifies the device, nor its
// keys), the last status, the payload's bytes, the attempts and the
// outcome.
func traceDelivery(span tracing.Span, d Delivery, msg Message) {
	if !span.Recording() {
		return
	}
	defer span.End()
	span.Str("server.address", d.PushHost)
	span.Str("amsg.message.id", msg.ID)
	span.Str("amsg.push.kind", string(msg.Kind))
	span.Int("amsg.push.bytes", int64(len(msg.Payload)))
	span.Int("amsg.push.attempts", int64(len(d.Attempts)))
	span.Int("amsg.push.chunks", int64(d.Chunks))
	span.Str("amsg.push.outcome", string(d.Outcome))
	if d.Status != 0 {
		span.Int("http.response.status_code", int64(d.Status))
	}
	if d.Outcome != push.OutcomeDelivered {
		span.Fail(string(d.Outcome))
	}
}
