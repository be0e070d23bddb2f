package e2e_test

import (
	"strings"
	"testing"
	"time"

	"amsg/store"
	"amsg/web/browsertest"
)

// The operator page lists the webhook endpoints with their deliveries
// pending and given up, and why the last one was given up.
func TestAdminPageShowsGivenUpWebhooks(t *testing.T) {
	srv := newServer(t)
	ctx := t.Context()
	if _, err := srv.Store.PutWebhookEndpoint(ctx, store.WebhookEndpoint{ID: "wh_e2e", URL: "https://hooks.example.com/amsg",
		Events: []string{"device.gone"}, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Store.AddWebhookDeliveries(ctx, 0, 2, []store.WebhookDelivery{
		{EndpointID: "wh_e2e", EventSeq: 1, Payload: []byte(`{}`)}, {EndpointID: "wh_e2e", EventSeq: 2, Payload: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	due, err := srv.Store.DueWebhookDeliveries(ctx, "wh_e2e", time.Now(), 10)
	if err != nil || len(due) != 2 {
		t.Fatalf("due %v, %v", due, err)
	}
	if err := srv.Store.RecordWebhookTry(ctx, []int64{due[0].ID}, store.WebhookTry{At: time.Now(), State: store.WebhookFailed,
		Status: 503, Error: "status 503"}); err != nil {
		t.Fatal(err)
	}

	b := browsertest.New(t, browsertest.Config{})
	p := signInAdmin(b, srv.URL)
	p.WaitFor(`document.querySelectorAll('#webhooks tbody tr:not(.empty)').length > 0`)
	var cells []string
	p.Eval(`[...document.querySelectorAll('#webhooks tbody tr td')].map((td) => td.textContent)`, &cells)
	if len(cells) != 5 || cells[0] != "https://hooks.example.com/amsg" || cells[1] != "device.gone" || cells[2] != "1" || cells[3] != "1" ||
		!strings.Contains(cells[4], "status 503 (1 tries)") {
		t.Errorf("webhook row %q, want the endpoint with 1 pending, 1 given up and its last error", cells)
	}
	if errs := b.TakeConsoleErrors(); len(errs) > 0 {
		t.Fatalf("console errors: %v", errs)
	}
}
