package store_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"amsg/push"
	"amsg/store"
	"amsg/store/storetest"
)

func TestMessageEventsTimelineAndFollow(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	at := clk.now.Add(-time.Minute)
	if err := st.AppendMessageEvents(ctx,
		store.MessageEvent{At: at, UserID: alice, MessageID: "m1", Type: store.EventQueued},
		store.MessageEvent{UserID: alice, MessageID: "m1", DeviceID: "7", Type: store.EventAccepted, Detail: json.RawMessage(`{"status":201}`)},
		store.MessageEvent{UserID: bob, MessageID: "m1", Type: store.EventQueued},
	); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendMessageEvents(ctx, store.MessageEvent{UserID: alice, DeviceID: "7", Type: store.EventDeviceGone}); err != nil {
		t.Fatal(err)
	}

	got, err := st.MessageTimeline(ctx, alice, "m1")
	if err != nil {
		t.Fatal(err)
	}
	want := []store.MessageEvent{
		{At: at, UserID: alice, MessageID: "m1", Type: store.EventQueued},
		{At: clk.now, UserID: alice, MessageID: "m1", DeviceID: "7", Type: store.EventAccepted, Detail: json.RawMessage(`{"status":201}`)},
	}
	if len(got) != len(want) {
		t.Fatalf("MessageTimeline(alice, m1) = %+v, want %d events", got, len(want))
	}
	for i := range want {
		want[i].Seq = got[i].Seq
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("event %d\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	if got[0].Seq >= got[1].Seq {
		t.Errorf("seqs %d, %d do not follow the order of recording", got[0].Seq, got[1].Seq)
	}
	if none, err := st.MessageTimeline(ctx, bob, "m2"); err != nil || none == nil || len(none) != 0 {
		t.Errorf("MessageTimeline of a message bob never had = %#v, %v; want an empty list", none, err)
	}

	all, err := st.MessageEventsAfter(ctx, 0, 3)
	if err != nil || len(all) != 3 {
		t.Fatalf("MessageEventsAfter(0, 3) = %+v, %v; want the first three", all, err)
	}
	if all[2].UserID != bob || all[0].Seq != got[0].Seq {
		t.Errorf("MessageEventsAfter(0, 3) = %+v; want alice's two then bob's", all)
	}
	rest, err := st.MessageEventsAfter(ctx, all[2].Seq, store.MaxMessageEventsPage)
	if err != nil || len(rest) != 1 || rest[0].Type != store.EventDeviceGone || rest[0].MessageID != "" {
		t.Errorf("MessageEventsAfter(cursor) = %+v, %v; want only the device.gone", rest, err)
	}
	if end, err := st.MessageEventsAfter(ctx, rest[0].Seq, 10); err != nil || len(end) != 0 {
		t.Errorf("MessageEventsAfter(last) = %+v, %v; want none", end, err)
	}
}

func TestMessageEventsRefuseInvalidInput(t *testing.T) {
	st := storetest.New(t)
	ctx := t.Context()
	valid := store.MessageEvent{UserID: alice, MessageID: "m1", Type: store.EventShown}
	for name, bad := range map[string]store.MessageEvent{
		"unknown type":     {UserID: alice, MessageID: "m1", Type: "delivered"},
		"a stored row's":   {UserID: alice, MessageID: "m1", Type: "sent+accepted"},
		"no user":          {MessageID: "m1", Type: store.EventShown},
		"long message id":  {UserID: alice, MessageID: strings.Repeat("m", 1025), Type: store.EventShown},
		"detail not JSON":  {UserID: alice, MessageID: "m1", Type: store.EventShown, Detail: json.RawMessage(`{"a":`)},
		"detail an array":  {UserID: alice, MessageID: "m1", Type: store.EventShown, Detail: json.RawMessage(`[1]`)},
		"detail too large": {UserID: alice, MessageID: "m1", Type: store.EventShown, Detail: json.RawMessage(`{"a":"` + strings.Repeat("x", store.MaxMessageEventDetailBytes) + `"}`)},
	} {
		if err := st.AppendMessageEvents(ctx, valid, bad); !errors.Is(err, store.ErrInvalidMessageEvent) {
			t.Errorf("%s: AppendMessageEvents = %v, want ErrInvalidMessageEvent", name, err)
		}
	}
	if got, err := st.MessageTimeline(ctx, alice, "m1"); err != nil || len(got) != 0 {
		t.Errorf("after refused batches the timeline is %+v, %v; want nothing written", got, err)
	}
	for _, bounds := range [][2]int{{-1, 10}, {0, 0}, {0, store.MaxMessageEventsPage + 1}} {
		if _, err := st.MessageEventsAfter(ctx, int64(bounds[0]), bounds[1]); !errors.Is(err, store.ErrInvalidMessageEvent) {
			t.Errorf("MessageEventsAfter(%d, %d) = %v, want ErrInvalidMessageEvent", bounds[0], bounds[1], err)
		}
	}
}

func TestMessageTimelineIsBounded(t *testing.T) {
	st := storetest.New(t)
	events := make([]store.MessageEvent, store.MaxTimelineEvents+5)
	for i := range events {
		// A device reports a message shown once (message_events_receipt).
		events[i] = store.MessageEvent{UserID: alice, MessageID: "m1", DeviceID: fmt.Sprint(i), Type: store.EventShown}
	}
	events[0].Type = store.EventQueued
	if err := st.AppendMessageEvents(t.Context(), events...); err != nil {
		t.Fatal(err)
	}
	got, err := st.MessageTimeline(t.Context(), alice, "m1")
	if err != nil || len(got) != store.MaxTimelineEvents || got[0].Type != store.EventQueued {
		t.Errorf("MessageTimeline = %d events (%v), want the oldest %d starting with queued", len(got), err, store.MaxTimelineEvents)
	}
}

func TestPruneMessageEventsWithTheOutboxRetention(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now, OutboxMaxAge: time.Hour, MessageEventsMaxRows: 2})
	ctx := t.Context()
	if err := st.AppendMessageEvents(ctx, store.MessageEvent{UserID: alice, MessageID: "old", Type: store.EventQueued}); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Hour + time.Millisecond)
	for _, id := range []string{"a", "b", "c"} {
		if err := st.AppendMessageEvents(ctx, store.MessageEvent{UserID: alice, MessageID: id, Type: store.EventQueued}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := st.Prune(ctx, clk.now, store.Retention{})
	if err != nil || p.MessageEvents != 2 {
		t.Fatalf("Prune = %+v, %v; want 2 message events deleted (one aged, one over the cap)", p, err)
	}
	left, err := st.MessageEventsAfter(ctx, 0, 10)
	if err != nil || len(left) != 2 || left[0].MessageID != "b" || left[1].MessageID != "c" {
		t.Errorf("after pruning the events are %+v, %v; want the newest two, b and c", left, err)
	}
}

func TestDeleteUserDeletesItsMessageEvents(t *testing.T) {
	st := storetest.New(t)
	ctx := t.Context()
	if err := st.AppendMessageEvents(ctx,
		store.MessageEvent{UserID: alice, MessageID: "m1", Type: store.EventQueued},
		store.MessageEvent{UserID: bob, MessageID: "m1", Type: store.EventQueued}); err != nil {
		t.Fatal(err)
	}
	d, err := st.DeleteUser(ctx, alice)
	if err != nil || d.Events != 1 {
		t.Fatalf("DeleteUser = %+v, %v; want one message event deleted", d, err)
	}
	if got, _ := st.MessageTimeline(ctx, bob, "m1"); len(got) != 1 {
		t.Errorf("bob's timeline = %+v, want his event kept", got)
	}
}

// A push's story comes from the writes that already record it: the outbox
// row (queued), the delivery bookkeeping (sent, then per attempt accepted,
// failed or gone, and deferred), the acknowledgement.
func TestDeliveryWritesTellTheMessagesStory(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	if err := st.AppendOutbox(ctx, alice, []store.OutboxMessage{outboxMessage("m1", 0)}); err != nil {
		t.Fatal(err)
	}
	at := clk.now.Add(time.Second)
	if err := st.RecordDeliveries(ctx, push.Bookkeeping{UserID: alice, Delivered: []string{"m1"}, Gone: []int64{3}, Attempts: []push.Attempt{
		{At: at, MessageID: "m1", UserID: alice, DeviceID: 1, PushHost: "fcm.googleapis.com", Try: 1, Status: 201, Outcome: push.OutcomeDelivered},
		{At: at, MessageID: "m1", UserID: alice, DeviceID: 2, PushHost: "push.example", Try: 1, Status: 503, Outcome: push.OutcomeRetry},
		{At: at, MessageID: "m1", UserID: alice, DeviceID: 3, PushHost: "push.example", Try: 1, Status: 410, Outcome: push.OutcomeGone},
	}}); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordDeliveries(ctx, push.Bookkeeping{UserID: alice, Deferred: []string{"m2"}}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // a repeated ack changes nothing and tells nothing new
		if _, err := st.AckOutbox(ctx, alice, []string{"m1", "never-sent"}); err != nil {
			t.Fatal(err)
		}
	}

	got, err := st.MessageTimeline(ctx, alice, "m1")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"queued  {}",
		"sent  {}",
		`accepted 1 {"pushHost":"fcm.googleapis.com","status":201,"try":1}`,
		`failed 2 {"pushHost":"push.example","status":503,"outcome":"retry","try":1}`,
		`gone 3 {"pushHost":"push.example","status":410,"try":1}`,
		"acknowledged  {}",
	}
	if summary := summarize(got); !reflect.DeepEqual(summary, want) {
		t.Errorf("timeline of m1:\n got %q\nwant %q", summary, want)
	}
	if !got[1].At.Equal(at) || !got[0].At.Equal(clk.now) {
		t.Errorf("queued at %v and sent at %v, want %v and the attempt's %v", got[0].At, got[1].At, clk.now, at)
	}
	deferred, err := st.MessageTimeline(ctx, alice, "m2")
	if want := []string{`deferred  {"reason":"daily_limit"}`}; err != nil || !reflect.DeepEqual(summarize(deferred), want) {
		t.Errorf("timeline of m2 = %q, %v; want %q", summarize(deferred), err, want)
	}
}

