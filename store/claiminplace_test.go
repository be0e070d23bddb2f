package store_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"amsg/store"
	"amsg/store/storetest"
)

// A task whose lease ran out (its claimer died mid-delivery) is claimed in
// the order of its own time, ahead of a task due after it, however late
// its lease ended: the most overdue first.
func TestAnExpiredLeaseKeepsItsPlaceByItsTime(t *testing.T) {
	st := storetest.New(t)
	ctx := t.Context()
	now := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	insertTask(t, st, alice, 1, now.Add(-time.Minute))
	if leased, err := st.ClaimDueTasks(ctx, now.Add(-time.Minute), 30*time.Second, 1); err != nil || len(leased) != 1 {
		t.Fatalf("first claim: %d tasks, %v", len(leased), err) // its claimer dies; the lease ends 30 s ago
	}
	insertTask(t, st, bob, 2, now.Add(-45*time.Second))
	tasks, err := st.ClaimDueTasks(ctx, now, 90*time.Second, 1)
	if err != nil || fmt.Sprint(uuids(tasks)) != fmt.Sprint([]string{taskUUID(1)}) {
		t.Errorf("claim = %v, %v; want the task due first, its lease over (%s)", uuids(tasks), err, taskUUID(1))
	}
}

// On SQLite a claim, a heartbeat's renewal and a release write the task's
// row and leave tasks_due's pages as they were: the index keys a task by
// its own time, not by its lease.
func TestALeaseLeavesTasksDuePagesAlone(t *testing.T) {
	clk := newClock()
	path := filepath.Join(t.TempDir(), "amsg.db")
	st := storetest.Open(t, store.Config{Path: path, Now: clk.Now})
	ctx := t.Context()
	for i := range 200 {
		insertTask(t, st, fmt.Sprint("user", i%20), i, clk.now.Add(time.Duration(i)*time.Second))
	}
	db := rawDB(t, path)
	pages := func(tree string) string {
		t.Helper()
		var content string
		if err := db.QueryRow(`SELECT group_concat(hex(data), '') FROM (SELECT data FROM sqlite_dbpage
			WHERE pgno IN (SELECT pageno FROM dbstat WHERE name = ?) ORDER BY pgno)`, tree).Scan(&content); err != nil {
			t.Fatal(err)
		}
		return content
	}
	due, rows := pages("tasks_due"), pages("tasks")
	now := clk.now.Add(time.Minute)
	tasks, err := st.ClaimDueTasks(ctx, now, 90*time.Second, 30)
	if err != nil || len(tasks) != 30 {
		t.Fatalf("claim: %d tasks, %v", len(tasks), err)
	}
	if _, err := st.RenewLease(ctx, tasks[0].Lease(), now.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := st.ReleaseLease(ctx, tasks[1].Lease()); err != nil {
		t.Fatal(err)
	}
	if pages("tasks") == rows {
		t.Fatal("the leases changed no page of the tasks' rows")
	}
	if pages("tasks_due") != due {
		t.Error("a claim, a renewal or a release rewrote pages of tasks_due")
	}
}

// Past 1 024 leased tasks ahead of the first claimable one, the next
// claimable instant is the last one read's own time: never later than the
// true instant (here the leases' end), so the scheduler wakes early, not
// late, and the lookup reads a bounded number of rows.
func TestNextClaimableAtStopsAfter1024LeasedTasks(t *testing.T) {
	st := storetest.New(t)
	ctx := t.Context()
	now := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	const leased = 1100
	for i := range leased {
		insertTask(t, st, fmt.Sprint("user", i%50), i, now.Add(time.Duration(i-leased)*time.Millisecond))
	}
	if tasks, err := st.ClaimDueTasks(ctx, now, time.Hour, leased); err != nil || len(tasks) != leased {
		t.Fatalf("claim: %d tasks, %v", len(tasks), err)
	}
	insertTask(t, st, alice, leased, now.Add(2*time.Hour))
	want := now.Add(time.Duration(1023-leased) * time.Millisecond) // the 1 024th task's own time
	if next, ok, err := st.NextClaimableAt(ctx); err != nil || !ok || !next.Equal(want) {
		t.Errorf("NextClaimableAt = %s %v %v, want %s (the true instant is %s)", next, ok, err, want, now.Add(time.Hour))
	}
}
