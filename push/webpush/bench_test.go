package webpush

import (
	"bufio"
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	webpushgo "github.com/SherClockHolmes/webpush-go"

	"amsg/push"
	"amsg/push/pushtest"
)

// pushServiceKeyEnv carries the VAPID public key to the push service child
// of BenchmarkDelivery; its presence is what makes TestPushServiceProcess
// run.
const pushServiceKeyEnv = "AMSG_BENCH_PUSH_SERVICE_KEY"

// pushServiceHello is what the child announces on stdout once listening.
type pushServiceHello struct {
	URL     string
	CertPEM []byte
	Subs    []push.Subscription
}

// pushServiceReport is what the child says when its stdin closes.
type pushServiceReport struct {
	Counts     pushtest.Counts
	FirstError string
}

// TestPushServiceProcess is BenchmarkDelivery's push service, run in a
// child process (this test binary again) so the sender's CPU time is
// measured alone: pushtest over TLS, verifying VAPID and decrypting every
// push, keeping counts only. It serves until its stdin closes.
func TestPushServiceProcess(t *testing.T) {
	key := os.Getenv(pushServiceKeyEnv)
	if key == "" {
		t.Skip("the push service of BenchmarkDelivery, run only as its child")
	}
	ps := pushtest.NewServerWithOptions(key, pushtest.Options{TLS: true, DiscardBodies: true})
	defer ps.Close()
	hello := pushServiceHello{URL: ps.URL, CertPEM: ps.CertPEM(), Subs: make([]push.Subscription, 64)}
	for i := range hello.Subs {
		hello.Subs[i] = ps.Subscribe()
	}
	out := json.NewEncoder(os.Stdout)
	if err := out.Encode(hello); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	report := pushServiceReport{Counts: ps.Counts()}
	if errs := ps.Errors(); len(errs) > 0 {
		report.FirstError = errs[0].Error()
	}
	if err := out.Encode(report); err != nil {
		t.Fatal(err)
	}
}

// pushServiceChild is a running child push service.
type pushServiceChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *json.Decoder
	hello pushServiceHello
}

// startPushService starts the child, pinned to the last CPU with taskset
// when there are two or more, so that with the benchmark itself pinned to
// CPU 0 (taskset -c 0 go test …) the two never share a core.
func startPushService(b *testing.B, vapidPublic string) *pushServiceChild {
	args := []string{os.Args[0], "-test.run=^TestPushServiceProcess$", "-test.v=false"}
	if path, err := exec.LookPath("taskset"); err == nil && runtime.NumCPU() >= 2 {
		args = append([]string{path, "-c", fmt.Sprint(runtime.NumCPU() - 1)}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), pushServiceKeyEnv+"="+vapidPublic)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	c := &pushServiceChild{cmd: cmd, stdin: stdin, out: json.NewDecoder(bufio.NewReader(stdout))}
	if err := c.out.Decode(&c.hello); err != nil {
		_ = cmd.Process.Kill()
		b.Fatalf("the push service did not start: %v", err)
	}
	return c
}

// stop closes the child's stdin and returns its report.
func (c *pushServiceChild) stop(b *testing.B) pushServiceReport {
	_ = c.stdin.Close()
	var r pushServiceReport
	if err := c.out.Decode(&r); err != nil {
		b.Errorf("the push service's report: %v", err)
	}
	_ = c.cmd.Wait()
	return r
}

// BenchmarkDelivery measures the CPU our sender spends per push delivered
// over TLS (HTTP/2) to a verifying, decrypting push service in another
// process, beside webpush-go v1.4.0 called directly with the same payload,
// record size, TTL, urgency and a pooled client in the same run. cpu-ns/op
// is this process's CPU time per push, so 1e9/cpu-ns/op is pushes per
// second per core. See docs/performance.md for the command and numbers.
func BenchmarkDelivery(b *testing.B) {
	public, private, err := GenerateVAPIDKeys()
	if err != nil {
		b.Fatal(err)
	}
	child, sender := startDeliveryBench(b, public, private)
	netHTTP, err := NewSender(withNetHTTPOnly(sender.cfg))
	if err != nil {
		b.Fatal(err)
	}
	subs := child.hello.Subs
	msg := contentPush("msg_bench", 480)
	direct := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: sender.transport.TLSClientConfig, ForceAttemptHTTP2: true,
		MaxIdleConnsPerHost: 256,
	}}
	var sent atomic.Int64
	for _, concurrency := range []int{1, 32} {
		for name, sender := range map[string]*Sender{"sender": sender, "sender-net-http": netHTTP} {
			b.Run(fmt.Sprintf("%s/concurrency=%d", name, concurrency), func(b *testing.B) {
				runConcurrently(b, concurrency, func(i int) {
					d, err := sender.Send(context.Background(), subs[i%len(subs)], msg)
					if err != nil || d.Outcome != push.OutcomeDelivered {
						b.Errorf("%+v, %v", d, err)
					}
					sent.Add(1)
				})
			})
		}
		b.Run(fmt.Sprintf("webpush-go/concurrency=%d", concurrency), func(b *testing.B) {
			runConcurrently(b, concurrency, func(i int) {
				sub := subs[i%len(subs)]
				resp, err := webpushgo.SendNotificationWithContext(context.Background(), append([]byte(nil), msg.Payload...),
					&webpushgo.Subscription{Endpoint: sub.Endpoint, Keys: webpushgo.Keys{Auth: sub.Keys.Auth, P256dh: sub.Keys.P256dh}},
					&webpushgo.Options{HTTPClient: direct, Subscriber: "ops@example.org", VAPIDPublicKey: public,
						VAPIDPrivateKey: private, TTL: 600, Urgency: webpushgo.UrgencyHigh,
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
				sent.Add(1)
			})
		})
	}
	report := child.stop(b)
	if report.Counts.Errors != 0 || int64(report.Counts.Delivered) != sent.Load() {
		b.Fatalf("the push service delivered %d of %d pushes, %d errors (first: %s)",
			report.Counts.Delivered, sent.Load(), report.Counts.Errors, report.FirstError)
	}
}

// withNetHTTPOnly is cfg sending through net/http only.
func withNetHTTPOnly(cfg Config) Config {
	cfg.NetHTTPOnly = true
	return cfg
}

// startDeliveryBench starts the push service in its own process and a sender
// that trusts its certificate, for the delivery benchmarks.
func startDeliveryBench(b *testing.B, public, private string) (*pushServiceChild, *Sender) {
	child := startPushService(b, public)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(child.hello.CertPEM)
	sender, err := NewSender(Config{VAPIDPublicKey: public, VAPIDPrivateKey: private, Subject: "ops@example.org",
		AllowPrivateEndpoints: true, RootCAs: pool, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	return child, sender
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
		b.ReportMetric(float64(b.N)/used.Seconds(), "pushes/cpu-s")
	}
}

// BenchmarkSealPush is RFC 8291's work for one push of 480 bytes to one
// subscription (the ephemeral key, ECDH, HKDF, AES-GCM), apart from the
// request: the share of BenchmarkDelivery no sender can skip.
func BenchmarkSealPush(b *testing.B) {
	ps := pushtest.NewServer(pushtest.RFC8291Example.ASPublic)
	defer ps.Close()
	keys, err := parseKeys(ps.Subscribe().Keys)
	if err != nil {
		b.Fatal(err)
	}
	payload := contentPush("msg_bench", 480).Payload
	b.ReportAllocs()
	cpu := processCPU()
	for b.Loop() {
		if _, err := sealPush(payload, keys, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((processCPU()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
