package webpush

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	webpushgo "github.com/SherClockHolmes/webpush-go"

	"amsg/push"
	"amsg/push/pushtest"
)

// BenchmarkDelivery measures one push delivered over loopback to pushtest,
// through the Sender and through webpush-go called directly with the same
// record size, client pool and payload, so their ratio is the cost of our
// layers. Both include the fake service's JWT check and decryption. See
// docs/performance.md for the command and the numbers.
func BenchmarkDelivery(b *testing.B) {
	public, private, err := GenerateVAPIDKeys()
	if err != nil {
		b.Fatal(err)
	}
	ps := pushtest.NewServer(public)
	defer ps.Close()
	subs := make([]push.Subscription, 32)
	for i := range subs {
		subs[i] = ps.Subscribe()
	}
	msg := contentPush("msg_bench", 480)

	sender, err := NewSender(Config{VAPIDPublicKey: public, VAPIDPrivateKey: private, Subject: "ops@example.org",
		AllowPrivateEndpoints: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	direct := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}

	for _, concurrency := range []int{1, 32} {
		b.Run(fmt.Sprintf("sender/concurrency=%d", concurrency), func(b *testing.B) {
			runConcurrently(b, concurrency, func(i int) {
				d, err := sender.Send(context.Background(), subs[i%len(subs)], msg)
				if err != nil || d.Outcome != push.OutcomeDelivered {
					b.Errorf("%+v, %v", d, err)
				}
			})
		})
		b.Run(fmt.Sprintf("webpush-go/concurrency=%d", concurrency), func(b *testing.B) {
			runConcurrently(b, concurrency, func(i int) {
				sub := subs[i%len(subs)]
				resp, err := webpushgo.SendNotificationWithContext(context.Background(), append([]byte(nil), msg.Payload...),
					&webpushgo.Subscription{Endpoint: sub.Endpoint, Keys: webpushgo.Keys{Auth: sub.Keys.Auth, P256dh: sub.Keys.P256dh}},
					&webpushgo.Options{HTTPClient: direct, Subscriber: "ops@example.org", VAPIDPublicKey: public,
						VAPIDPrivateKey: private, TTL: 60, Urgency: webpushgo.UrgencyHigh,
						RecordSize: uint32(len(msg.Payload) + push.EncryptionOverhead)})
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					b.Errorf("status %d", resp.StatusCode)
				}
			})
		})
	}
	if errs := ps.Errors(); len(errs) != 0 {
		b.Fatalf("the push service refused requests: %v", errs[0])
	}
}

// runConcurrently calls op b.N times from n goroutines and reports the
// process CPU time per call beside the wall time. op reports failures with
// b.Error, since b.Fatal must not run outside the benchmark's goroutine.
func runConcurrently(b *testing.B, n int, op func(i int)) {
	b.ReportAllocs()
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	cpu := processCPU()
	for range n {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(b.N); i = next.Add(1) - 1 {
				op(int(i))
			}
		})
	}
	wg.Wait()
	if used := processCPU() - cpu; used > 0 {
		b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}
