package courier_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"amsg/builders"
	"amsg/push"
	"amsg/push/courier"
	"amsg/push/receipt"
	"amsg/push/webpush"
	"amsg/store/storetest"
)

// acceptingSender is a push service that takes every push at once: what
// is left of a delivery is the courier's own work.
type acceptingSender struct{}

func (acceptingSender) Send(_ context.Context, sub push.Subscription, msg webpush.Message) (webpush.Delivery, error) {
	return webpush.Delivery{Outcome: push.OutcomeDelivered, Status: 201, PushHost: "push.example.net",
		Attempts: []push.Attempt{{MessageID: msg.ID, PushHost: "push.example.net", Try: 1, Status: 201, Outcome: push.OutcomeDelivered}}}, nil
}

// BenchmarkDeliverLast is the courier's CPU and allocations for one
// scheduled push to a user's one device, configured as amsg serve does
// (receipts, localization), apart from the sender's (BenchmarkDelivery in
// push/webpush) and the store's: the round is open and the bookkeeping is
// returned, as a scheduled occurrence's last push has it.
func BenchmarkDeliverLast(b *testing.B) {
	st := storetest.New(b)
	sub := push.Subscription{Endpoint: "https://push.example.net/wpush/v2/abc", Keys: push.SubscriptionKeys{
		P256dh: "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4", Auth: "BTBZMqHH6r4Tts7J_aSIgg"}}
	raw := []byte(`{"endpoint":"` + sub.Endpoint + `","keys":{"p256dh":"` + sub.Keys.P256dh + `","auth":"` + sub.Keys.Auth + `"}}`)
	if _, err := st.PutSubscription(b.Context(), alice, raw, time.Time{}); err != nil {
		b.Fatal(err)
	}
	c := courier.New(acceptingSender{}, st, courier.Config{Localize: builders.Localize, Receipts: receipt.NewSigner([32]byte{7})})
	r, err := c.Open(b.Context(), courier.Recipients{UserID: alice}, push.SourceScheduled)
	if err != nil {
		b.Fatal(err)
	}
	p := content(b, "msg_task_50@1795498508335_0", "Reminder 1: time for a glass of water")
	m, err := push.NewOutboxMessage(p)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		o := courier.Outgoing{OutboxMessage: m, Kind: push.KindContent}
		o.MessageID = m.MessageID + strconv.Itoa(i)
		i++
		res, held, err := r.DeliverLast(b.Context(), o)
		if err != nil || res.Delivered() != 1 || len(held.Record) != 1 {
			b.Fatalf("%+v, %+v, %v", res, held, err)
		}
	}
}
