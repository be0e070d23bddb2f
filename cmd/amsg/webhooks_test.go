package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"amsg/scheduler/webhook"
)

const webhookAdminToken = "webhook-admin-token-0123456789"

// hookReceiver is a webhook endpoint in the test process: it verifies each
// request with the Standard Webhooks reference library (timestamp
// tolerance included: the processes run on the real clock), answers 503
// to the first failFirst requests, and hands each accepted webhook-id to
// the test.
type hookReceiver struct {
	srv    *httptest.Server
	secret string
	got    chan string

	mu        sync.Mutex
	failFirst int
	tries     int
	accepted  map[string]int
}

func newHookReceiver(t *testing.T, failFirst int) *hookReceiver {
	t.Helper()
	r := &hookReceiver{secret: webhook.GenerateSecret(), got: make(chan string, 100), failFirst: failFirst, accepted: map[string]int{}}
	verify, err := standardwebhooks.NewWebhook(r.secret)
	if err != nil {
		t.Fatal(err)
	}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if err := verify.Verify(body, req.Header); err != nil {
			t.Errorf("webhook %s does not verify: %v", req.Header.Get("webhook-id"), err)
		}
		r.mu.Lock()
		r.tries++
		down := r.tries <= r.failFirst
		if !down {
			r.accepted[req.Header.Get("webhook-id")]++
		}
		r.mu.Unlock()
		if down {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var p webhook.Payload
		if err := json.Unmarshal(body, &p); err != nil || p.Type != webhook.DeviceGone {
			t.Errorf("payload %s: %v", body, err)
		}
		w.WriteHeader(http.StatusNoContent)
		r.got <- req.Header.Get("webhook-id")
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *hookReceiver) env() []string {
	return []string{"AMSG_WEBHOOK_URL=" + r.srv.URL + "/hook", "AMSG_WEBHOOK_SECRET=" + r.secret, "AMSG_WEBHOOK_EVENTS=device.gone",
		"AMSG_WEBHOOK_ALLOW_PRIVATE=true", "AMSG_ADMIN_TOKEN=" + webhookAdminToken}
}

// waitAccepted waits for n accepted webhooks.
func (r *hookReceiver) waitAccepted(t *testing.T, n int, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for range n {
		select {
		case <-r.got:
		case <-deadline:
			t.Fatalf("fewer than %d webhooks within %v", n, within)
		}
	}
}

func adminCall(t *testing.T, p *amsgProcess, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, p.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+webhookAdminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// goneDevices gives users from to to-1 a device each at the cluster's fake push
// service, then makes the service forget them and sends each user a
// message: each send meets a 410, which removes the device and tells
// device.gone.
func goneDevices(t *testing.T, c *cluster, p *amsgProcess, from, to int) {
	t.Helper()
	st := c.open(t)
	for u := from; u < to; u++ {
		user := fmt.Sprintf("00000000-0000-4000-8000-%012d", u)
		sub := c.push.Subscribe()
		raw, _ := json.Marshal(sub)
		if _, err := st.PutSubscription(t.Context(), user, raw, time.Time{}); err != nil {
			t.Fatal(err)
		}
		c.push.Unsubscribe(sub)
		if status, body := adminCall(t, p, http.MethodPost, "/api/v1/admin/send", `{"userId":"`+user+`","message":"hi"}`); status >= 500 {
			t.Fatalf("admin send: %d %s", status, body)
		}
	}
}

// waitSettled polls GET /admin/webhooks (a receiver's answer reaches the
// database after the receiver has it: there is no signal to wait on) until
// no delivery of the env endpoint is pending, and returns how many failed.
func waitSettled(t *testing.T, p *amsgProcess, within time.Duration) (failed int) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		pending, failed := pendingWebhooks(t, p)
		if pending == 0 {
			return failed
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d deliveries still pending after %v", pending, within)
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-t.Context().Done():
			return failed
		}
	}
}

// pendingWebhooks is what GET /admin/webhooks says of the env endpoint.
func pendingWebhooks(t *testing.T, p *amsgProcess) (pending, failed int) {
	t.Helper()
	status, body := adminCall(t, p, http.MethodGet, "/api/v1/admin/webhooks", "")
	var out struct {
		Data struct {
			Webhooks []struct {
				ID      string `json:"webhookId"`
				Source  string `json:"source"`
				Pending int    `json:"pending"`
				Failed  int    `json:"failed"`
			} `json:"webhooks"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil || status != http.StatusOK || len(out.Data.Webhooks) != 1 || out.Data.Webhooks[0].Source != "env" {
		t.Fatalf("GET /admin/webhooks: %d %s", status, body)
	}
	return out.Data.Webhooks[0].Pending, out.Data.Webhooks[0].Failed
}

// TestWebhookReceiverDownThenBackProcess: a real amsg with AMSG_WEBHOOK_URL
// tells a receiver that is down at first of a gone device: the receiver
// gets the event once, after the retry, signed so the reference library
// verifies it.
func TestWebhookReceiverDownThenBackProcess(t *testing.T) {
	rcv := newHookReceiver(t, 1)
	c := newCluster(t, rcv.env()...)
	p := c.start(t)
	goneDevices(t, c, p, 0, 1)
	rcv.waitAccepted(t, 1, 30*time.Second)
	if failed := waitSettled(t, p, 10*time.Second); failed != 0 {
		t.Errorf("after delivery: %d failed", failed)
	}
	p.mu.Lock()
	for _, line := range p.logs {
		if b, _ := json.Marshal(line); strings.Contains(string(b), strings.TrimPrefix(rcv.secret, "whsec_")) {
			t.Errorf("the webhook secret is in the log: %s", b)
		}
	}
	if len(p.logs) == 0 {
		t.Error("no log lines to look through")
	}
	p.mu.Unlock()
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if rcv.tries != 2 || len(rcv.accepted) != 1 {
		t.Errorf("%d tries, accepted %v; want one 503, then the event once", rcv.tries, rcv.accepted)
	}
}

// TestWebhooksTwoInstancesSendOnce: two amsg processes on one PostgreSQL
// database, both configured with the receiver, send each event once.
func TestWebhooksTwoInstancesSendOnce(t *testing.T) {
	rcv := newHookReceiver(t, 0)
	c := newCluster(t, rcv.env()...)
	a, b := c.start(t), c.start(t)
	const users = 6
	goneDevices(t, c, a, 0, users/2)
	goneDevices(t, c, b, users/2, users)
	rcv.waitAccepted(t, users, 60*time.Second)
	if failed := waitSettled(t, a, 10*time.Second); failed != 0 {
		t.Errorf("after delivery: %d failed", failed)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.accepted) != users {
		t.Errorf("accepted %d distinct webhooks, want %d", len(rcv.accepted), users)
	}
	for id, n := range rcv.accepted {
		if n != 1 {
			t.Errorf("webhook %s accepted %d times", id, n)
		}
	}
}
