package courier_test

import (
	"testing"
	"time"

	"amsg/push"
	"amsg/push/courier"
)

// An approval (a tool_request with an interrupt) wakes the device and lives
// until it expires; a round can leave out the device that answered it.
func TestApprovalDeliveryAndExcept(t *testing.T) {
	f := newFixture(t, courier.PolicyVisible)
	phone := f.subscribe(t, alice, f.push.Subscribe())
	laptopSub := f.push.Subscribe()
	f.subscribe(t, alice, laptopSub)
	expires := time.Now().Add(90 * time.Second).UTC().Format(push.TimestampLayout)
	approval, err := push.Decode([]byte(`{"messageKind":"tool_request","messageType":"instant","source":"instant","messageSubtype":"chat",` +
		`"messageId":"msg_approval","sessionId":"sess_1","timestamp":"2026-06-01T09:00:00.000Z","toolCalls":[{"id":"c1"}],` +
		`"interrupt":{"id":"int_1","kind":"approval","toolCallId":"c1","expiresAt":"` + expires + `","decisionToken":"t"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.c.SendPush(t.Context(), alice, push.SourceInstant, approval); err != nil {
		t.Fatal(err)
	}
	for _, m := range f.push.Messages() {
		if m.Urgency != "high" || m.TTL < 85 || m.TTL > 90 {
			t.Errorf("approval sent with Urgency %q TTL %d, want high and the 90 s left", m.Urgency, m.TTL)
		}
	}
	r, err := f.c.Open(t.Context(), courier.Recipients{UserID: alice, Except: phone.ID}, push.SourceInstant)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Push(t.Context(), content(t, "msg_outcome", "Approved on another device"))
	if err != nil || len(res.Devices) != 1 || res.Devices[0].DeviceID == phone.ID {
		t.Fatalf("outcome round %+v, %v; want the laptop alone", res, err)
	}
	msgs := f.push.Messages()
	if last := msgs[len(msgs)-1]; last.Endpoint != laptopSub.Endpoint || last.Urgency != "high" || last.TTL != int(10*time.Minute/time.Second) {
		t.Errorf("outcome went to %s with Urgency %q TTL %d, want the laptop with a content push's defaults", last.Endpoint, last.Urgency, last.TTL)
	}
}
