package pushtest_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	webpushgo "github.com/SherClockHolmes/webpush-go"

	"amsg/push"
	"amsg/push/pushtest"
)

// These tests drive the fake with webpush-go itself, an independent sender,
// to show the fake accepts what a real library sends and catches its traps.

func newServer(t *testing.T) (*pushtest.Server, string, string) {
	t.Helper()
	priv, pub, err := webpushgo.GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	s := pushtest.NewServer(pub)
	t.Cleanup(s.Close)
	return s, pub, priv
}

func send(t *testing.T, sub push.Subscription, payload []byte, pub, priv, subscriber string, recordSize uint32) int {
	t.Helper()
	resp, err := webpushgo.SendNotificationWithContext(context.Background(), payload, &webpushgo.Subscription{
		Endpoint: sub.Endpoint, Keys: webpushgo.Keys{Auth: sub.Keys.Auth, P256dh: sub.Keys.P256dh},
	}, &webpushgo.Options{
		Subscriber: subscriber, VAPIDPublicKey: pub, VAPIDPrivateKey: priv, TTL: 60, RecordSize: recordSize,
		Urgency: webpushgo.UrgencyHigh,
	})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestServerDecryptsAndRecords(t *testing.T) {
	s, pub, priv := newServer(t)
	a, b := s.Subscribe(), s.Subscribe()
	if a.Endpoint == b.Endpoint || !strings.HasPrefix(a.Endpoint, s.URL+"/push/") {
		t.Fatalf("endpoints %s and %s", a.Endpoint, b.Endpoint)
	}
	if status := send(t, a, []byte(`{"messageKind":"content","message":"hi a"}`), pub, priv, "ops@example.org", 0); status != 201 {
		t.Fatalf("status %d, errors %v", status, s.Errors())
	}
	if status := send(t, b, []byte(`{"messageKind":"content","message":"hi b"}`), pub, priv, "ops@example.org", 0); status != 201 {
		t.Fatalf("status %d, errors %v", status, s.Errors())
	}
	msgs, err := s.WaitMessages(waitCtx(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	if msgs[0].Endpoint != a.Endpoint || string(msgs[0].Plaintext) != `{"messageKind":"content","message":"hi a"}` ||
		msgs[1].Endpoint != b.Endpoint || string(msgs[1].Plaintext) != `{"messageKind":"content","message":"hi b"}` {
		t.Errorf("messages %+v", msgs)
	}
	if m := msgs[0]; m.Header.Get("TTL") != "60" || m.Header.Get("Urgency") != "high" || len(m.Body) != 4096 || m.RecordSize != 4096 {
		t.Errorf("headers %v, body %d bytes, rs %d", m.Header, len(m.Body), m.RecordSize)
	}
	pushes := s.Pushes()
	if len(pushes) != 2 || pushes[0].Chunks != 0 || !bytes.Equal(pushes[1].JSON, msgs[1].Plaintext) {
		t.Errorf("pushes %+v", pushes)
	}
	if errs := s.Errors(); len(errs) != 0 {
		t.Errorf("errors %v", errs)
	}
}

func TestServerCatchesDoubleMailto(t *testing.T) {
	s, pub, priv := newServer(t)
	sub := s.Subscribe()
	// webpush-go v1.4.0 prefixes mailto: itself; handing it one too signs
	// sub "mailto:mailto:…", which Apple refuses.
	if status := send(t, sub, []byte(`{}`), pub, priv, "mailto:ops@example.org", 0); status != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", status)
	}
	errs := s.Errors()
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `"mailto:mailto:ops@example.org"`) {
		t.Errorf("errors %v", errs)
	}
	if len(s.Messages()) != 0 || len(s.Requests()) != 1 {
		t.Errorf("a refused request counted as delivered")
	}
}

func TestServerRefusesOtherVAPIDKey(t *testing.T) {
	s, _, _ := newServer(t)
	sub := s.Subscribe()
	otherPriv, otherPub, err := webpushgo.GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	if status := send(t, sub, []byte(`{}`), otherPub, otherPriv, "ops@example.org", 0); status != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", status)
	}
	if errs := s.Errors(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "k=") {
		t.Errorf("errors %v", errs)
	}
}

