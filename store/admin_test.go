package store_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"amsg/push"
	"amsg/store"
	"amsg/store/storetest"
)

func TestUsersListsEveryUserWithDevicesAndTasks(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	if _, err := st.PutSubscription(ctx, alice, subscriptionJSON("https://push.example.com/a1"), clk.Now()); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Minute)
	if _, err := st.PutSubscription(ctx, alice, subscriptionJSON("https://push.example.com/a2"), clk.Now()); err != nil {
		t.Fatal(err)
	}
	insertTask(t, st, bob, 1, clk.Now().Add(time.Hour))
	if _, err := st.PutClientState(ctx, "carol", []store.ClientStateEntry{{Namespace: "ns", Key: "k", Value: "v", UpdatedAt: 1}}); err != nil {
		t.Fatal(err)
	}

	users, err := st.Users(ctx, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.UserSummary{
		{UserID: bob, PendingTasks: 1},
		{UserID: alice, Devices: 2, LastSeen: clk.Now()},
		{UserID: "carol"},
	}
	if !slices.EqualFunc(users, want, func(a, b store.UserSummary) bool {
		return a.UserID == b.UserID && a.Devices == b.Devices && a.PendingTasks == b.PendingTasks && a.LastSeen.Equal(b.LastSeen)
	}) {
		t.Fatalf("Users = %+v\nwant %+v", users, want)
	}
	page, err := st.Users(ctx, bob, 1)
	if err != nil || len(page) != 1 || page[0].UserID != alice {
		t.Fatalf("Users after bob, limit 1 = %+v, %v; want alice", page, err)
	}
}