// A delivery's bookkeeping handed to a task's completion writes the same
// story in the completion's transaction.
func TestCompletedTaskTellsItsLastPushStory(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	insertTask(t, st, alice, 1, clk.now)
	lease := claimOne(t, st, clk.now)
	if err := st.CompleteTask(ctx, lease, time.Time{}, push.Bookkeeping{UserID: alice, Record: []store.OutboxMessage{outboxMessage("m_last", 0)},
		Attempts: []push.Attempt{{MessageID: "m_last", UserID: alice, DeviceID: 4, Try: 1, Status: 201, Outcome: push.OutcomeDelivered}}}); err != nil {
		t.Fatal(err)
	}
	got, err := st.MessageTimeline(ctx, alice, "m_last")
	if want := []string{"queued  {}", "sent  {}", `accepted 4 {"status":201,"try":1}`}; err != nil || !reflect.DeepEqual(summarize(got), want) {
		t.Errorf("timeline = %q, %v; want %q", summarize(got), err, want)
	}
	row := outboxRowID(t, st, alice, "m_last")
	want := []int64{row}
	if storetest.OnPostgres() { // the delivery path's rows carry none there (events_rows.go)
		want = []int64{0}
	}
	if ids := eventOutboxIDs(t, st, alice, "m_last"); row == 0 || !reflect.DeepEqual(ids, want) {
		t.Errorf("the delivery's event row carries outbox ids %v, want %v (the row the completion recorded: %d)", ids, want, row)
	}
}

