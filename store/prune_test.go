package store_test

import (
	"testing"
	"time"

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
