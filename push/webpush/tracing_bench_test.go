package webpush

import (
	"context"
	"crypto/x509"
	"log/slog"
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
	child := startPushService(b, public)
	defer child.stop(b)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(child.hello.CertPEM)
	subs := child.hello.Subs
	msg := contentPush("msg_bench", 480)
	sender, err := NewSender(Config{VAPIDPublicKey: public, VAPIDPrivateKey: private, Subject: "ops@example.org",
		AllowPrivateEndpoints: true, RootCAs: pool, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
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
