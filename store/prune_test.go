package store_test

import (
	"fmt"
	"testing"
	"time"

	"amsg/push"
	"amsg/store"
	"amsg/store/storetest"
)

// Prune deletes each kind of row past its retention and keeps the rest; a
// zero retention keeps its kind for good.
func TestPruneDeletesWhatOutlivedItsRetention(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	start := clk.Now()
	insertTask(t, st, alice, 1, start)
	insertTask(t, st, alice, 2, start.Add(time.Hour))
	if err := st.FailTask(ctx, claimOne(t, st, start), 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.PutTokenProof(ctx, alice, store.TokenProof{TokenMAC: "old", SeenAt: start}); err != nil {
		t.Fatal(err)
	}
	const silent = "https://push.example/silent"
	if _, err := st.PutSubscription(ctx, bob, subscriptionJSON(silent), time.Time{}); err != nil {
		t.Fatal(err)
	}

	clk.Add(10 * 24 * time.Hour)
	if err := st.PutTokenProof(ctx, bob, store.TokenProof{TokenMAC: "new", SeenAt: clk.Now()}); err != nil {
		t.Fatal(err)
	}
	week := 7 * 24 * time.Hour
	if p, err := st.Prune(ctx, clk.Now(), store.Retention{}); err != nil || p.FinishedTasks != 0 || p.Devices != 0 {
		t.Fatalf("zero retention pruned %+v, %v; want nothing", p, err)
	}
	p, err := st.Prune(ctx, clk.Now(), store.Retention{FinishedTasks: week, DeviceSilence: week, Transcripts: week, Instances: time.Hour, TokenProofs: week})
	if err != nil {
		t.Fatal(err)
	}
	if p.FinishedTasks != 1 || p.Devices != 1 || p.TokenProofs != 1 {
		t.Errorf("pruned %+v; want the failed task, the silent device and alice's old token proof", p)
	}
	if _, ok, _ := st.TokenProof(ctx, alice); ok {
		t.Error("alice's 10-day-old token proof was kept")
	}
	if _, ok, _ := st.TokenProof(ctx, bob); !ok {
		t.Error("bob's fresh token proof was pruned")
	}
	if _, err := st.Task(ctx, alice, taskUUID(2)); err != nil {
		t.Errorf("the pending task was pruned: %v", err)
	}
	if got := endpoints(t, st, bob); len(got) != 0 {
		t.Errorf("bob keeps %v", got)
	}
}

// Issue 23, point 9: a device whose push service keeps answering that it
// does not know the subscription goes once the answer has come
// UnknownSubscriptionFailures times in a row over UnknownSubscriptionSpan;
// fewer answers, a shorter span or a delivery since keep it.
func TestPruneUnknownSubscriptions(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	start := clk.Now()
	const unknown = push.OutcomeUnknownSubscription
	cases := []struct {
		user     string
		outcomes []push.Outcome // one attempt each, an hour apart, the last at start
		pruned   bool
	}{
		{"00000000-0000-4000-8000-00000000000a", []push.Outcome{unknown, unknown, unknown}, true},
		{"00000000-0000-4000-8000-00000000000b", []push.Outcome{unknown, unknown}, false},
		{"00000000-0000-4000-8000-00000000000c", []push.Outcome{unknown, unknown, push.OutcomeDelivered}, false},
		{"00000000-0000-4000-8000-00000000000d", []push.Outcome{push.OutcomeDelivered, unknown, unknown, unknown}, true},
		{"00000000-0000-4000-8000-00000000000e", []push.Outcome{push.OutcomeConfigError, push.OutcomeConfigError, push.OutcomeConfigError}, false},
	}
	var attempts []push.Attempt
	for i, c := range cases {
		device, err := st.PutSubscription(ctx, c.user, subscriptionJSON(fmt.Sprintf("https://push.example.com/u%d", i)), start)
		if err != nil {
			t.Fatal(err)
		}
		for j, o := range c.outcomes {
			at := start.Add(-time.Duration(len(c.outcomes)-1-j) * store.UnknownSubscriptionSpan / 2)
			attempts = append(attempts, push.Attempt{At: at, MessageID: fmt.Sprintf("m%d-%d", i, j), UserID: c.user,
				DeviceID: device.ID, PushHost: "push.example.com", Try: 1, Status: 400, Outcome: o})
		}
	}
	if err := st.RecordDeliveries(ctx, push.Bookkeeping{Attempts: attempts}); err != nil {
		t.Fatal(err)
	}
	p, err := st.Prune(ctx, clk.Now(), store.Retention{})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, c := range cases {
		kept := len(endpoints(t, st, c.user)) == 1
		if kept == c.pruned {
			t.Errorf("%s after %v: kept %v", c.user, c.outcomes, kept)
		}
		if c.pruned {
			want++
		}
	}
	if p.UnknownSubscriptions != want {
		t.Errorf("pruned %+v, want %d unknown subscriptions", p, want)
	}
}
