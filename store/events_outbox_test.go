package store_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"amsg/push"
	"amsg/store"
	"amsg/store/storetest"
)

// outboxRowID is the id of userID's outbox row of messageID, 0 for none.
func outboxRowID(t *testing.T, st *store.Store, userID, messageID string) int64 {
	t.Helper()
	entries, err := st.BurstOutbox(t.Context(), userID, messageID)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.MessageID == messageID {
			return e.ID
		}
	}
	return 0
}

// eventOutboxIDs are EventOutboxIDs or the test's end.
func eventOutboxIDs(t *testing.T, st *store.Store, userID, messageID string) []int64 {
	t.Helper()
	ids, err := st.EventOutboxIDs(t.Context(), userID, messageID)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// The events of a message recorded while it has an outbox row carry the
// row's id (queued, the delivery's, a receipt, the acknowledgement), the
// others none; its timeline holds both, and still all of them once the
// row is deleted (its events then carry no id) and when a new row of the
// same message starts another.
func TestAMessagesTimelineOutlivesItsOutboxRow(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	if err := st.AppendMessageEvents(ctx,
		store.MessageEvent{UserID: alice, MessageID: "m1", Type: store.EventDeferred},
		store.MessageEvent{UserID: bob, MessageID: "m1", Type: store.EventDeferred}); err != nil {
		t.Fatal(err)
	}
	appendOutbox(t, st, alice, outboxMessage("m1", 0))
	if err := st.RecordDeliveries(ctx, push.Bookkeeping{UserID: alice, Attempts: []push.Attempt{
		{At: clk.now, MessageID: "m1", UserID: alice, DeviceID: 1, Try: 1, Status: 201, Outcome: push.OutcomeDelivered}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RecordReceipts(ctx, []store.MessageEvent{{UserID: alice, MessageID: "m1", DeviceID: "1", Type: store.EventShown}}); err != nil {
		t.Fatal(err)
	}
	if n, err := st.AckOutbox(ctx, alice, []string{"m1"}); err != nil || n != 1 {
		t.Fatalf("AckOutbox = %d, %v", n, err)
	}
	story := []string{"deferred  {}", "queued  {}", "sent  {}", `accepted 1 {"status":201,"try":1}`, "shown 1 {}", "acknowledged  {}"}
	timeline := func(when string, want []string) {
		t.Helper()
		got, err := st.MessageTimeline(ctx, alice, "m1")
		if err != nil || !reflect.DeepEqual(summarize(got), want) {
			t.Errorf("%s: timeline = %q, %v; want %q", when, summarize(got), err, want)
		}
		for i := 1; i < len(got); i++ {
			if got[i].Seq <= got[i-1].Seq {
				t.Errorf("%s: Seqs %d then %d: not in Seq order", when, got[i-1].Seq, got[i].Seq)
			}
		}
	}
	timeline("with its outbox row", story)
	row := outboxRowID(t, st, alice, "m1")
	want := []int64{0, row, row, row, row}
	if storetest.OnPostgres() { // the delivery path's rows carry none there, a receipt's does
		want = []int64{0, 0, 0, row, 0}
	}
	if got := eventOutboxIDs(t, st, alice, "m1"); row == 0 || !reflect.DeepEqual(got, want) {
		t.Errorf("outbox ids of the event rows = %v, want %v (the deferred event before the row carries none)", got, want)
	}
	if bobs := eventOutboxIDs(t, st, bob, "m1"); !reflect.DeepEqual(bobs, []int64{0}) {
		t.Errorf("bob's m1 event rows carry %v, want no outbox row (alice's is not his)", bobs)
	}

	if n, err := st.DeleteOutbox(ctx, alice, []string{"m1"}); err != nil || n != 1 {
		t.Fatalf("DeleteOutbox = %d, %v", n, err)
	}
	timeline("after its outbox row's deletion", story)
	if got := eventOutboxIDs(t, st, alice, "m1"); !reflect.DeepEqual(got, []int64{0, 0, 0, 0, 0}) {
		t.Errorf("after the deletion the event rows carry %v, want no outbox row", got)
	}

	appendOutbox(t, st, alice, outboxMessage("m1", 0)) // the message again: a new row
	timeline("with a new outbox row", append(slices.Clone(story), "queued  {}"))
	again := outboxRowID(t, st, alice, "m1")
	want = []int64{0, 0, 0, 0, 0, again}
	if storetest.OnPostgres() {
		want[5] = 0
	}
	if again == row || !reflect.DeepEqual(eventOutboxIDs(t, st, alice, "m1"), want) {
		t.Errorf("with new row %d (old %d) the event rows carry %v", again, row, eventOutboxIDs(t, st, alice, "m1"))
	}
	if got, err := st.MessageTimeline(ctx, bob, "m1"); err != nil || !reflect.DeepEqual(summarize(got), []string{"deferred  {}"}) {
		t.Errorf("bob's timeline = %q, %v; want his deferred event alone", summarize(got), err)
	}
}

// A user's events are those of its outbox rows and those without one: its
// inventory counts both, its deletion and the purge of its delivery log
// delete both, and another user's stay.
func TestAUsersEventsAreThoseOfItsOutboxRowsAndTheRest(t *testing.T) {
	for _, how := range []string{"delete user", "purge"} {
		t.Run(how, func(t *testing.T) {
			st := storetest.New(t)
			ctx := t.Context()
			appendOutbox(t, st, cloudUser, outboxMessage("m1", 0)) // queued, by the row
			appendOutbox(t, st, bob, outboxMessage("m1", 0))
			if err := st.AppendMessageEvents(ctx,
				store.MessageEvent{UserID: cloudUser, MessageID: "m2", Type: store.EventDeferred}, // no row
				store.MessageEvent{UserID: cloudUser, DeviceID: "7", Type: store.EventDeviceGone}, // no message
				store.MessageEvent{UserID: bob, MessageID: "m2", Type: store.EventDeferred}); err != nil {
				t.Fatal(err)
			}
			if err := st.RecordDeliveries(ctx, push.Bookkeeping{UserID: cloudUser, Attempts: []push.Attempt{ // sent and accepted, by the row
				{MessageID: "m1", UserID: cloudUser, DeviceID: 1, Try: 1, Status: 201, Outcome: push.OutcomeDelivered}}}); err != nil {
				t.Fatal(err)
			}
			inv, err := st.CloudInventory(ctx, cloudUser)
			if err != nil {
				t.Fatal(err)
			}
			var log []store.Resource
			for _, r := range inv.Resources {
				if r.Type == "delivery-log" {
					log = append(log, r)
				}
			}
			if len(log) != 1 || log[0].Label != "delivery log (1 attempts, 5 message events)" {
				t.Fatalf("inventory's delivery log %+v, want 1 attempt and 5 events", log)
			}
			switch how {
			case "delete user":
				if d, err := st.DeleteUser(ctx, cloudUser); err != nil || d.Events != 5 {
					t.Fatalf("DeleteUser = %+v, %v; want 5 events deleted", d, err)
				}
			case "purge":
				plan, err := st.CreateCleanupPlan(ctx, cloudUser, store.PlanRequest{Mode: store.ModePurge, ResourceIDs: []string{log[0].ID}})
				if err != nil {
					t.Fatal(err)
				}
				if op, err := st.StartCleanup(ctx, cloudUser, plan.ID, "purge-events"); err != nil || op.Status != store.OperationCompleted {
					t.Fatalf("purge: %+v, %v", op, err)
				}
			}
			left, err := st.MessageEventsAfter(ctx, 0, 100)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range left {
				if e.UserID != bob {
					t.Errorf("after %s an event of %s is left: %+v", how, e.UserID, e)
				}
			}
			if len(left) != 2 {
				t.Errorf("after %s %d events are left, want bob's two", how, len(left))
			}
		})
	}
}

// On SQLite the reads and deletes of one message's or one user's events
// find them by message_events_outbox and the partial message_events_message,
// never by a scan of the table.
func TestEventReadsUseTheirIndexes(t *testing.T) {
	_, db := openWithPath(t, store.Config{})
	for name, q := range store.EventReadsSQL() {
		p := queryPlan(t, db, q)
		if strings.Contains(p, "SCAN message_events") {
			t.Errorf("%s: plan %q scans message_events", name, p)
		}
		byOutbox, byMessage := strings.Contains(p, "INDEX message_events_outbox "), strings.Contains(p, "INDEX message_events_message ")
		if strings.HasPrefix(name, "delete") { // a statement a part
			if byOutbox == byMessage {
				t.Errorf("%s: plan %q does not read one of the two indexes", name, p)
			}
		} else if !byOutbox || !byMessage {
			t.Errorf("%s: plan %q does not read both indexes", name, p)
		}
	}
}

// Events stored before the migration keep no outbox row and stay a
// message's and a user's: the timeline reads them with those written
// after it, which carry their row's id, and so does the row's deletion.
func TestEventsFromBeforeTheMigrationStayFindable(t *testing.T) {
	db, cfg := openBefore(t, "message_events_outbox", "message_events_outbox")
	if _, err := db.Exec(`INSERT INTO message_events (at, user_id, message_id, device_id, type, detail)
		VALUES (1000, '` + alice + `', 'm1', '', 'deferred', '{}'), (1000, '` + alice + `', 'm2', '', 'deferred', '{}')`); err != nil {
		t.Fatal(err)
	}
	st := storetest.Open(t, cfg)
	ctx := t.Context()
	appendOutbox(t, st, alice, outboxMessage("m1", 0))
	want := []string{"deferred  {}", "queued  {}"}
	if got, err := st.MessageTimeline(ctx, alice, "m1"); err != nil || !reflect.DeepEqual(summarize(got), want) {
		t.Errorf("timeline = %q, %v; want %q", summarize(got), err, want)
	}
	if ids := eventOutboxIDs(t, st, alice, "m1"); len(ids) != 2 || ids[0] != 0 || (ids[1] == 0) != storetest.OnPostgres() {
		t.Errorf("outbox ids %v, want none for the event from before and the row's for the queued one (none on PostgreSQL)", ids)
	}
	if _, err := st.DeleteOutbox(ctx, alice, []string{"m1"}); err != nil {
		t.Fatal(err)
	}
	if got, err := st.MessageTimeline(ctx, alice, "m1"); err != nil || !reflect.DeepEqual(summarize(got), want) {
		t.Errorf("after the row's deletion the timeline = %q, %v; want %q", summarize(got), err, want)
	}
	if d, err := st.DeleteUser(ctx, alice); err != nil || d.Events != 3 {
		t.Errorf("DeleteUser = %+v, %v; want the 3 events", d, err)
	}
}
