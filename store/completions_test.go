package store_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"amsg/push"
	"amsg/store"
	"amsg/store/storetest"
)

// One-off occurrences completed at once (batched into one write) are each
// deleted under their own fence and each leave their attempt and their
// events (those of a batch go in together), and the one
// whose lease another claimer took is left in place with ErrLeaseLost.
func TestConcurrentCompletionsAreEachFenced(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	const n = 40
	tasks := claimNew(t, st, clk.now, n)
	// Task 0's lease is moved on: its completion must fail its fence.
	stolen := tasks[0]
	if _, err := st.RenewLease(ctx, stolen.Lease(), clk.now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, n)
	for i, task := range tasks {
		id := fmt.Sprintf("m%d", i)
		go func() {
			errs <- st.CompleteTask(ctx, task.Lease(), time.Time{}, push.Bookkeeping{UserID: alice,
				Attempts: []push.Attempt{{MessageID: id, UserID: alice, DeviceID: 1, Try: 1, Status: 201, Outcome: push.OutcomeDelivered}}})
		}()
	}
	lost := 0
	for range n {
		switch err := <-errs; {
		case errors.Is(err, store.ErrLeaseLost):
			lost++
		case err != nil:
			t.Fatal(err)
		}
	}
	if lost != 1 {
		t.Errorf("%d completions lost their lease, want 1", lost)
	}
	for i, task := range tasks {
		_, err := st.Task(ctx, alice, task.UUID)
		if kept := err == nil; kept != (i == 0) {
			t.Errorf("task %d: kept %v (%v), want only the stolen one kept", i, kept, err)
		}
		if attempts, err := st.Attempts(ctx, fmt.Sprintf("m%d", i)); err != nil || len(attempts) != 1 {
			t.Errorf("attempts of m%d = %+v, %v; want one", i, attempts, err)
		}
		story, err := st.MessageTimeline(ctx, alice, fmt.Sprintf("m%d", i))
		if want := []string{"sent  {}", `accepted 1 {"status":201,"try":1}`}; err != nil || !reflect.DeepEqual(summarize(story), want) {
			t.Errorf("timeline of m%d = %q, %v; want %q", i, summarize(story), err, want)
		}
	}
}
