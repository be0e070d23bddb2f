package store_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"amsg/push"
	"amsg/store"
	"amsg/store/storetest"
)

// On PostgreSQL a batch of completions is one statement: it writes each
// push's attempt, outbox row and events and deletes the tasks whose fence
// holds, and no other; a batch with a device gone is left to the
// statements one after the other.
func TestABatchOfCompletionsIsOneStatementOnPostgres(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{DatabaseURL: storetest.DatabaseURL(t), Now: clk.Now})
	ctx := t.Context()
	tasks := claimNew(t, st, clk.now, 3)
	leases := make([]store.Lease, len(tasks))
	books := make([]push.Bookkeeping, len(tasks))
	for i, task := range tasks {
		leases[i] = task.Lease()
		id := fmt.Sprintf("m%d", i)
		books[i] = push.Bookkeeping{UserID: alice, Record: []store.OutboxMessage{outboxMessage(id, 0)},
			Attempts: []push.Attempt{{MessageID: id, UserID: alice, DeviceID: 1, Try: 1, Status: 201, Outcome: push.OutcomeDelivered}}}
	}
	leases[2].Until = leases[2].Until.Add(time.Second) // a fence that no longer holds

	gone := books[0]
	gone.Gone = []int64{1}
	if deleted, err := st.CompleteInOne(ctx, leases[:1], []push.Bookkeeping{gone}); err != nil || deleted != nil {
		t.Fatalf("a completion with a device gone: deleted %v, %v; want it left to the statements apart", deleted, err)
	}
	deleted, err := st.CompleteInOne(ctx, leases, books)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[int64]bool{tasks[0].ID: true, tasks[1].ID: true}; !reflect.DeepEqual(deleted, want) {
		t.Errorf("deleted %v, want %v (the third's fence failed)", deleted, want)
	}
	left, _, err := st.Tasks(ctx, alice, "", 10, 0)
	if err != nil || len(left) != 1 || left[0].ID != tasks[2].ID {
		t.Errorf("tasks left: %v, %v; want only task %d", left, err, tasks[2].ID)
	}
	page, err := st.UnackedOutbox(ctx, alice, 0, store.MaxOutboxPage)
	if err != nil || len(page.Entries) != len(tasks) {
		t.Errorf("outbox: %d rows, %v; want %d", len(page.Entries), err, len(tasks))
	}
	for i := range tasks {
		id := fmt.Sprintf("m%d", i)
		story, err := st.MessageTimeline(ctx, alice, id)
		if want := []string{"queued  {}", "sent  {}", `accepted 1 {"status":201,"try":1}`}; err != nil || !reflect.DeepEqual(summarize(story), want) {
			t.Errorf("timeline of %s = %q, %v; want %q", id, summarize(story), err, want)
		}
		if attempts, err := st.Attempts(ctx, id); err != nil || len(attempts) != 1 || attempts[0].Status != 201 {
			t.Errorf("attempts of %s: %+v, %v; want the one accepted", id, attempts, err)
		}
	}
}
