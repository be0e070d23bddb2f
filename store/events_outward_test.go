package store_test

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"amsg/push"
	"amsg/store"
	"amsg/store/storetest"
)

// eventsOfType reads every event and keeps those of typ.
func eventsOfType(t *testing.T, st *store.Store, typ string) []store.MessageEvent {
	t.Helper()
	all, err := st.MessageEventsAfter(t.Context(), 0, store.MaxMessageEventsPage)
	if err != nil {
		t.Fatal(err)
	}
	var out []store.MessageEvent
	for _, e := range all {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// TestDeviceGoneRecordedOnce: a device the push service says is gone is
// told once, in the write that removes it, however many pushes met it.
func TestDeviceGoneRecordedOnce(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	phone, err := st.PutSubscription(ctx, alice, subscriptionJSON("https://push.example/phone"), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := st.RecordDeliveries(ctx, push.Bookkeeping{UserID: alice, Gone: []int64{phone.ID}}); err != nil {
			t.Fatal(err)
		}
	}
	gone := eventsOfType(t, st, store.EventDeviceGone)
	if len(gone) != 1 || gone[0].UserID != alice || gone[0].DeviceID != strconv.FormatInt(phone.ID, 10) || !gone[0].At.Equal(clk.now) {
		t.Errorf("device.gone events = %+v, want one for alice's phone", gone)
	}
}

// TestInterruptDecidedRecorded: approving and expiring each tell
// interrupt.decided with the state, in the deciding write; a refused
// decision tells nothing.
func TestInterruptDecidedRecorded(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	now := clk.now
	if err := st.CreateInterrupts(ctx, []store.Interrupt{
		{ID: "int_a", UserID: alice, SessionID: "s", ToolCallID: "c1", Body: json.RawMessage(`{}`), CreatedAt: now, ExpiresAt: now.Add(time.Hour)},
		{ID: "int_b", UserID: alice, SessionID: "s", ToolCallID: "c2", Body: json.RawMessage(`{}`), CreatedAt: now, ExpiresAt: now.Add(time.Minute)},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DecideInterrupt(ctx, store.InterruptDecision{ID: "int_a", State: store.InterruptApproved, At: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DecideInterrupt(ctx, store.InterruptDecision{ID: "int_a", State: store.InterruptDenied, At: now}); err == nil {
		t.Fatal("a second decision was taken")
	}
	if _, err := st.ExpireInterrupts(ctx, now.Add(2*time.Minute), 10); err != nil {
		t.Fatal(err)
	}
	decided := eventsOfType(t, st, store.EventInterruptDecided)
	if len(decided) != 2 {
		t.Fatalf("interrupt.decided events = %+v, want two", decided)
	}
	for i, want := range []string{`{"interruptId":"int_a","sessionId":"s","toolCallId":"c1","state":"approved"}`,
		`{"interruptId":"int_b","sessionId":"s","toolCallId":"c2","state":"expired"}`} {
		if string(decided[i].Detail) != want || decided[i].UserID != alice {
			t.Errorf("event %d = %+v (%s), want detail %s", i, decided[i], decided[i].Detail, want)
		}
	}
}

// TestTaskFailedRecorded: a task failed for good tells task.failed with
// its uuid and last error; a failure that lost its lease tells nothing.
func TestTaskFailedRecorded(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	task := insertTask(t, st, alice, 1, clk.now)
	l := claimOne(t, st, clk.now)
	if err := st.FailTask(ctx, l, 3, json.RawMessage(`{"reason":"stale"}`)); err != nil {
		t.Fatal(err)
	}
	if err := st.FailTask(ctx, l, 3, nil); err == nil {
		t.Fatal("a second failure with the spent lease took effect")
	}
	failed := eventsOfType(t, st, store.EventTaskFailed)
	if len(failed) != 1 || failed[0].UserID != alice {
		t.Fatalf("task.failed events = %+v, want one", failed)
	}
	var detail struct {
		TaskID    string          `json:"taskId"`
		Recurring bool            `json:"recurring"`
		LastError json.RawMessage `json:"lastError"`
	}
	if err := json.Unmarshal(failed[0].Detail, &detail); err != nil || detail.TaskID != task.UUID || detail.Recurring ||
		string(detail.LastError) != `{"reason":"stale"}` {
		t.Errorf("detail %s: %v", failed[0].Detail, err)
	}
}
