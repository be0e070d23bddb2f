package store_test

import (
	"context"
	"database/sql"
	"sync/atomic"
	"testing"
	"time"

	"amsg/store"
	"amsg/store/storetest"
)

// openTwice opens two stores on one fresh database, as two instances would.
func openTwice(t *testing.T, cfg store.Config) (a, b *store.Store, url string) {
	t.Helper()
	path, url := storetest.Database(t)
	cfg.Path, cfg.DatabaseURL = path, url
	return storetest.Open(t, cfg), storetest.Open(t, cfg), url
}

func TestInstanceHeartbeats(t *testing.T) {
	clock := newClock()
	a, b, _ := openTwice(t, store.Config{Now: clock.Now})
	ctx := t.Context()
	if err := a.RegisterInstance(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	alive := func(id string, within time.Duration) bool {
		t.Helper()
		ok, err := b.InstanceAlive(ctx, id, clock.Now().Add(-within))
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !alive("a", time.Second) || alive("b", time.Hour) {
		t.Error("a registered should be alive, b never registered should not")
	}
	clock.Add(time.Minute)
	if alive("a", 30*time.Second) {
		t.Error("a without a heartbeat for a minute is alive within 30s")
	}
	if err := a.HeartbeatInstance(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if !alive("a", time.Second) {
		t.Error("a heartbeat did not make a alive")
	}
	clock.Add(time.Hour)
	if n, err := b.DeleteStaleInstances(ctx, clock.Now().Add(-time.Minute)); err != nil || n != 1 {
		t.Fatalf("DeleteStaleInstances = %d, %v; want 1", n, err)
	}
	if err := a.HeartbeatInstance(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if !alive("a", time.Second) {
		t.Error("a pruned instance that beats again is not alive")
	}
	if err := a.DeleteInstance(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if alive("a", time.Hour) {
		t.Error("a deleted instance is alive")
	}
}

// A task inserted through one instance wakes the other's watcher, and the
// cancel of a task being delivered reaches it with the task's id.
func TestWatchTasksHearsAnotherInstance(t *testing.T) {
	a, b, url := openTwice(t, store.Config{})
	if url == "" {
		t.Skip("SQLite has one process: it wakes its scheduler itself")
	}
	wakes := make(chan struct{}, 16)
	cancels := make(chan int64, 16)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.WatchTasks(ctx, time.Second, time.Second, func() { wakes <- struct{}{} }, func(id int64) { cancels <- id })
	}()
	t.Cleanup(func() { cancel(); <-done })
	<-wakes // connected
	now := time.Now()
	insertTask(t, a, alice, 1, now)
	select {
	case <-wakes:
	case <-time.After(10 * time.Second):
		t.Fatal("no wake-up within 10s of an insert on the other instance")
	}
	l := claimOne(t, a, now)
	deleted, err := a.DeleteTask(t.Context(), alice, taskUUID(1))
	if err != nil || !deleted.Delivering || deleted.ID != l.TaskID {
		t.Fatalf("DeleteTask of a leased task = %+v, %v", deleted, err)
	}
	hearCancel(t, cancels, l.TaskID)
}

// hearCancel waits for the cancel of taskID, sent by another instance.
func hearCancel(t *testing.T, cancels <-chan int64, taskID int64) {
	t.Helper()
	select {
	case id := <-cancels:
		if id != taskID {
			t.Fatalf("cancel of task %d heard as %d", taskID, id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no cancel within 10s of deleting a task being delivered on the other instance")
	}
}

// A task claimable later than the horizon wakes no other instance (its
// scheduler's timer finds it); one claimable within it does. The cancel
// sent last arrives after both notifications were handled, so the wake-ups
// counted by then are all there will be.
func TestWatchTasksWakesOnlyForTasksDueWithinTheHorizon(t *testing.T) {
	a, b, url := openTwice(t, store.Config{})
	if url == "" {
		t.Skip("SQLite has one process: it wakes its scheduler itself")
	}
	var wakes atomic.Int64
	connected := make(chan struct{}, 1)
	cancels := make(chan int64, 1)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.WatchTasks(ctx, time.Second, time.Minute, func() {
			if wakes.Add(1) == 1 {
				connected <- struct{}{}
			}
		}, func(id int64) { cancels <- id })
	}()
	t.Cleanup(func() { cancel(); <-done })
	<-connected
	now := time.Now()
	insertTask(t, a, alice, 1, now.Add(time.Hour))
	insertTask(t, a, alice, 2, now)
	l := claimOne(t, a, now)
	if _, err := a.DeleteTask(t.Context(), alice, taskUUID(2)); err != nil {
		t.Fatal(err)
	}
	hearCancel(t, cancels, l.TaskID)
	if got := wakes.Load() - 1; got != 1 {
		t.Errorf("%d wake-ups for a task due in an hour and one due now, want 1 (the one due now)", got)
	}
}

// The leadership has one holder; when the holder's session dies, another
// instance takes it on its next check.
func TestLeaderFailsOver(t *testing.T) {
	a, b, url := openTwice(t, store.Config{})
	ctx := t.Context()
	la, lb := a.Leader("housekeeping", time.Minute), b.Leader("housekeeping", time.Minute)
	t.Cleanup(func() { la.Release(); lb.Release() })
	check := func(l store.Leader) bool { return leads(t, l) }
	if !check(la) {
		t.Fatal("the first candidate does not lead")
	}
	if url == "" {
		if !check(lb) {
			t.Error("on SQLite every process leads (it is the only one)")
		}
		return
	}
	if check(lb) || !check(la) {
		t.Fatal("two leaders, or the leader lost it")
	}
	// Kill the leader's session as a crash would, and wait for it to end.
	admin, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, `SELECT pg_terminate_backend(pid, 10000) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND objsubid = 2
			AND classid::bigint = hashtext(current_schema())::bigint & 4294967295
			AND objid::bigint = hashtext('housekeeping')::bigint & 4294967295`); err != nil {
		t.Fatal(err)
	}
	if !check(lb) {
		t.Fatal("the survivor did not take the leadership of a dead leader")
	}
	if check(la) {
		t.Error("the old leader still leads after its session died")
	}
	if err := lb.Release(); err != nil {
		t.Fatal(err)
	}
	if !check(la) {
		t.Error("a released leadership was not free")
	}
}

// leads checks l once and reports whether it leads.
func leads(t *testing.T, l store.Leader) bool {
	t.Helper()
	ok, err := l.Check(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return ok
}