// summarize writes each event as "type device detail".
func summarize(events []store.MessageEvent) []string {
	var out []string
	for _, e := range events {
		detail := string(e.Detail)
		if detail == "" {
			detail = "{}"
		}
		out = append(out, e.Type+" "+e.DeviceID+" "+detail)
	}
	return out
}

// A receipt reported twice counts once, per device and type.
func TestRecordReceiptsCountsARepeatOnce(t *testing.T) {
	st := storetest.New(t)
	ctx := t.Context()
	d, err := st.PutSubscription(ctx, alice, subscriptionJSON("https://push.example/a"), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if owner, err := st.DeviceOwner(ctx, d.ID); err != nil || owner != alice {
		t.Errorf("DeviceOwner = %q, %v; want alice", owner, err)
	}
	if id, err := st.DeviceAt(ctx, "https://push.example/a"); err != nil || id != d.ID {
		t.Errorf("DeviceAt = %d, %v; want %d", id, err, d.ID)
	}
	if _, err := st.DeviceOwner(ctx, d.ID+1); !errors.Is(err, store.ErrUnknownDevice) {
		t.Errorf("DeviceOwner(unknown) = %v, want ErrUnknownDevice", err)
	}
	if _, err := st.DeviceAt(ctx, "https://push.example/none"); !errors.Is(err, store.ErrUnknownDevice) {
		t.Errorf("DeviceAt(unknown) = %v, want ErrUnknownDevice", err)
	}
	device := store.DeviceIDString(d.ID)
	shown := store.MessageEvent{UserID: alice, MessageID: "m1", DeviceID: device, Type: store.EventShown}
	clicked := store.MessageEvent{UserID: alice, MessageID: "m1", DeviceID: device, Type: store.EventClicked, Detail: json.RawMessage(`{"action":"reply"}`)}
	otherDevice := shown
	otherDevice.DeviceID = "999"
	first, err := st.RecordReceipts(ctx, []store.MessageEvent{shown, clicked, shown})
	if err != nil || !reflect.DeepEqual(first, []bool{true, true, false}) {
		t.Fatalf("RecordReceipts = %v, %v; want the repeat in the batch skipped", first, err)
	}
	again, err := st.RecordReceipts(ctx, []store.MessageEvent{clicked, otherDevice})
	if err != nil || !reflect.DeepEqual(again, []bool{false, true}) {
		t.Errorf("RecordReceipts(again) = %v, %v; want the repeat skipped and another device's recorded", again, err)
	}
	got, _ := st.MessageTimeline(ctx, alice, "m1")
	want := []string{"shown " + device + " {}", "clicked " + device + ` {"action":"reply"}`, "shown 999 {}"}
	if !reflect.DeepEqual(summarize(got), want) {
		t.Errorf("timeline = %q, want %q", summarize(got), want)
	}
}

func TestEventsPerDayCountsTheChartsTypes(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	day1 := time.Date(2026, 3, 1, 23, 59, 0, 0, time.UTC)
	day2 := day1.Add(2 * time.Minute)
	var events []store.MessageEvent
	for _, e := range []struct {
		at  time.Time
		typ string
	}{{day1, store.EventSent}, {day1, store.EventSent}, {day1, store.EventShown}, {day2, store.EventClicked}, {day2, store.EventQueued}, {day1.Add(-48 * time.Hour), store.EventSent}} {
		events = append(events, store.MessageEvent{At: e.at, UserID: alice, MessageID: "m", Type: e.typ})
	}
	if err := st.AppendMessageEvents(ctx, events...); err != nil {
		t.Fatal(err)
	}
	got, err := st.EventsPerDay(ctx, day1.Add(-24*time.Hour), []string{store.EventSent, store.EventShown, store.EventClicked})
	if err != nil {
		t.Fatal(err)
	}
	mar1, mar2 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	want := []store.DayCount{{mar1, store.EventSent, 2}, {mar1, store.EventShown, 1}, {mar2, store.EventClicked, 1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("EventsPerDay = %+v, want %+v", got, want)
	}
}

// A user's data inventory counts its messages' events with the delivery
// log, and purging that resource deletes them.
func TestCloudInventoryHoldsTheMessageEvents(t *testing.T) {
	st := storetest.New(t)
	ctx := t.Context()
	if err := st.AppendMessageEvents(ctx, store.MessageEvent{UserID: cloudUser, MessageID: "m1", Type: store.EventQueued},
		store.MessageEvent{UserID: cloudUser, MessageID: "m1", DeviceID: "1", Type: store.EventShown}); err != nil {
		t.Fatal(err)
	}
	inv, err := st.CloudInventory(ctx, cloudUser)
	if err != nil || len(inv.Resources) != 1 || inv.Resources[0].Type != "delivery-log" || inv.Resources[0].Label != "delivery log (0 attempts, 2 message events)" {
		t.Fatalf("inventory %+v, %v; want the events as the delivery log", inv.Resources, err)
	}
	plan, err := st.CreateCleanupPlan(ctx, cloudUser, store.PlanRequest{Mode: store.ModePurge, ResourceIDs: []string{inv.Resources[0].ID}})
	if err != nil {
		t.Fatal(err)
	}
	if op, err := st.StartCleanup(ctx, cloudUser, plan.ID, "purge-events"); err != nil || op.Status != store.OperationCompleted {
		t.Fatalf("purge: %+v, %v", op, err)
	}
	if left, err := st.MessageTimeline(ctx, cloudUser, "m1"); err != nil || len(left) != 0 {
		t.Errorf("after the purge the timeline holds %+v, %v", left, err)
	}
}

// A message's story goes with its outbox row when the outbox's retention
// deletes it; other messages' stay.
func TestCleanupOutboxDeletesTheEventsOfTheRowsItDeletes(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now, OutboxMaxRowsPerUser: 1})
	ctx := t.Context()
	// Events before the rows carry no outbox row's id: they go with the
	// row all the same.
	if err := st.AppendMessageEvents(ctx, store.MessageEvent{UserID: alice, MessageID: "m_old", Type: store.EventDeferred},
		store.MessageEvent{UserID: alice, MessageID: "m_new", Type: store.EventDeferred}); err != nil {
		t.Fatal(err)
	}
	appendOutbox(t, st, alice, outboxMessage("m_old", 1))
	clk.Add(time.Second)
	appendOutbox(t, st, alice, outboxMessage("m_new", 2))
	if err := st.RecordDeliveries(ctx, push.Bookkeeping{UserID: alice, Delivered: []string{"m_old", "m_new"}}); err != nil {
		t.Fatal(err)
	}
	if n, err := st.CleanupOutbox(ctx); err != nil || n != 1 {
		t.Fatalf("CleanupOutbox = %d, %v; want the older row over the cap", n, err)
	}
	if old, err := st.MessageTimeline(ctx, alice, "m_old"); err != nil || len(old) != 0 {
		t.Errorf("m_old's timeline = %+v, %v; want it gone with its row", old, err)
	}
	if kept, err := st.MessageTimeline(ctx, alice, "m_new"); err != nil || len(kept) != 2 {
		t.Errorf("m_new's timeline = %+v, %v; want its deferred and queued events kept", kept, err)
	}
}

// Appends written together in one batch each tell their queued event once.
func TestConcurrentAppendsTellEachMessageQueuedOnce(t *testing.T) {
	st := storetest.New(t)
	ctx := t.Context()
	const n = 40
	errs := make(chan error, n)
	for i := range n {
		go func() {
			errs <- st.AppendOutbox(ctx, alice, []store.OutboxMessage{outboxMessage(fmt.Sprintf("m%d", i), i)})
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		got, err := st.MessageTimeline(ctx, alice, fmt.Sprintf("m%d", i))
		if err != nil || len(got) != 1 || got[0].Type != store.EventQueued {
			t.Errorf("m%d's timeline = %+v, %v; want one queued event", i, got, err)
		}
	}
}
