package store_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"amsg/store"
	"amsg/store/storetest"
)

const testWebhookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func TestWebhookEndpointsRegistry(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	if err := st.AppendMessageEvents(ctx, store.MessageEvent{UserID: alice, MessageID: "m0", Type: store.EventSent}); err != nil {
		t.Fatal(err)
	}
	before, _ := st.MessageEventsAfter(ctx, 0, 10)

	e := store.WebhookEndpoint{ID: "wh_1", URL: "https://hooks.example.com/a", Events: []string{"message.sent", "task.failed"},
		Secret: testWebhookSecret, Batch: true}
	got, err := st.PutWebhookEndpoint(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	if got.StartSeq != before[0].Seq || !got.CreatedAt.Equal(clk.now) {
		t.Errorf("stored %+v: want StartSeq %d (the last event) and CreatedAt now", got, before[0].Seq)
	}
	if s := fmt.Sprint(got); strings.Contains(s, testWebhookSecret) || !strings.Contains(s, "wh_1") {
		t.Errorf("String() = %q shows the secret", s)
	}

	// A replacement keeps where the endpoint started.
	clk.Add(time.Minute)
	if err := st.AppendMessageEvents(ctx, store.MessageEvent{UserID: alice, MessageID: "m1", Type: store.EventSent}); err != nil {
		t.Fatal(err)
	}
	e.URL, e.Batch = "https://hooks.example.com/b", false
	if _, err := st.PutWebhookEndpoint(ctx, e); err != nil {
		t.Fatal(err)
	}
	list, err := st.WebhookEndpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.WebhookEndpoint{{ID: "wh_1", URL: "https://hooks.example.com/b", Events: e.Events, Secret: testWebhookSecret,
		StartSeq: got.StartSeq, CreatedAt: got.CreatedAt}}
	if !reflect.DeepEqual(list, want) {
		t.Errorf("WebhookEndpoints = %+v\nwant %+v", list, want)
	}

	for i := 2; i <= store.MaxWebhookEndpoints; i++ {
		if _, err := st.PutWebhookEndpoint(ctx, store.WebhookEndpoint{ID: fmt.Sprintf("wh_%d", i), URL: "https://h.example.com",
			Events: []string{"message.sent"}, Secret: testWebhookSecret}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.PutWebhookEndpoint(ctx, store.WebhookEndpoint{ID: "wh_over", URL: "https://h.example.com",
		Events: []string{"message.sent"}, Secret: testWebhookSecret}); !errors.Is(err, store.ErrWebhookLimit) {
		t.Errorf("endpoint %d: err = %v, want ErrWebhookLimit", store.MaxWebhookEndpoints+1, err)
	}
	if _, err := st.PutWebhookEndpoint(ctx, e); err != nil {
		t.Errorf("replacing at the limit: %v", err)
	}
	if err := st.DeleteWebhookEndpoint(ctx, "wh_1"); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteWebhookEndpoint(ctx, "wh_1"); !errors.Is(err, store.ErrWebhookNotFound) {
		t.Errorf("deleting again: err = %v, want ErrWebhookNotFound", err)
	}
}

// TestWebhookDeliveriesOrderAndFence records deliveries, re-reads them
// (nothing doubles), and reads the due ones: one at a time per message, in
// order, the next only once the first is done or given up.
func TestWebhookDeliveriesOrderAndFence(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	d := func(seq int64, key string) store.WebhookDelivery {
		return store.WebhookDelivery{EndpointID: "wh_a", EventSeq: seq, MessageKey: key, Payload: []byte(fmt.Sprintf(`{"seq":%d}`, seq))}
	}
	if err := st.AddWebhookDeliveries(ctx, 0, 4, []store.WebhookDelivery{d(1, "u/m1"), d(2, "u/m2"), d(3, "u/m1"), d(4, "")}); err != nil {
		t.Fatal(err)
	}
	if err := st.AddWebhookDeliveries(ctx, 0, 9, nil); !errors.Is(err, store.ErrWebhookCursorMoved) {
		t.Errorf("a second first fan-out: err = %v, want ErrWebhookCursorMoved", err)
	}
	if err := st.AddWebhookDeliveries(ctx, 4, 5, []store.WebhookDelivery{d(3, "u/m1"), d(5, "u/m2")}); err != nil {
		t.Fatal(err)
	}
	if cur, err := st.WebhookCursor(ctx); err != nil || cur != 5 {
		t.Errorf("cursor = %d, %v; want 5", cur, err)
	}
	seqs := func() []int64 {
		due, err := st.DueWebhookDeliveries(ctx, "wh_a", clk.now, 100)
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, x := range due {
			out = append(out, x.EventSeq)
		}
		return out
	}
	idOf := func(seq int64) []int64 {
		due, _ := st.DueWebhookDeliveries(ctx, "wh_a", clk.now, 100)
		for _, x := range due {
			if x.EventSeq == seq {
				return []int64{x.ID}
			}
		}
		t.Fatalf("event %d is not due", seq)
		return nil
	}
	if got := seqs(); !slices.Equal(got, []int64{1, 2, 4}) {
		t.Fatalf("due = %v, want [1 2 4]: m1's and m2's first, and the unordered one", got)
	}
	later := clk.now.Add(time.Minute)
	if err := st.RecordWebhookTry(ctx, idOf(1), store.WebhookTry{At: clk.now, State: store.WebhookPending, NextAt: later, Status: 503, Error: "busy"}); err != nil {
		t.Fatal(err)
	}
	if got := seqs(); !slices.Equal(got, []int64{2, 4}) {
		t.Errorf("after m1's first is put off: due = %v, want [2 4] (m1's second waits for its first)", got)
	}
	if err := st.RecordWebhookTry(ctx, idOf(2), store.WebhookTry{At: clk.now, State: store.WebhookDone, Status: 204}); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordWebhookTry(ctx, idOf(4), store.WebhookTry{At: clk.now, State: store.WebhookFailed, Status: 500, Error: "gave up"}); err != nil {
		t.Fatal(err)
	}
	if got := seqs(); !slices.Equal(got, []int64{5}) {
		t.Errorf("after m2's first is done: due = %v, want [5]", got)
	}
	clk.Add(time.Minute)
	if err := st.RecordWebhookTry(ctx, idOf(1), store.WebhookTry{At: clk.now, State: store.WebhookFailed, Status: 503, Error: "busy"}); err != nil {
		t.Fatal(err)
	}
	if got := seqs(); !slices.Equal(got, []int64{3, 5}) {
		t.Errorf("after m1's first is given up: due = %v, want [3 5]", got)
	}
	health, err := st.WebhookHealth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h := health["wh_a"]
	if h.Pending != 2 || h.Failed != 2 || h.LastFailure == nil || h.LastFailure.EventSeq != 1 || h.LastFailure.Attempts != 2 ||
		h.LastFailure.LastStatus != 503 || !h.LastFailure.At.Equal(clk.now) {
		t.Errorf("health = %+v (last failure %+v)", h, h.LastFailure)
	}
	if _, err := st.DueWebhookDeliveries(ctx, "wh_a", clk.now, store.MaxWebhookDeliveriesPage+1); !errors.Is(err, store.ErrInvalidWebhook) {
		t.Errorf("an unbounded read: err = %v", err)
	}

	n, err := st.PruneWebhookDeliveries(ctx, clk.now)
	if err != nil || n != 2 {
		t.Errorf("pruned %d, %v; want the two finished before now", n, err)
	}
}
