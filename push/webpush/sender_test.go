package webpush

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"amsg/push"
	"amsg/push/clocktest"
	"amsg/push/pushtest"
)

type fixture struct {
	// now is the sender's frozen clock: real time at the start of the test,
	// since the fake push service expires chunk sets by the real clock as a
	// browser does.
	now    time.Time
	ps     *pushtest.Server
	sender *Sender
	sleep  *clocktest.Sleeper
	reg    *prometheus.Registry
	logs   *bytes.Buffer
}

// newFixture starts a fake push service over TLS (so requests go through
// the sender's HTTP/2 client, as to a real push service) and a sender with
// an injected clock, sleep and jitter (none) that may send to it.
func newFixture(t *testing.T, configure ...func(*Config)) *fixture {
	t.Helper()
	public, private, err := GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{now: time.Now().Truncate(time.Second), ps: pushtest.NewServerWithOptions(public, pushtest.Options{TLS: true}),
		sleep: &clocktest.Sleeper{}, reg: prometheus.NewRegistry(), logs: &bytes.Buffer{}}
	t.Cleanup(f.ps.Close)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(f.ps.CertPEM())
	cfg := Config{
		VAPIDPublicKey: public, VAPIDPrivateKey: private, Subject: "mailto:ops@example.org",
		AllowPrivateEndpoints: true, RootCAs: roots,
		Registerer: f.reg,
		Logger:     slog.New(slog.NewTextHandler(&syncWriter{w: f.logs}, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:        func() time.Time { return f.now },
		Sleep:      f.sleep.Sleep,
		Jitter:     func(time.Duration) time.Duration { return 0 },
	}
	for _, c := range configure {
		c(&cfg)
	}
	if f.sender, err = NewSender(cfg); err != nil {
		t.Fatal(err)
	}
	return f
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// contentPush is an encoded content push whose message has n bytes.
func contentPush(id string, n int) Message {
	b, err := json.Marshal(map[string]any{
		"messageKind": "content", "messageType": "instant", "source": "instant", "messageId": id,
		"sessionId": "sess_1", "timestamp": "2026-03-01T12:00:00.000Z", "message": strings.Repeat("寿", n/3),
	})
	if err != nil {
		panic(err)
	}
	return Message{ID: id, Kind: push.KindContent, Payload: b, Source: push.SourceInstant}
}

func hostOf(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// metric reads a counter, or a histogram's sample count, from the
// registry the sender was given; outcome selects the labelled series.
func (f *fixture) metric(t *testing.T, name, outcome string) float64 {
	t.Helper()
	families, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if outcome != "" && (len(m.GetLabel()) != 1 || m.GetLabel()[0].GetValue() != outcome) {
				continue
			}
			if h := m.GetHistogram(); h != nil {
				return float64(h.GetSampleCount())
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// send sends msg to sub, failing the test if msg could not be sent at all.
func (f *fixture) send(t *testing.T, sub push.Subscription, msg Message) Delivery {
	t.Helper()
	d, err := f.sender.Send(context.Background(), sub, msg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (f *fixture) noErrors(t *testing.T) {
	t.Helper()
	if errs := f.ps.Errors(); len(errs) != 0 {
		t.Errorf("the push service refused requests: %v", errs)
	}
}

// TestSendReportsGoneDevice is the sender's half of issue 3's first "done
// when": of two devices, the first answers 410 and is reported gone (the
// courier deletes it: courier's TestGoneDeviceIsDeletedAndSkipped); the
// second decrypts the push; both attempts are reported.
func TestSendReportsGoneDevice(t *testing.T) {
	f := newFixture(t)
	gone, live := f.ps.Subscribe(), f.ps.Subscribe()
	f.ps.Respond(gone, 1, pushtest.Response{Status: http.StatusGone})
	msg := contentPush("msg_1", 300)

	goneRes, liveRes := f.send(t, gone, msg), f.send(t, live, msg)
	pushes, err := f.ps.WaitPushes(waitCtx(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(pushes) != 1 || pushes[0].Endpoint != live.Endpoint || !bytes.Equal(pushes[0].JSON, msg.Payload) {
		t.Fatalf("pushes %+v", pushes)
	}
	if goneRes.Outcome != push.OutcomeGone || liveRes.Outcome != push.OutcomeDelivered {
		t.Errorf("outcomes %+v, %+v", goneRes, liveRes)
	}
	// The sender stamps what it knows; the courier adds the user and device.
	host := hostOf(t, f.ps.URL)
	want := []push.Attempt{
		{At: f.now, MessageID: "msg_1", PushHost: host, Try: 1, Status: 410, Outcome: push.OutcomeGone},
		{At: f.now, MessageID: "msg_1", PushHost: host, Try: 1, Status: 201, Outcome: push.OutcomeDelivered},
	}
	attempts := slices.Concat(goneRes.Attempts, liveRes.Attempts)
	if len(attempts) != 2 {
		t.Fatalf("reported %d attempts, want 2: %+v", len(attempts), attempts)
	}
	for i, a := range attempts {
		w := want[i]
		w.Latency, w.Error = a.Latency, a.Error
		if a != w || a.Latency <= 0 {
			t.Errorf("attempt %+v, want %+v", a, w)
		}
		if strings.Contains(a.Error, "/push/") {
			t.Errorf("attempt error shows the endpoint: %q", a.Error)
		}
	}
	if got := f.metric(t, "amsg_push_deliveries_total", "gone"); got != 1 {
		t.Errorf("gone deliveries metric %v", got)
	}
	if got := f.metric(t, "amsg_push_attempts_total", "delivered"); got != 1 {
		t.Errorf("delivered attempts metric %v", got)
	}
	if got := f.metric(t, "amsg_push_attempt_duration_seconds", ""); got != 2 {
		t.Errorf("latency histogram has %v samples, want 2", got)
	}
	f.noErrors(t)
}

func TestRetryAfterIsHonoured(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		retryAfter func(now time.Time) string
		wantWait   time.Duration
	}{
		{"429 seconds", 429, func(time.Time) string { return "1" }, time.Second},
		{"503 HTTP date", 503, func(now time.Time) string { return now.Add(3 * time.Second).Format(http.TimeFormat) }, 3 * time.Second},
		{"429 shorter than the backoff", 429, func(time.Time) string { return "0" }, 250 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			sub := f.ps.Subscribe()
			f.ps.Respond(sub, 1, pushtest.Response{Status: tt.status, RetryAfter: tt.retryAfter(f.now)})
			d, err := f.sender.Send(context.Background(), sub, contentPush("msg_r", 100))
			if err != nil {
				t.Fatal(err)
			}
			if d.Outcome != push.OutcomeDelivered || d.Status != 201 || len(d.Attempts) != 2 {
				t.Fatalf("delivery %+v", d)
			}
			if a := d.Attempts[0]; a.Status != tt.status || a.Outcome != push.OutcomeRetry || a.Try != 1 {
				t.Errorf("first attempt %+v", a)
			}
			if a := d.Attempts[1]; a.Status != 201 || a.Outcome != push.OutcomeDelivered || a.Try != 2 {
				t.Errorf("second attempt %+v", a)
			}
			if waits := f.sleep.Waits(); !slices.Equal(waits, []time.Duration{tt.wantWait}) {
				t.Errorf("waited %v, want [%s]", waits, tt.wantWait)
			}
			if n := len(f.ps.Messages()); n != 1 {
				t.Errorf("%d delivered", n)
			}
			f.noErrors(t)
		})
	}
}

// TestRetryAfterRealTime runs the real sleep once: the retry reaches the
// push service no sooner than the second it asked for.
func TestRetryAfterRealTime(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Sleep = nil; c.Now = nil })
	sub := f.ps.Subscribe()
	f.ps.Respond(sub, 1, pushtest.Response{Status: 429, RetryAfter: "1"})
	d, err := f.sender.Send(context.Background(), sub, contentPush("msg_rt", 100))
	if err != nil || d.Outcome != push.OutcomeDelivered {
		t.Fatalf("%+v, %v", d, err)
	}
	reqs := f.ps.Requests()
	if len(reqs) != 2 || reqs[0].Status != 429 || reqs[1].Status != 201 {
		t.Fatalf("requests %+v", reqs)
	}
	if gap := reqs[1].ReceivedAt.Sub(reqs[0].ReceivedAt); gap < time.Second {
		t.Errorf("retried after %s, before the requested second", gap)
	}
}

func TestBackoffWithoutRetryAfter(t *testing.T) {
	f := newFixture(t)
	sub := f.ps.Subscribe()
	f.ps.Respond(sub, 2, pushtest.Response{Status: 500})
	d, err := f.sender.Send(context.Background(), sub, contentPush("msg_b", 100))
	if err != nil || d.Outcome != push.OutcomeDelivered || len(d.Attempts) != 3 {
		t.Fatalf("%+v, %v", d, err)
	}
	if waits := f.sleep.Waits(); !slices.Equal(waits, []time.Duration{250 * time.Millisecond, 500 * time.Millisecond}) {
		t.Errorf("waited %v", waits)
	}
}

func TestRetriesAreBounded(t *testing.T) {
	t.Run("attempts", func(t *testing.T) {
		f := newFixture(t)
		sub := f.ps.Subscribe()
		f.ps.Respond(sub, 10, pushtest.Response{Status: 503})
		d := f.send(t, sub, contentPush("msg_x", 100))
		if d.Outcome != push.OutcomeFailed || len(d.Attempts) != 4 || !strings.Contains(d.Err.Error(), "gave up after 4 attempts: 503") {
			t.Fatalf("%+v", d)
		}
		if last := d.Attempts[3]; last.Outcome != push.OutcomeFailed || last.Try != 4 {
			t.Errorf("last attempt %+v", last)
		}
		if n := len(f.sleep.Waits()); n != 3 {
			t.Errorf("%d waits, want 3", n)
		}
	})
	t.Run("total wait", func(t *testing.T) {
		f := newFixture(t)
		sub := f.ps.Subscribe()
		f.ps.Respond(sub, 1, pushtest.Response{Status: 429, RetryAfter: "3600"})
		d, _ := f.sender.Send(context.Background(), sub, contentPush("msg_y", 100))
		if d.Outcome != push.OutcomeFailed || len(d.Attempts) != 1 || !strings.Contains(d.Err.Error(), "retry budget") {
			t.Fatalf("%+v", d)
		}
		if n := len(f.sleep.Waits()); n != 0 {
			t.Errorf("slept %d times", n)
		}
	})
	t.Run("context deadline", func(t *testing.T) {
		f := newFixture(t)
		sub := f.ps.Subscribe()
		f.ps.Respond(sub, 1, pushtest.Response{Status: 429, RetryAfter: "20"})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		d, _ := f.sender.Send(ctx, sub, contentPush("msg_z", 100))
		if d.Outcome != push.OutcomeFailed || len(d.Attempts) != 1 || len(f.sleep.Waits()) != 0 {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("network error", func(t *testing.T) {
		f := newFixture(t)
		closed := httptest.NewServer(http.NotFoundHandler())
		closed.Close()
		sub := f.ps.Subscribe()
		sub.Endpoint = closed.URL + "/push/x"
		d, _ := f.sender.Send(context.Background(), sub, contentPush("msg_n", 100))
		if d.Outcome != push.OutcomeFailed || len(d.Attempts) != 4 || d.Attempts[0].Outcome != push.OutcomeRetry ||
			d.Attempts[0].Status != 0 || !strings.Contains(d.Attempts[0].Error, "network error") {
			t.Fatalf("%+v", d)
		}
		if strings.Contains(d.Err.Error(), "/push/x") {
			t.Errorf("error shows the endpoint: %v", d.Err)
		}
	})
}

func TestStatusPolicy(t *testing.T) {
	tests := []struct {
		status  int
		outcome push.Outcome
		text    string
	}{
		{400, push.OutcomeConfigError, "malformed"},
		{401, push.OutcomeConfigError, "VAPID"},
		{403, push.OutcomeConfigError, "VAPID"},
		{404, push.OutcomeGone, "gone"},
		{410, push.OutcomeGone, "gone"},
		{413, push.OutcomeTooLarge, "too large"},
		{302, push.OutcomeFailed, "redirect"},
		{422, push.OutcomeFailed, "422"},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			f := newFixture(t)
			sub := f.ps.Subscribe()
			f.ps.Respond(sub, 1, pushtest.Response{Status: tt.status, Body: `{"reason":"BadJwtToken"}`})
			d := f.send(t, sub, contentPush("msg_s", 100))
			if d.Outcome != tt.outcome || d.Status != tt.status || len(d.Attempts) != 1 ||
				!strings.Contains(d.Err.Error(), tt.text) || !strings.Contains(d.Err.Error(), "BadJwtToken") {
				t.Fatalf("delivery %+v", d)
			}
			if tt.outcome == push.OutcomeConfigError && !strings.Contains(f.logs.String(), "level=ERROR") {
				t.Errorf("a configuration error was not logged as one:\n%s", f.logs)
			}
			if len(f.sleep.Waits()) != 0 {
				t.Errorf("retried a %d", tt.status)
			}
		})
	}
}

func TestRedirectIsNotFollowed(t *testing.T) {
	f := newFixture(t)
	target := f.ps.Subscribe()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.Endpoint, http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	sub := target
	sub.Endpoint = redirect.URL + "/push/elsewhere"
	d, _ := f.sender.Send(context.Background(), sub, contentPush("msg_redir", 100))
	if d.Outcome != push.OutcomeFailed || d.Status != 307 || !strings.Contains(d.Err.Error(), "redirect") {
		t.Fatalf("%+v", d)
	}
	if n := len(f.ps.Requests()); n != 0 {
		t.Errorf("the redirect was followed: %d requests reached its target", n)
	}
}

// TestTooLargeKeepsSubscription: 413 fails the message, not the
// subscription: the outcome is too large, not gone, which is the only one
// the courier deletes a device for.
func TestTooLargeKeepsSubscription(t *testing.T) {
	f := newFixture(t)
	sub := f.ps.Subscribe()
	f.ps.Respond(sub, 1, pushtest.Response{Status: 413})
	d := f.send(t, sub, contentPush("msg_big", 600)) // below a chunk: no fallback
	if d.Outcome != push.OutcomeTooLarge || d.Chunks != 0 || len(d.Attempts) != 1 {
		t.Fatalf("%+v", d)
	}
}

// TestTooLargeFallsBackToChunks: a push service that caps bodies near 3 KB
// refuses a 3 KB inline push; it then arrives as chunks.
func TestTooLargeFallsBackToChunks(t *testing.T) {
	f := newFixture(t)
	f.ps.SetMaxBodyBytes(3070)
	sub := f.ps.Subscribe()
	msg := contentPush("msg_3k", 3000)
	if len(msg.Payload) > push.MaxPayloadBytes || len(msg.Payload) <= 3070-push.EncryptionOverhead {
		t.Fatalf("payload of %d bytes does not exercise the fallback", len(msg.Payload))
	}
	d, err := f.sender.Send(context.Background(), sub, msg)
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != push.OutcomeDelivered || d.Chunks != 2 || len(d.Attempts) != 3 || d.Attempts[0].Status != 413 {
		t.Fatalf("%+v", d)
	}
	// Issue 23, point 9: a delivered chunk's attempt has no error (it read
	// "chunk 2/2: ").
	for _, a := range d.Attempts[1:] {
		if a.Outcome != push.OutcomeDelivered || a.Error != "" {
			t.Errorf("delivered chunk attempt %+v, want no error", a)
		}
	}
	pushes, err := f.ps.WaitPushes(waitCtx(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pushes[0].JSON, msg.Payload) || pushes[0].Chunks != 2 {
		t.Errorf("push %+v", pushes[0])
	}
	f.noErrors(t)
}

// TestOversizedPushArrivesAsChunks: a 20 kB content push reaches the device
// as chunks that reassemble to the original JSON, every body within 4096
// bytes, and the chunks of one device carry distinct topics (a shared one
// would let them replace each other), the same on every device.
func TestOversizedPushArrivesAsChunks(t *testing.T) {
	f := newFixture(t)
	a, b := f.ps.Subscribe(), f.ps.Subscribe()
	msg := contentPush("msg_20k", 20000)
	msg.Topic = "reply"
	wantChunks := (len(msg.Payload) + push.DefaultMultipartChunkBytes - 1) / push.DefaultMultipartChunkBytes
	for _, d := range []Delivery{f.send(t, a, msg), f.send(t, b, msg)} {
		if d.Outcome != push.OutcomeDelivered || d.Chunks != wantChunks || len(d.Attempts) != wantChunks {
			t.Fatalf("%+v", d)
		}
		for i, at := range d.Attempts {
			if at.Try != i+1 {
				t.Errorf("attempt %d numbered %d", i+1, at.Try)
			}
		}
	}
	pushes, err := f.ps.WaitPushes(waitCtx(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pushes {
		if !bytes.Equal(p.JSON, msg.Payload) || p.Chunks != wantChunks {
			t.Errorf("%s: %d bytes in %d chunks, want the original %d bytes", p.Endpoint, len(p.JSON), p.Chunks, len(msg.Payload))
		}
	}
	topics := map[string][]string{} // by endpoint, in arrival order
	for _, m := range f.ps.Requests() {
		if len(m.Body) > push.MaxEncryptedBytes {
			t.Errorf("a chunk of %d bytes", len(m.Body))
		}
		topics[m.Endpoint] = append(topics[m.Endpoint], m.Topic)
	}
	seen := map[string]bool{}
	for _, topic := range topics[a.Endpoint] {
		if seen[topic] || topic == "" || topic == "reply" {
			t.Errorf("chunk topics %q are not distinct and derived", topics[a.Endpoint])
		}
		seen[topic] = true
	}
	if !slices.Equal(topics[a.Endpoint], topics[b.Endpoint]) {
		t.Errorf("the devices' chunk topics differ: %q and %q", topics[a.Endpoint], topics[b.Endpoint])
	}
	if got := f.metric(t, "amsg_push_multipart_messages_total", ""); got != 2 {
		t.Errorf("multipart messages metric %v, want 2 (one split per Send, as the courier sends per device)", got)
	}
	f.noErrors(t)
}

func TestHeadersAndBodySize(t *testing.T) {
	tests := []struct {
		name        string
		padTo       int
		msg         func(Message) Message
		ttl, urg    string
		topic       string
		wantBodyLen func(payload int) int
	}{
		{"instant", 0, func(m Message) Message { return m }, "600", "high", TopicOf("msg_h"), func(n int) int { return n + 103 }},
		{"scheduled", 0, func(m Message) Message { m.Source = push.SourceScheduled; return m }, "3600", "high", TopicOf("msg_h"), func(n int) int { return n + 103 }},
		{"overrides", 0, func(m Message) Message { m.TTL, m.Urgency, m.Topic = 2*time.Hour, UrgencyLow, "task-42_a"; return m },
			"7200", "low", "task-42_a", func(n int) int { return n + 103 }},
		{"padded", 4096, func(m Message) Message { return m }, "600", "high", TopicOf("msg_h"), func(int) int { return 4096 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(c *Config) { c.PadTo = tt.padTo })
			sub := f.ps.Subscribe()
			msg := tt.msg(contentPush("msg_h", 200))
			if _, err := f.sender.Send(context.Background(), sub, msg); err != nil {
				t.Fatal(err)
			}
			msgs, err := f.ps.WaitMessages(waitCtx(t), 1)
			if err != nil {
				t.Fatal(err)
			}
			m := msgs[0]
			if m.Header.Get("TTL") != tt.ttl || m.Header.Get("Urgency") != tt.urg || m.Header.Get("Topic") != tt.topic {
				t.Errorf("TTL %q Urgency %q Topic %q", m.Header.Get("TTL"), m.Header.Get("Urgency"), m.Header.Get("Topic"))
			}
			if want := tt.wantBodyLen(len(msg.Payload)); len(m.Body) != want {
				t.Errorf("body %d bytes, want %d", len(m.Body), want)
			}
			if !bytes.Equal(m.Plaintext, msg.Payload) {
				t.Error("plaintext differs")
			}
			f.noErrors(t)
		})
	}
}

func TestHTTPSSubject(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Subject = "https://amsg.example.org/contact" })
	d, err := f.sender.Send(context.Background(), f.ps.Subscribe(), contentPush("msg_sub", 10))
	if err != nil || d.Outcome != push.OutcomeDelivered {
		t.Fatalf("%+v, %v", d, err)
	}
	f.noErrors(t)
}

func TestPrivateEndpointsRefusedUnlessAllowed(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.AllowPrivateEndpoints = false })
	sub := f.ps.Subscribe() // http://127.0.0.1:port
	// Failed, not gone: the courier keeps the device.
	d := f.send(t, sub, contentPush("msg_p", 10))
	if d.Outcome != push.OutcomeFailed || !errors.Is(d.Err, ErrInvalidSubscription) {
		t.Fatalf("%+v", d)
	}
	if n := len(f.ps.Requests()); n != 0 {
		t.Errorf("%d requests reached a loopback push service", n)
	}
	// An https endpoint on loopback gets past the form checks and is stopped
	// by the dialer.
	sub.Endpoint = "https://127.0.0.1/push/x"
	d2, _ := f.sender.Send(context.Background(), sub, contentPush("msg_p2", 10))
	if d := d2; d.Outcome != push.OutcomeFailed || !strings.Contains(d.Err.Error(), "loopback") || len(d.Attempts) != 1 {
		t.Fatalf("%+v", d)
	}
}

func TestInvalidMessages(t *testing.T) {
	f := newFixture(t)
	sub := f.ps.Subscribe()
	base := contentPush("msg_i", 10)
	tests := []struct {
		name string
		msg  func(Message) Message
		want error
	}{
		{"no id", func(m Message) Message { m.ID = ""; return m }, ErrInvalidMessage},
		{"no source", func(m Message) Message { m.Source = ""; return m }, ErrInvalidMessage},
		{"ttl too long", func(m Message) Message { m.TTL = 29 * 24 * time.Hour; return m }, ErrInvalidMessage},
		{"bad urgency", func(m Message) Message { m.Urgency = "urgent"; return m }, ErrInvalidMessage},
		{"bad topic", func(m Message) Message { m.Topic = "has space"; return m }, ErrInvalidMessage},
		{"topic too long", func(m Message) Message { m.Topic = strings.Repeat("a", 33); return m }, ErrInvalidMessage},
		{"over 256000 bytes", func(m Message) Message { m.Payload = bytes.Repeat([]byte("x"), 256001); return m }, push.ErrPayloadTooLarge},
		{"a chunk as payload", func(m Message) Message {
			m.Kind, m.Payload = push.KindMultipart, bytes.Repeat([]byte("x"), 5000)
			return m
		}, push.ErrPayloadTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := f.sender.Send(context.Background(), sub, tt.msg(base)); !errors.Is(err, tt.want) {
				t.Errorf("Send: err = %v, want %v", err, tt.want)
			}
		})
	}
	if n := len(f.ps.Requests()); n != 0 {
		t.Errorf("%d requests for invalid messages", n)
	}
	var tooLarge *push.PayloadTooLargeError
	_, err := f.sender.Send(context.Background(), sub, tests[6].msg(base))
	if !errors.As(err, &tooLarge) || tooLarge.Code() != "PAYLOAD_TOO_LARGE" || !strings.Contains(err.Error(), "256000 bytes") {
		t.Errorf("err = %v", err)
	}
}

// TestConcurrentSharedPayload sends one payload to many devices at once,
// as the courier does (one Send per device, the same Message); every device
// must decrypt exactly it (run with -race).
func TestConcurrentSharedPayload(t *testing.T) {
	f := newFixture(t)
	msg := contentPush("msg_shared", 1500)
	msg.Payload = append(make([]byte, 0, len(msg.Payload)+64), msg.Payload...) // spare capacity, as json.Marshal leaves
	var wg sync.WaitGroup
	for range 16 {
		sub := f.ps.Subscribe()
		wg.Go(func() {
			if d, err := f.sender.Send(context.Background(), sub, msg); err != nil || d.Outcome != push.OutcomeDelivered {
				t.Errorf("%+v, %v", d, err)
			}
		})
	}
	wg.Wait()
	pushes, err := f.ps.WaitPushes(waitCtx(t), 16)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pushes {
		if !bytes.Equal(p.JSON, msg.Payload) {
			t.Fatalf("%s decrypted something else", p.Endpoint)
		}
	}
	if got := msg.Payload[:cap(msg.Payload)][len(msg.Payload)]; got != 0 {
		t.Errorf("the caller's spare capacity was written: %#x", got)
	}
}

func TestNewSenderRejectsBadConfig(t *testing.T) {
	public, private, err := GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	good := Config{VAPIDPublicKey: public, VAPIDPrivateKey: private, Subject: "ops@example.org"}
	tests := []struct {
		name   string
		modify func(*Config)
		want   string
	}{
		{"no subject", func(c *Config) { c.Subject = "" }, "subject is empty"},
		{"http subject", func(c *Config) { c.Subject = "http://example.org" }, "not an http: URL"},
		{"no keys", func(c *Config) { c.VAPIDPublicKey, c.VAPIDPrivateKey = "", "" }, "public key"},
		{"budget over 3993", func(c *Config) { c.InlineBudget = 3994 }, "InlineBudget"},
		{"chunks too large", func(c *Config) { c.ChunkBytes = maxChunkBytes + 1 }, "ChunkBytes"},
		{"padding over 4096", func(c *Config) { c.PadTo = 5000 }, "PadTo"},
		{"negative backoff", func(c *Config) { c.BaseBackoff = -time.Second }, "must not be negative"},
	}
	for _, tt := range tests {
		cfg := good
		tt.modify(&cfg)
		if _, err := NewSender(cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want one about %q", tt.name, err, tt.want)
		}
	}
	if _, err := NewSender(good); err != nil {
		t.Fatal(err)
	}
	// Two senders may share one registry.
	reg := prometheus.NewRegistry()
	good.Registerer = reg
	for range 2 {
		if _, err := NewSender(good); err != nil {
			t.Fatal(err)
		}
	}
	clash := prometheus.NewRegistry()
	clash.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "amsg_push_multipart_messages_total", Help: "x"}))
	good.Registerer = clash
	if _, err := NewSender(good); err == nil || !strings.Contains(err.Error(), "register metrics") {
		t.Errorf("a clashing metric name: err = %v", err)
	}
}

// TestMaxChunkBytesFits pins maxChunkBytes: a worst-case chunk of that many
// bytes (index and total 128, a 28-day ttlMs, the longest kind) still fits
// the plaintext budget.
func TestMaxChunkBytesFits(t *testing.T) {
	size := func(chunkBytes int) int {
		chunks, err := push.SplitMultipart(bytes.Repeat([]byte("x"), chunkBytes*push.DefaultMultipartMaxChunks),
			push.KindToolRequest, push.MultipartOptions{ChunkBytes: chunkBytes, TTL: ScheduledTTL, CreatedAt: time.Now(),
				MaxTotalBytes: chunkBytes * push.DefaultMultipartMaxChunks})
		if err != nil {
			t.Fatal(err)
		}
		return len(chunks[len(chunks)-1])
	}
	if n := size(maxChunkBytes); n > push.MaxPayloadBytes {
		t.Errorf("a %d-byte chunk makes a %d-byte push, over %d", maxChunkBytes, n, push.MaxPayloadBytes)
	}
	if n := size(push.DefaultMultipartChunkBytes); n > 2700 {
		t.Errorf("a default chunk makes a %d-byte push", n)
	}
}

// TestHeadersPerKindAndSource: Urgency follows the kind, TTL the source,
// and the Topic the message id, as pushtest records them.
func TestHeadersPerKindAndSource(t *testing.T) {
	f := newFixture(t)
	sub := f.ps.Subscribe()
	urgency := map[push.Kind]string{push.KindContent: "high", push.KindReasoning: "low",
		push.KindToolRequest: "normal", push.KindError: "normal"}
	ttl := map[push.Source]int{push.SourceInstant: 600, push.SourceScheduled: 3600}
	for kind, wantUrgency := range urgency {
		for source, wantTTL := range ttl {
			id := "msg_" + string(kind) + "_" + string(source)
			payload := []byte(`{"messageKind":"` + string(kind) + `","messageId":"` + id + `"}`)
			d, err := f.sender.Send(context.Background(), sub, Message{ID: id, Kind: kind, Payload: payload, Source: source})
			if err != nil || d.Outcome != push.OutcomeDelivered {
				t.Fatalf("%s/%s: %+v, %v", kind, source, d, err)
			}
			msgs := f.ps.Messages()
			m := msgs[len(msgs)-1]
			if m.Urgency != wantUrgency || m.TTL != wantTTL || m.Topic != TopicOf(id) || len(m.Topic) != 32 {
				t.Errorf("%s/%s: Urgency %q TTL %d Topic %q; want %q %d %q", kind, source, m.Urgency, m.TTL, m.Topic,
					wantUrgency, wantTTL, TopicOf(id))
			}
		}
	}
	if TopicOf("msg_a") == TopicOf("msg_b") || strings.Trim(TopicOf("msg_a"), "0123456789abcdef") != "" {
		t.Errorf("topics %q %q", TopicOf("msg_a"), TopicOf("msg_b"))
	}
	f.noErrors(t)
}

// Issue 23, point 9: a 400 whose body says the push service does not know
// the subscription is its own outcome, which the housekeeping prunes once
// it repeats; any other 400 stays a configuration error.
func TestBadRequestNamingTheSubscription(t *testing.T) {
	for _, c := range []struct {
		body string
		want push.Outcome
	}{
		{`{"error":{"code":400,"message":"The registration token is not a valid FCM registration token","status":"INVALID_ARGUMENT"}}`, push.OutcomeUnknownSubscription},
		{`{"errno":102,"error":"Invalid subscription"}`, push.OutcomeUnknownSubscription},
		{`{"error":"TTL header missing"}`, push.OutcomeConfigError},
		{"", push.OutcomeConfigError},
	} {
		f := newFixture(t)
		sub := f.ps.Subscribe()
		f.ps.Respond(sub, 1, pushtest.Response{Status: http.StatusBadRequest, Body: c.body})
		d, err := f.sender.Send(context.Background(), sub, contentPush("msg_400", 100))
		if err != nil {
			t.Fatal(err)
		}
		if d.Outcome != c.want || len(d.Attempts) != 1 || d.Attempts[0].Outcome != c.want {
			t.Errorf("400 %q: %+v, want %s", c.body, d, c.want)
		}
	}
}
