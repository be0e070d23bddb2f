package courier_test

import (
	"encoding/json"
	"strings"
	"testing"

	"amsg/push"
	"amsg/push/courier"
	"amsg/push/receipt"
	"amsg/store"
)

// With Config.Receipts every stored device gets the push stamped with its
// own receipt token, which checks for that device and no other.
func TestPushesCarryEachDevicesReceiptToken(t *testing.T) {
	signer := receipt.NewSigner([32]byte{7})
	f := newFixtureWith(t, courier.Config{Receipts: signer})
	devices := map[string]int64{}
	for range 2 {
		sub := f.push.Subscribe()
		devices[sub.Endpoint] = f.subscribe(t, alice, sub).ID
	}
	if _, err := f.c.SendPush(t.Context(), alice, push.SourceInstant, content(t, "msg_r", "hello")); err != nil {
		t.Fatal(err)
	}
	pushes := f.push.Pushes()
	if len(pushes) != 2 {
		t.Fatalf("%d pushes, want 2", len(pushes))
	}
	for _, p := range pushes {
		var m struct {
			MessageID    string `json:"messageId"`
			Message      string `json:"message"`
			ReceiptToken string `json:"receiptToken"`
		}
		if err := json.Unmarshal(p.JSON, &m); err != nil || m.Message != "hello" {
			t.Fatalf("decrypted push %s (%v)", p.JSON, err)
		}
		own := devices[p.Endpoint]
		if !signer.Check(m.ReceiptToken, alice, "msg_r", own) {
			t.Errorf("push to device %d carries token %q, which does not check for it", own, m.ReceiptToken)
		}
		for _, other := range devices {
			if other != own && signer.Check(m.ReceiptToken, alice, "msg_r", other) {
				t.Errorf("device %d's token checks for device %d too", own, other)
			}
		}
	}
	page, err := f.st.UnackedOutbox(t.Context(), alice, 0, 10)
	if err != nil || len(page.Entries) != 1 || strings.Contains(string(page.Entries[0].Payload), receipt.Field) {
		t.Errorf("the outbox holds %+v (%v); want the push as built, without any device's token", page.Entries, err)
	}
}

// A round past the daily limit (OutboxOnly) records its pushes and tells
// each message's timeline it was deferred.
func TestWithheldPushIsDeferredInItsTimeline(t *testing.T) {
	f := newFixture(t, courier.PolicyVisible)
	f.subscribe(t, alice, f.push.Subscribe())
	r, err := f.c.Open(t.Context(), courier.Recipients{UserID: alice, OutboxOnly: true}, push.SourceScheduled)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Push(t.Context(), content(t, "msg_held", "later"))
	if err != nil || !res.Withheld || len(f.push.Pushes()) != 0 {
		t.Fatalf("Push = %+v, %v with %d pushes sent; want it withheld", res, err, len(f.push.Pushes()))
	}
	events, err := f.st.MessageTimeline(t.Context(), alice, "msg_held")
	if err != nil || len(events) != 2 || events[0].Type != store.EventQueued || events[1].Type != store.EventDeferred {
		t.Errorf("timeline = %+v, %v; want queued then deferred", events, err)
	}
}
