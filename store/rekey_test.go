package store_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"amsg/store"
	"amsg/store/storetest"
)

// Rekey re-seals every sealed column: after it the data opens under the new
// key, and the old key no longer opens the store.
func TestRekey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "amsg.db")
	oldKey, newKey := strings.Repeat("a", 64), strings.Repeat("b", 64)
	const user = "550e8400-e29b-41d4-a716-446655440000"
	ctx := t.Context()

	st, err := store.Open(ctx, store.Config{Path: path, MasterKey: oldKey, GenerateVAPID: storetest.GenerateVAPID})
	if err != nil {
		t.Fatal(err)
	}
	sub := json.RawMessage(`{"endpoint":"https://push.example.com/a","keys":{"p256dh":"x","auth":"y"}}`)
	if _, err := st.PutSubscription(ctx, user, sub, time.Time{}); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("é", store.StateSliceBytes) // chunked: a plaintext root and sealed slices
	if _, err := st.PutClientState(ctx, user, []store.ClientStateEntry{
		{Namespace: "ns", Key: "small", Value: "v1", UpdatedAt: 1},
		{Namespace: "ns", Key: "big", Value: big, UpdatedAt: 1},
	}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := st.CreateInterrupts(ctx, []store.Interrupt{
		{ID: "int_a", UserID: user, SessionID: "s", ToolCallID: "c1", Body: json.RawMessage(`{"name":"a"}`), CreatedAt: now, ExpiresAt: now.Add(time.Hour)},
		{ID: "int_b", UserID: user, SessionID: "s", ToolCallID: "c2", Body: json.RawMessage(`{"name":"b"}`), CreatedAt: now, ExpiresAt: now.Add(time.Hour)},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DecideInterrupt(ctx, store.InterruptDecision{ID: "int_a", State: store.InterruptDenied, Reason: "no", At: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutWebhookEndpoint(ctx, store.WebhookEndpoint{ID: "wh_1", URL: "https://hooks.example.com/", Events: []string{"message.sent"},
		Secret: testWebhookSecret}); err != nil {
		t.Fatal(err)
	}
	res, err := st.Rekey(ctx, newKey)
	if err != nil {
		t.Fatal(err)
	}
	if res.Resealed < 4 {
		t.Errorf("resealed %d values", res.Resealed)
	}
	st.Close()

	if _, err := store.Open(ctx, store.Config{Path: path, MasterKey: oldKey}); !errors.Is(err, store.ErrMasterKeyMismatch) {
		t.Fatalf("the old key opens the store after rekey: %v", err)
	}
	st, err = store.Open(ctx, store.Config{Path: path, MasterKey: newKey})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	devices, err := st.Devices(ctx, user)
	if err != nil || len(devices) != 1 || devices[0].Subscription.Endpoint != "https://push.example.com/a" {
		t.Fatalf("devices after rekey = %+v, %v", devices, err)
	}
	entries, err := st.ClientState(ctx, user, "ns")
	if err != nil || len(entries) != 2 {
		t.Fatalf("client state after rekey = %d entries, %v", len(entries), err)
	}
	for _, e := range entries {
		if want := map[string]string{"small": "v1", "big": big}[e.Key]; e.Value != want {
			t.Errorf("%s = %d bytes, want %d", e.Key, len(e.Value), len(want))
		}
	}
	if hooks, err := st.WebhookEndpoints(ctx); err != nil || len(hooks) != 1 || hooks[0].Secret != testWebhookSecret {
		t.Errorf("webhook endpoints after rekey = %v, %v; want the secret readable", hooks, err)
	}
	for id, want := range map[string]string{"int_a": "no", "int_b": ""} {
		in, err := st.Interrupt(ctx, id)
		if err != nil || in.Reason != want || len(in.Body) == 0 {
			t.Errorf("interrupt %s after rekey = %+v, %v", id, in, err)
		}
	}
}