func TestServerScriptedAnswers(t *testing.T) {
	s, pub, priv := newServer(t)
	sub, other := s.Subscribe(), s.Subscribe()
	s.Respond(sub, 2, pushtest.Response{Status: 429, RetryAfter: "7"})
	s.Respond(sub, 1, pushtest.Response{Status: 500})
	payload := []byte(`{"n":1}`)
	var got []int
	for range 4 {
		got = append(got, send(t, sub, payload, pub, priv, "ops@example.org", 0))
	}
	if want := []int{429, 429, 500, 201}; !slices.Equal(got, want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
	if status := send(t, other, payload, pub, priv, "ops@example.org", 0); status != 201 {
		t.Errorf("a script for one subscription answered another: %d", status)
	}
	reqs := s.Requests()
	if len(reqs) != 5 || reqs[0].Plaintext == nil || string(reqs[0].Plaintext) != `{"n":1}` {
		t.Errorf("refused requests are still verified and decrypted: %+v", reqs[0])
	}
	if n := len(s.Messages()); n != 2 {
		t.Errorf("%d delivered, want 2", n)
	}
	s.Unsubscribe(sub)
	if status := send(t, sub, payload, pub, priv, "ops@example.org", 0); status != http.StatusGone {
		t.Errorf("unsubscribed: status %d, want 410", status)
	}
	unknown := sub
	unknown.Endpoint = s.URL + "/push/unknown"
	if status := send(t, unknown, payload, pub, priv, "ops@example.org", 0); status != http.StatusNotFound {
		t.Errorf("unknown endpoint: status %d, want 404", status)
	}
}

func TestServerRetryAfterHeader(t *testing.T) {
	s, pub, priv := newServer(t)
	sub := s.Subscribe()
	s.Respond(sub, 1, pushtest.Response{Status: 429, RetryAfter: "3"})
	resp, err := webpushgo.SendNotification([]byte(`{}`), &webpushgo.Subscription{
		Endpoint: sub.Endpoint, Keys: webpushgo.Keys{Auth: sub.Keys.Auth, P256dh: sub.Keys.P256dh},
	}, &webpushgo.Options{Subscriber: "ops@example.org", VAPIDPublicKey: pub, VAPIDPrivateKey: priv, TTL: 1})
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" {
		t.Errorf("status %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

func TestServerBodyLimit(t *testing.T) {
	s, pub, priv := newServer(t)
	sub := s.Subscribe()
	payload := bytes.Repeat([]byte("x"), 2000)
	s.SetMaxBodyBytes(3070)
	if status := send(t, sub, payload, pub, priv, "ops@example.org", 0); status != http.StatusRequestEntityTooLarge {
		t.Errorf("4096-byte body to a 3070-byte service: status %d, want 413", status)
	}
	if status := send(t, sub, payload, pub, priv, "ops@example.org", 2000+103); status != 201 {
		t.Errorf("2103-byte body: status %d, want 201", status)
	}
	if len(s.Errors()) != 0 {
		t.Errorf("413 is an answer, not a verification error: %v", s.Errors())
	}
}

func TestServerReassemblesMultipart(t *testing.T) {
	s, pub, priv := newServer(t)
	sub := s.Subscribe()
	original := []byte(`{"messageKind":"content","message":"` + strings.Repeat("寿司", 2000) + `"}`)
	chunks, err := push.SplitMultipart(original, push.KindContent, push.MultipartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := len(chunks) - 1; i >= 0; i-- { // out of order on purpose
		if status := send(t, sub, chunks[i], pub, priv, "ops@example.org", 0); status != 201 {
			t.Fatalf("chunk %d: status %d", i+1, status)
		}
	}
	pushes, err := s.WaitPushes(waitCtx(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(pushes) != 1 || pushes[0].Chunks != len(chunks) || !bytes.Equal(pushes[0].JSON, original) {
		t.Errorf("got %d pushes, first of %d chunks, equal=%v", len(pushes), pushes[0].Chunks, bytes.Equal(pushes[0].JSON, original))
	}
	if n := len(s.Messages()); n != len(chunks) {
		t.Errorf("%d messages, want one per chunk (%d)", n, len(chunks))
	}
}

func TestServerDeviceClock(t *testing.T) {
	s, pub, priv := newServer(t)
	sub := s.Subscribe()
	future := time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)
	original := []byte(`{"messageKind":"content","message":"` + strings.Repeat("x", 3000) + `"}`)
	chunks, err := push.SplitMultipart(original, push.KindContent, push.MultipartOptions{CreatedAt: future})
	if err != nil {
		t.Fatal(err)
	}
	// On the real clock, a set made an hour ago has expired.
	stale, err := push.SplitMultipart(original, push.KindContent, push.MultipartOptions{CreatedAt: time.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if status := send(t, sub, stale[0], pub, priv, "ops@example.org", 0); status != 201 {
		t.Fatalf("status %d", status)
	}
	if errs := s.Errors(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "expired") {
		t.Fatalf("errors %v, want the stale chunk expired", errs)
	}
	// With the device clock agreeing with a sender that lives in 2030, its
	// set reassembles.
	s.SetDeviceClock(func() time.Time { return future.Add(10 * time.Second) })
	for _, c := range chunks {
		if status := send(t, sub, c, pub, priv, "ops@example.org", 0); status != 201 {
			t.Fatalf("status %d", status)
		}
	}
	pushes, err := s.WaitPushes(waitCtx(t), 1)
	if err != nil || !bytes.Equal(pushes[0].JSON, original) {
		t.Fatalf("%v", err)
	}
	if n := len(s.Errors()); n != 1 {
		t.Errorf("%d errors, want only the stale chunk's", n)
	}
}

func TestWaitMessagesHonoursContext(t *testing.T) {
	s, _, _ := newServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.WaitMessages(ctx, 1); err == nil || !strings.Contains(err.Error(), "got 0") {
		t.Errorf("err = %v", err)
	}
}

func TestSubscriptionKeys(t *testing.T) {
	s, _, _ := newServer(t)
	sub := s.Subscribe()
	p, err := base64.RawURLEncoding.DecodeString(sub.Keys.P256dh)
	if err != nil || len(p) != 65 || p[0] != 4 {
		t.Errorf("p256dh %q", sub.Keys.P256dh)
	}
	a, err := base64.RawURLEncoding.DecodeString(sub.Keys.Auth)
	if err != nil || len(a) != 16 {
		t.Errorf("auth %q", sub.Keys.Auth)
	}
}

// sendWith sends through webpush-go with the given client and options.
func sendWith(t *testing.T, client *http.Client, sub push.Subscription, payload []byte, opts webpushgo.Options) *http.Response {
	t.Helper()
	if client != nil {
		opts.HTTPClient = client
	}
	resp, err := webpushgo.SendNotificationWithContext(context.Background(), payload, &webpushgo.Subscription{
		Endpoint: sub.Endpoint, Keys: webpushgo.Keys{Auth: sub.Keys.Auth, P256dh: sub.Keys.P256dh},
	}, &opts)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp
}

func TestServerRecordsHeaders(t *testing.T) {
	s, pub, priv := newServer(t)
	sub := s.Subscribe()
	opts := webpushgo.Options{Subscriber: "ops@example.org", VAPIDPublicKey: pub, VAPIDPrivateKey: priv,
		TTL: 600, Urgency: webpushgo.UrgencyLow, Topic: "abcDEF012-_"}
	if resp := sendWith(t, nil, sub, []byte(`{}`), opts); resp.StatusCode != 201 {
		t.Fatalf("status %d, errors %v", resp.StatusCode, s.Errors())
	}
	m := s.Messages()[0]
	if m.TTL != 600 || m.Urgency != "low" || m.Topic != "abcDEF012-_" || !strings.HasPrefix(m.Authorization, "vapid t=") {
		t.Errorf("TTL %d Urgency %q Topic %q Authorization %q", m.TTL, m.Urgency, m.Topic, m.Authorization)
	}
	for _, topic := range []string{"has space", "dot.ted", strings.Repeat("a", 33)} {
		opts.Topic = topic
		if resp := sendWith(t, nil, sub, []byte(`{}`), opts); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("Topic %q: status %d, want 400", topic, resp.StatusCode)
		}
	}
	if c := s.Counts(); c.Requests != 4 || c.Delivered != 1 || c.Errors != 3 {
		t.Errorf("counts %+v", c)
	}
}

// TestServerTLSAndDiscard: a TLS server a client trusts through the PEM
// alone, keeping counts but no bodies, and still refusing bad requests.
func TestServerTLSAndDiscard(t *testing.T) {
	_, pub, priv := newServer(t)
	var mu sync.Mutex
	var seen []string // plaintexts OnDelivered saw
	s := pushtest.NewServerWithOptions(pub, pushtest.Options{TLS: true, DiscardBodies: true, OnDelivered: func(m pushtest.Message) {
		mu.Lock()
		seen = append(seen, string(m.Plaintext))
		mu.Unlock()
	}})
	t.Cleanup(s.Close)
	if !strings.HasPrefix(s.URL, "https://127.0.0.1:") {
		t.Fatalf("URL %s", s.URL)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.CertPEM()) {
		t.Fatal("CertPEM is not a PEM certificate")
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	sub := s.Subscribe()
	opts := webpushgo.Options{Subscriber: "ops@example.org", VAPIDPublicKey: pub, VAPIDPrivateKey: priv, TTL: 60}
	for range 3 {
		if resp := sendWith(t, client, sub, []byte(`{"messageKind":"content","message":"hi"}`), opts); resp.StatusCode != 201 || resp.ProtoMajor != 2 {
			t.Fatalf("status %d over %s, errors %v", resp.StatusCode, resp.Proto, s.Errors())
		}
	}
	opts.VAPIDPrivateKey, opts.VAPIDPublicKey, _ = webpushgo.GenerateVAPIDKeys()
	if resp := sendWith(t, client, sub, []byte(`{}`), opts); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("another VAPID key: status %d", resp.StatusCode)
	}
	c, err := s.WaitDelivered(waitCtx(t), 3)
	if err != nil {
		t.Fatal(err)
	}
	if c != (pushtest.Counts{Requests: 4, Delivered: 3, Pushes: 3, Errors: 1}) {
		t.Errorf("counts %+v", c)
	}
	if len(s.Requests()) != 0 || len(s.Pushes()) != 0 {
		t.Error("bodies kept with DiscardBodies")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 || seen[2] != `{"messageKind":"content","message":"hi"}` {
		t.Errorf("OnDelivered saw %q, want the 3 delivered plaintexts", seen)
	}
}

// TestServerHost: endpoints name another host, which the server's
// Resolver and Client reach.
func TestServerHost(t *testing.T) {
	_, pub, priv := newServer(t)
	s := pushtest.NewServerWithOptions(pub, pushtest.Options{TLS: true, Host: "web.push.apple.com"})
	t.Cleanup(s.Close)
	sub := s.Subscribe()
	if !strings.HasPrefix(sub.Endpoint, "https://web.push.apple.com:") {
		t.Fatalf("endpoint %s", sub.Endpoint)
	}
	addrs, err := s.Resolver().LookupNetIP(context.Background(), "ip", "WEB.push.apple.com.")
	if err != nil || len(addrs) != 1 || !addrs[0].IsLoopback() {
		t.Errorf("resolved %v, %v", addrs, err)
	}
	opts := webpushgo.Options{Subscriber: "ops@example.org", VAPIDPublicKey: pub, VAPIDPrivateKey: priv, TTL: 60}
	if resp := sendWith(t, s.Client(), sub, []byte(`{}`), opts); resp.StatusCode != 201 {
		t.Fatalf("status %d, errors %v", resp.StatusCode, s.Errors())
	}
}
