package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"amsg/scheduler/webhook"
	"amsg/store"
)

// tryOnce registers endpoint wh_x at url, records events, makes one pass
// and returns the endpoint's health.
func tryOnce(t *testing.T, f fixture, url string, events ...store.MessageEvent) store.WebhookHealth {
	t.Helper()
	f.endpoint(t, "wh_x", url, false, webhook.EventTypes...)
	f.events(t, events...)
	f.pass(t)
	health, err := f.st.WebhookHealth(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return health["wh_x"]
}

// lastError reads the error recorded of the endpoint's one pending
// delivery, by giving up its window.
func lastError(t *testing.T, f fixture) (int, string) {
	t.Helper()
	f.clk.Add(webhook.DefaultRetryFor)
	f.pass(t)
	health, err := f.st.WebhookHealth(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	h := health["wh_x"]
	if h.LastFailure == nil {
		t.Fatalf("no failure recorded: %+v", h)
	}
	return h.LastFailure.LastStatus, h.LastFailure.LastError
}

// TestPrivateReceiverRefused: without --webhook-allow-private a receiver on
// loopback is never reached; the try fails with the policy's reason.
func TestPrivateReceiverRefused(t *testing.T) {
	var reached atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached.Store(true) }))
	defer srv.Close()
	f := newFixture(t, webhook.Config{AllowPrivate: true}) // the fixture flips it: private refused
	h := tryOnce(t, f, srv.URL, store.MessageEvent{MessageID: "m1", Type: store.EventSent})
	if h.Pending != 1 {
		t.Fatalf("health %+v, want the delivery pending", h)
	}
	status, msg := lastError(t, f)
	if reached.Load() {
		t.Error("the loopback receiver was reached")
	}
	if status != 0 || !strings.Contains(msg, "webhook receiver address refused") || !strings.Contains(msg, "loopback") {
		t.Errorf("last error %d %q, want the address refused as loopback", status, msg)
	}
	if strings.Contains(msg, srv.URL) {
		t.Errorf("the error %q shows the URL", msg)
	}
}

// TestRedirectNotFollowed: a 307 to another server is a failed try; the
// other server never hears of it.
func TestRedirectNotFollowed(t *testing.T) {
	var reached atomic.Bool
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached.Store(true) }))
	defer target.Close()
	redirect := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusTemporaryRedirect))
	defer redirect.Close()
	f := newFixture(t, webhook.Config{})
	tryOnce(t, f, redirect.URL, store.MessageEvent{MessageID: "m1", Type: store.EventSent})
	status, msg := lastError(t, f)
	if reached.Load() {
		t.Error("the redirect was followed")
	}
	if status != http.StatusTemporaryRedirect || !strings.Contains(msg, "redirects are not followed") {
		t.Errorf("last error %d %q", status, msg)
	}
}

// TestHugeAnswerBounded: a receiver that answers 200 with 64 MiB is read
// to the cap only: the delivery is done, and the receiver's write stops
// far short of its body.
func TestHugeAnswerBounded(t *testing.T) {
	const huge = 64 << 20
	written := make(chan int64, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		chunk := make([]byte, 32<<10)
		var n int64
		for n < huge {
			m, err := w.Write(chunk)
			n += int64(m)
			if err != nil {
				break
			}
		}
		written <- n
	}))
	defer srv.Close()
	f := newFixture(t, webhook.Config{MaxResponseBytes: 1 << 10})
	h := tryOnce(t, f, srv.URL, store.MessageEvent{MessageID: "m1", Type: store.EventSent})
	if h.Pending != 0 || h.Failed != 0 {
		t.Errorf("health %+v, want the delivery done", h)
	}
	if n := <-written; n >= huge {
		t.Errorf("the receiver wrote all %d bytes: the answer was read whole", n)
	}
}

// TestSlowReceiverBounded: a receiver that never answers holds a try for
// Timeout only; the delivery is put off with the timeout as its error.
func TestSlowReceiverBounded(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release) // before Close, which waits for the handler
	f := newFixture(t, webhook.Config{Timeout: 100 * time.Millisecond})
	if h := tryOnce(t, f, srv.URL, store.MessageEvent{MessageID: "m1", Type: store.EventSent}); h.Pending != 1 {
		t.Errorf("health %+v, want the delivery pending after its timeout", h)
	}
	if _, msg := lastError(t, f); !strings.Contains(msg, "Timeout") && !strings.Contains(msg, "deadline") {
		t.Errorf("last error %q, want a timeout", msg)
	}
}

// TestConcurrencyBounded: an endpoint never has more than Concurrency
// requests in flight; the others wait for a slot.
func TestConcurrencyBounded(t *testing.T) {
	release, arrived := make(chan struct{}), make(chan struct{})
	var inFlight, most atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		arrived <- struct{}{}
		<-release
		inFlight.Add(-1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	f := newFixture(t, webhook.Config{Concurrency: 2})
	f.endpoint(t, "wh_x", srv.URL, false, webhook.EventTypes...)
	for i := range 6 {
		f.events(t, store.MessageEvent{MessageID: fmt.Sprint("m", i), Type: store.EventSent})
	}
	done := make(chan error, 1)
	go func() { done <- f.d.Pass(t.Context()) }()
	for range 6 {
		<-arrived
		release <- struct{}{}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if m := most.Load(); m > 2 {
		t.Errorf("%d requests in flight at once, over the endpoint's 2", m)
	}
	health, err := f.st.WebhookHealth(t.Context())
	if err != nil || health["wh_x"].Pending != 0 {
		t.Errorf("health %+v, %v; want all six done", health, err)
	}
}

// TestSlowEndpointDoesNotHoldOthers: while one endpoint's receiver hangs,
// Run keeps sending to another.
func TestSlowEndpointDoesNotHoldOthers(t *testing.T) {
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hung.Close()
	defer close(release)
	got := make(chan string, 10)
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("webhook-id")
	}))
	defer fast.Close()
	f := newFixture(t, webhook.Config{PollInterval: 10 * time.Millisecond, Timeout: time.Minute})
	f.endpoint(t, "wh_hung", hung.URL, false, webhook.EventTypes...)
	f.endpoint(t, "wh_fast", fast.URL, false, webhook.EventTypes...)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { f.d.Run(ctx); close(done) }()
	f.events(t, store.MessageEvent{MessageID: "m1", Type: store.EventSent})
	<-got
	f.events(t, store.MessageEvent{MessageID: "m2", Type: store.EventSent})
	<-got // a second pass reached the fast endpoint while the hung one still waits
	cancel()
	<-done
}
