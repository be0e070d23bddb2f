package e2e_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"amsg/scheduler/webhook"
)

// webhookReceiver is an operator's webhook endpoint on loopback,
// registered through POST /api/v1/admin/webhooks. It verifies every
// request with the Standard Webhooks reference library (signature and
// timestamp: the sender runs on the real clock) and keeps the payloads of
// those that verify, in the order they came.
type webhookReceiver struct {
	t      *testing.T
	verify *standardwebhooks.Webhook // from the secret the registration answered

	mu  sync.Mutex
	got []webhook.Payload
}

// newWebhookReceiver starts a receiver and registers it with srv for the
// event types given; it hears of the events recorded from then on.
func newWebhookReceiver(t *testing.T, srv *server, events ...string) *webhookReceiver {
	t.Helper()
	r := &webhookReceiver{t: t}
	hs := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(hs.Close)

	body, _ := json.Marshal(map[string]any{"url": hs.URL + "/amsg", "events": events})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/api/v1/admin/webhooks", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	var created struct {
		Data struct {
			Secret string `json:"secret"`
		} `json:"data"`
	}
	if err := json.Unmarshal(answer, &created); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /admin/webhooks = %d %s (%v)", resp.StatusCode, answer, err)
	}
	verify, err := standardwebhooks.NewWebhook(created.Data.Secret)
	if err != nil {
		t.Fatalf("the secret %q does not suit the reference library: %v", created.Data.Secret, err)
	}
	r.mu.Lock()
	r.verify = verify
	r.mu.Unlock()
	return r
}

func (r *webhookReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		r.t.Error(err)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.verify == nil {
		err = errors.New("no endpoint registered")
	} else {
		err = r.verify.Verify(body, req.Header)
	}
	if err != nil {
		r.t.Errorf("webhook %s %s does not verify with the Standard Webhooks library: %v", req.Header.Get("webhook-id"), body, err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var p webhook.Payload
	if err := json.Unmarshal(body, &p); err != nil {
		r.t.Errorf("webhook body %s: %v", body, err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.got = append(r.got, p)
	w.WriteHeader(http.StatusNoContent)
}

// messageEvents lists what the receiver heard of user's message id, in
// order, each as type@device and its detail.
func (r *webhookReceiver) messageEvents(user, id string) []string {
	r.mu.Lock()
	got := slices.Clone(r.got)
	r.mu.Unlock()
	var out []string
	for _, p := range got {
		if p.Data.UserID == user && p.Data.MessageID == id {
			out = append(out, p.Type+"@"+p.Data.DeviceID+string(p.Data.Detail))
		}
	}
	return out
}
