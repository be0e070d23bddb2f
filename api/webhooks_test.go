package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"amsg/push/courier"
	"amsg/scheduler/webhook"
	"amsg/store"
	"amsg/store/storetest"
)

// webhookServer is an operator server whose webhook receivers must be
// public, as they are by default.
func webhookServer(t testing.TB) (*Server, *store.Store) {
	t.Helper()
	st := storetest.New(t)
	deliveries, _ := newTestCourier(t, st, courier.PolicyUpstream)
	return newTestServer(t, Config{AdminToken: testAdminToken}, Deps{Store: st, Courier: deliveries}), st
}

type webhookAnswer struct {
	Success bool        `json:"success"`
	Data    webhookJSON `json:"data"`
	Error   struct {
		Code    string         `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
	} `json:"error"`
}

func decodeWebhookAnswer(t *testing.T, r response) webhookAnswer {
	t.Helper()
	var a webhookAnswer
	if err := json.Unmarshal([]byte(r.body), &a); err != nil {
		t.Fatalf("%d %s: %v", r.status, r.body, err)
	}
	return a
}

func TestAdminWebhooksRegisterListDelete(t *testing.T) {
	s, st := webhookServer(t)
	if !slices.Contains(s.features, "signed-webhooks") {
		t.Errorf("capabilities %v lack signed-webhooks", s.features)
	}
	r := adminDo(s, http.MethodPost, "/api/v1/admin/webhooks", `{"url":"https://93.184.215.14/hooks/amsg","events":["message.sent","device.gone"],"batch":true}`)
	if r.status != http.StatusCreated {
		t.Fatalf("POST: %d %s", r.status, r.body)
	}
	created := decodeWebhookAnswer(t, r).Data
	if !strings.HasPrefix(created.ID, "wh_") || !created.Batch || created.Source != "api" || len(created.Events) != 2 {
		t.Errorf("created %+v", created)
	}
	if _, err := webhook.ParseSecret(created.Secret); err != nil {
		t.Errorf("secret %q: %v", created.Secret, err)
	}
	stored, err := st.WebhookEndpoints(t.Context())
	if err != nil || len(stored) != 1 || stored[0].Secret != created.Secret {
		t.Fatalf("stored %v, %v; want the endpoint with the secret shown", stored, err)
	}

	list := adminDo(s, http.MethodGet, "/api/v1/admin/webhooks", "")
	if list.status != http.StatusOK || strings.Contains(list.body, created.Secret) || !strings.Contains(list.body, created.ID) {
		t.Errorf("GET: %d %s; want the endpoint listed without its secret", list.status, list.body)
	}
	if r := adminDo(s, http.MethodDelete, "/api/v1/admin/webhooks/"+created.ID, ""); r.status != http.StatusOK || r.body != `{"success":true,"data":{"deleted":1}}`+"\n" {
		t.Errorf("DELETE: %d %s", r.status, r.body)
	}
	r = adminDo(s, http.MethodDelete, "/api/v1/admin/webhooks/"+created.ID, "")
	if a := decodeWebhookAnswer(t, r); r.status != http.StatusNotFound || a.Error.Code != "WEBHOOK_NOT_FOUND" {
		t.Errorf("DELETE again: %d %s", r.status, r.body)
	}
}

// TestAdminWebhooksBadInput: each refusal has its precise code and leaves
// the registry as it was.
func TestAdminWebhooksBadInput(t *testing.T) {
	s, st := webhookServer(t)
	for _, tt := range []struct {
		body, code, detail string
		status             int
	}{
		{`{"url":"https://127.0.0.1/h","events":["message.sent"]}`, "INVALID_WEBHOOK_URL", "host 127.0.0.1 is a loopback address", 400},
		{`{"url":"https://10.1.2.3:8443/h","events":["message.sent"]}`, "INVALID_WEBHOOK_URL", "private-use", 400},
		{`{"url":"https://[::ffff:169.254.169.254]/latest","events":["message.sent"]}`, "INVALID_WEBHOOK_URL", "link-local", 400},
		{`{"url":"https://localhost/h","events":["message.sent"]}`, "INVALID_WEBHOOK_URL", "is local", 400},
		{`{"url":"http://93.184.215.14/h","events":["message.sent"]}`, "INVALID_WEBHOOK_URL", "must be an https URL", 400},
		{`{"url":"https://u:p@93.184.215.14/h","events":["message.sent"]}`, "INVALID_WEBHOOK_URL", "credentials", 400},
		{`{"url":"https://hooks.invalid/h","events":["message.sent"]}`, "INVALID_WEBHOOK_URL", ".invalid", 400},
		{`{"url":"https://93.184.215.14/h","events":["message.sent","message.exploded"]}`, "INVALID_WEBHOOK_EVENT", "message.exploded", 400},
		{`{"url":"https://93.184.215.14/h","events":["message.sent","message.sent"]}`, "INVALID_WEBHOOK_EVENT", "listed twice", 400},
		{`{"url":"https://93.184.215.14/h","events":[]}`, "INVALID_WEBHOOK_EVENT", "no event types", 400},
		{`{"url":"https://93.184.215.14/h"}`, "INVALID_PARAMETERS", "events", 400},
		{`{"events":["message.sent"]}`, "INVALID_PARAMETERS", "url", 400},
		{`{"url":"https://93.184.215.14/h","events":["message.sent"],"secret":"mine"}`, "INVALID_PAYLOAD_FORMAT", "", 400},
		{`{"url":"https://93.184.215.14/h","events":"message.sent"}`, "INVALID_PAYLOAD_FORMAT", "", 400},
	} {
		r := adminDo(s, http.MethodPost, "/api/v1/admin/webhooks", tt.body)
		a := decodeWebhookAnswer(t, r)
		details, _ := json.Marshal(a.Error.Details)
		if r.status != tt.status || a.Error.Code != tt.code || !strings.Contains(string(details)+a.Error.Message, tt.detail) {
			t.Errorf("%s: %d %s, want %d %s …%s…", tt.body, r.status, r.body, tt.status, tt.code, tt.detail)
		}
	}
	r := adminDo(s, http.MethodPost, "/api/v1/admin/webhooks", `{"url":"https://93.184.215.14/h","events":["message.exploded"]}`)
	if a := decodeWebhookAnswer(t, r); a.Error.Details["eventType"] != "message.exploded" {
		t.Errorf("unknown type: details %v, want eventType", a.Error.Details)
	}
	if stored, err := st.WebhookEndpoints(t.Context()); err != nil || len(stored) != 0 {
		t.Errorf("after refusals the registry holds %v, %v", stored, err)
	}
	for range store.MaxWebhookEndpoints {
		if r := adminDo(s, http.MethodPost, "/api/v1/admin/webhooks", `{"url":"https://93.184.215.14/h","events":["task.failed"]}`); r.status != http.StatusCreated {
			t.Fatalf("POST: %d %s", r.status, r.body)
		}
	}
	r = adminDo(s, http.MethodPost, "/api/v1/admin/webhooks", `{"url":"https://93.184.215.14/h","events":["task.failed"]}`)
	if a := decodeWebhookAnswer(t, r); r.status != http.StatusConflict || a.Error.Code != "WEBHOOK_LIMIT_EXCEEDED" {
		t.Errorf("over the limit: %d %s", r.status, r.body)
	}
}

// FuzzDecodeWebhookRequest: whatever the body, the decoder answers a
// request whose events are all known, or an *Error of the envelope; it
// never panics.
func FuzzDecodeWebhookRequest(f *testing.F) {
	for _, seed := range []string{
		`{"url":"https://hooks.example.com/a","events":["message.sent"],"batch":true}`,
		`{"url":"https://hooks.example.com/a","events":["message.sent","message.sent"]}`,
		`{"url":"","events":null}`, `{"url":1}`, `[]`, `null`, "", `{"events":["\u0000"]}`,
		`{"url":"https://a","events":["task.failed"]} {}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeWebhookRequest(body)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("%q: untyped error %v", body, err)
			}
			return
		}
		if req.URL == "" || webhook.CheckEventTypes(req.Events) != nil {
			t.Fatalf("%q accepted as %+v", body, req)
		}
	})
}

// FuzzAdminWebhookBodies: every answer of POST /admin/webhooks is the
// envelope with a 2xx or 4xx status.
func FuzzAdminWebhookBodies(f *testing.F) {
	for _, seed := range []string{`{"url":"https://127.0.0.1/","events":["message.sent"]}`, `{"url":"%%","events":["message.sent"]}`, `{}`} {
		f.Add(seed)
	}
	s, _ := webhookServer(f)
	f.Fuzz(func(t *testing.T, body string) {
		r := adminDo(s, http.MethodPost, "/api/v1/admin/webhooks", body)
		var env struct {
			Success *bool `json:"success"`
		}
		if r.status >= 500 || json.Unmarshal([]byte(r.body), &env) != nil || env.Success == nil {
			t.Fatalf("POST %q: %d %s", body, r.status, r.body)
		}
	})
}