func TestAllTasksAcrossUsers(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	a := insertTask(t, st, alice, 1, clk.Now().Add(time.Hour))
	b := insertTask(t, st, bob, 2, clk.Now().Add(time.Minute))
	tasks, err := st.AllTasks(t.Context(), store.TaskPending, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := uuids(tasks); !slices.Equal(got, []string{a.UUID, b.UUID}) || string(tasks[1].Payload) == "" {
		t.Fatalf("AllTasks = %v, want both in id order with payloads", got)
	}
	tasks, err = st.AllTasks(t.Context(), "", a.ID, 10)
	if err != nil || len(tasks) != 1 || tasks[0].UUID != b.UUID {
		t.Fatalf("AllTasks after the first = %v, %v", uuids(tasks), err)
	}
}

func TestFailedAttemptsAndPerMinuteCounts(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	m0 := clk.Now().Truncate(time.Minute)
	attempts := []push.Attempt{
		{At: m0.Add(5 * time.Second), MessageID: "m1", UserID: alice, Outcome: push.OutcomeDelivered, Status: 201},
		{At: m0.Add(10 * time.Second), MessageID: "m2", UserID: alice, Outcome: push.OutcomeGone, Status: 410, Error: "410 Gone"},
		{At: m0.Add(70 * time.Second), MessageID: "m3", UserID: bob, Outcome: push.OutcomeDelivered, Status: 201},
		{At: m0.Add(75 * time.Second), MessageID: "m4", UserID: bob, Outcome: push.OutcomeDelivered, Status: 201},
		{At: m0.Add(-2 * time.Hour), MessageID: "old", UserID: bob, Outcome: push.OutcomeFailed},
	}
	if err := st.RecordDeliveries(ctx, push.Bookkeeping{Attempts: attempts}); err != nil {
		t.Fatal(err)
	}
	failed, err := st.FailedAttempts(ctx, m0.Add(-time.Hour), 10)
	if err != nil || len(failed) != 1 || failed[0].MessageID != "m2" || failed[0].Error != "410 Gone" {
		t.Fatalf("FailedAttempts = %+v, %v; want m2 only", failed, err)
	}
	counts, err := st.AttemptsPerMinute(ctx, m0.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want := []store.OutcomeCount{
		{Minute: m0, Outcome: push.OutcomeDelivered, Count: 1},
		{Minute: m0, Outcome: push.OutcomeGone, Count: 1},
		{Minute: m0.Add(time.Minute), Outcome: push.OutcomeDelivered, Count: 2},
	}
	if !slices.EqualFunc(counts, want, func(a, b store.OutcomeCount) bool {
		return a.Minute.Equal(b.Minute) && a.Outcome == b.Outcome && a.Count == b.Count
	}) {
		t.Fatalf("AttemptsPerMinute = %+v\nwant %+v", counts, want)
	}
}

func TestDeleteUserRemovesEverything(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	if _, err := st.PutSubscription(ctx, alice, subscriptionJSON("https://push.example.com/a1"), clk.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutSubscription(ctx, bob, subscriptionJSON("https://push.example.com/b1"), clk.Now()); err != nil {
		t.Fatal(err)
	}
	insertTask(t, st, alice, 1, clk.Now().Add(time.Hour))
	if _, err := st.PutClientState(ctx, alice, []store.ClientStateEntry{{Namespace: "ns", Key: "k", Value: "v", UpdatedAt: 1}}); err != nil {
		t.Fatal(err)
	}
	appendOutbox(t, st, alice, outboxMessage("m1", 1))
	if _, err := st.AppendTranscript(ctx, store.TranscriptAppend{Owner: alice, SessionID: "s1", After: store.AnySeq,
		Entries: []store.TranscriptEntry{{ID: "01J0000000000000000000000A", At: clk.Now(), Type: "input", Body: json.RawMessage(`{}`)}}}); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordDeliveries(ctx, push.Bookkeeping{Attempts: []push.Attempt{{MessageID: "m", UserID: alice, Outcome: push.OutcomeDelivered}}}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{alice, bob} {
		if err := st.PutTokenProof(ctx, u, store.TokenProof{TokenMAC: "mac", SeenAt: clk.Now()}); err != nil {
			t.Fatal(err)
		}
	}

	d, err := st.DeleteUser(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	if d != (store.UserDeletion{Devices: 1, Tasks: 1, ClientState: 1, Outbox: 1, Sessions: 1, Attempts: 1, Events: 1, TokenProofs: 1}) {
		t.Fatalf("DeleteUser = %+v, want one row of each", d)
	}
	if users, _ := st.Users(ctx, "", 10); len(users) != 1 || users[0].UserID != bob {
		t.Fatalf("after deleting alice, Users = %+v; want bob only", users)
	}
	if tr, err := st.Transcript(ctx, alice, "s1"); err == nil && tr != nil {
		t.Fatalf("alice's transcript survived: %+v", tr)
	}
	if _, ok, _ := st.TokenProof(ctx, alice); ok {
		t.Fatal("alice's token proof survived")
	}
	if _, ok, _ := st.TokenProof(ctx, bob); !ok {
		t.Fatal("bob's token proof went with alice's")
	}
}

func TestBroadcastProgress(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	if err := st.CreateBroadcast(ctx, store.Broadcast{ID: "b1", Message: json.RawMessage(`{"message":"hi"}`), UserIDs: []string{alice, bob}}); err != nil {
		t.Fatal(err)
	}
	if err := st.AdvanceBroadcast(ctx, "b1", alice, 1, 0, store.BroadcastRunning); err != nil {
		t.Fatal(err)
	}
	if err := st.AdvanceBroadcast(ctx, "b1", bob, 0, 1, store.BroadcastDone); err != nil {
		t.Fatal(err)
	}
	b, err := st.GetBroadcast(ctx, "b1")
	if err != nil {
		t.Fatal(err)
	}
	if b.Cursor != bob || b.Sent != 1 || b.Failed != 1 || b.Status != store.BroadcastDone || !slices.Equal(b.UserIDs, []string{alice, bob}) ||
		string(b.Message) != `{"message":"hi"}` {
		t.Fatalf("broadcast = %+v", b)
	}
	if _, err := st.GetBroadcast(ctx, "nope"); !errors.Is(err, store.ErrBroadcastNotFound) {
		t.Fatalf("GetBroadcast(nope) = %v, want ErrBroadcastNotFound", err)
	}
	if err := st.AdvanceBroadcast(ctx, "nope", "", 0, 0, store.BroadcastDone); !errors.Is(err, store.ErrBroadcastNotFound) {
		t.Fatalf("AdvanceBroadcast(nope) = %v, want ErrBroadcastNotFound", err)
	}
	list, err := st.Broadcasts(ctx, store.BroadcastDone, 10)
	if err != nil || len(list) != 1 || list[0].ID != "b1" {
		t.Fatalf("Broadcasts(done) = %+v, %v", list, err)
	}
}

func TestDueTasks(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	insertTask(t, st, alice, 1, clk.Now().Add(-time.Minute))
	insertTask(t, st, alice, 2, clk.Now().Add(-time.Second))
	insertTask(t, st, bob, 3, clk.Now().Add(time.Hour))
	if n, err := st.DueTasks(t.Context(), clk.Now()); err != nil || n != 2 {
		t.Fatalf("DueTasks = %d, %v; want 2", n, err)
	}
	if _, err := st.ClaimDueTasks(t.Context(), clk.Now(), time.Minute, 1); err != nil {
		t.Fatal(err)
	}
	if n, err := st.DueTasks(t.Context(), clk.Now()); err != nil || n != 1 {
		t.Fatalf("DueTasks after claiming one = %d, %v; want 1", n, err)
	}
}
