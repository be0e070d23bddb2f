package webpush

import (
	"context"
	"testing"
	"time"

	"amsg/push"
	"amsg/push/tracing"
	"amsg/push/tracing/tracingtest"
)

// BenchmarkDeliveryTracing measures what tracing costs a push: the sender at
// concurrency 32, as BenchmarkDelivery, with tracing off, then on with each
// push inside a trace of its own (a root span, as a request's or an
// occurrence's, and the push's span) exported over OTLP/HTTP to a
// collector on loopback. cpu-ns/op is this process's CPU per push, the
// exporter's included. See docs/performance.md.
func BenchmarkDeliveryTracing(b *testing.B) {
	public, private, err := GenerateVAPIDKeys()
	if err != nil {
		b.Fatal(err)
	}
	child, sender := startDeliveryBench(b, public, private)
	defer child.stop(b)
	subs := child.hello.Subs
	msg := contentPush("msg_bench", 480)
	send := func(i int) {
		ctx, root := tracing.Root(context.Background(), "bench", time.Time{})
		d, err := sender.Send(ctx, subs[i%len(subs)], msg)
		root.End()
		if err != nil || d.Outcome != push.OutcomeDelivered {
			b.Errorf("%+v, %v", d, err)
		}
	}
	b.Run("off", func(b *testing.B) { runConcurrently(b, 32, send) })
	b.Run("on", func(b *testing.B) {
		tracingtest.Export(b)
		runConcurrently(b, 32, send)
	})
}
