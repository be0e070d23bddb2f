package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"amsg/store"
)

// On PostgreSQL, while the instance hears the database's wake-ups, a full
// claim lets the next one start past the last task it took, so it does not
// walk the tasks leased before it again; a task before that point that
// becomes claimable is still claimed: once the bound has expired (a lease
// that ends without a write, as when its instance is killed) or at once
// after a wake-up (a released lease).
func TestAClaimStartsPastTheTasksTheLastFullClaimTook(t *testing.T) {
	st, raw := migratedSchema(t)
	ctx, cancel := context.WithCancel(t.Context())
	wakes := make(chan struct{}, 64)
	cancels := make(chan int64, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		st.WatchTasks(ctx, time.Second, time.Minute, func() { wakes <- struct{}{} }, func(id int64) { cancels <- id })
	}()
	t.Cleanup(func() { cancel(); <-done })
	<-wakes // connected
	// heard returns once every wake-up sent before it was handled: the
	// listener handles notifications in order, and this cancel is the last.
	heard := func() {
		t.Helper()
		if _, err := raw.ExecContext(t.Context(), `SELECT pg_notify(current_schema() || '.amsg_tasks', 'cancel:-1')`); err != nil {
			t.Fatal(err)
		}
		hearCancel(t, cancels, -1)
	}
	now := time.Now()
	for i := range 30 {
		insertTask(t, st, alice, i, now.Add(-time.Minute))
	}
	heard()
	claim := func(at time.Time, n int, want ...int) []store.Task {
		t.Helper()
		tasks, err := st.ClaimDueTasks(t.Context(), at, time.Minute, n)
		var wanted []string
		for _, i := range want {
			wanted = append(wanted, taskUUID(i))
		}
		if err != nil || !slices.Equal(uuids(tasks), wanted) {
			t.Fatalf("claim of %d at %s = %v, %v; want %v", n, at.Format(time.TimeOnly+".000"), uuids(tasks), err, wanted)
		}
		return tasks
	}
	claim(now, 10, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	// Task 3's lease ends without a write that notifies, as when its
	// instance is killed mid-delivery.
	if _, err := raw.ExecContext(t.Context(), `UPDATE tasks SET lease_until = 1 WHERE uuid = $1`, taskUUID(3)); err != nil {
		t.Fatal(err)
	}
	claim(now, 5, 10, 11, 12, 13, 14)
	later := claim(now.Add(time.Second), 5, 3, 15, 16, 17, 18)
	if err := st.ReleaseLease(t.Context(), later[1].Lease()); err != nil {
		t.Fatal(err)
	}
	heard()
	claim(now.Add(time.Second), 1, 15)
}
