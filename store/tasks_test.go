package store_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"amsg/push"
	"amsg/store"
	"amsg/store/storetest"
)

// taskUUID returns a distinct lowercase UUID for test task i.
func taskUUID(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }

func insertTask(t *testing.T, st *store.Store, userID string, i int, next time.Time) store.Task {
	t.Helper()
	task, _, err := st.InsertTask(t.Context(), store.NewTask{
		UserID: userID, UUID: taskUUID(i), MessageType: push.TypeFixed, NextSendAt: next,
		Payload: json.RawMessage(fmt.Sprintf(`{"contactName":"c%d","userMessage":"hi"}`, i)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// claimNew inserts n tasks of alice due at now and claims them all.
func claimNew(t *testing.T, st *store.Store, now time.Time, n int) []store.Task {
	t.Helper()
	for i := range n {
		insertTask(t, st, alice, i, now)
	}
	tasks, err := st.ClaimDueTasks(t.Context(), now, 90*time.Second, n)
	if err != nil || len(tasks) != n {
		t.Fatalf("claim: %d tasks, %v", len(tasks), err)
	}
	return tasks
}

func uuids(tasks []store.Task) []string {
	var out []string
	for _, t := range tasks {
		out = append(out, t.UUID)
	}
	return out
}

func TestInsertTaskSealsThePayloadAndReadsItBack(t *testing.T) {
	clk := newClock()
	path := filepath.Join(t.TempDir(), "amsg.db")
	st := storetest.Open(t, store.Config{Path: path, Now: clk.Now})
	next := clk.now.Add(time.Hour + 123*time.Millisecond)
	task := insertTask(t, st, alice, 1, next)
	if task.ID == 0 || task.UUID != taskUUID(1) || task.Status != store.TaskPending || !task.NextSendAt.Equal(next) ||
		!task.CreatedAt.Equal(clk.now) || task.MessageType != push.TypeFixed || string(task.Payload) != `{"contactName":"c1","userMessage":"hi"}` {
		t.Fatalf("inserted %+v", task)
	}
	var sealed string
	var nextMs int64
	if err := rawDB(t, path).QueryRow(`SELECT payload, next_send_at FROM tasks WHERE id = ?`, task.ID).Scan(&sealed, &nextMs); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{32}:[0-9a-f]{32}:[0-9a-f]+$`).MatchString(sealed) {
		t.Errorf("payload at rest %q is not the standard's hex(iv):hex(tag):hex(ct)", sealed)
	}
	if plaintext, err := userKey(t, alice).OpenAtRest(sealed); err != nil || string(plaintext) != string(task.Payload) {
		t.Errorf("the user key opens %q, %v", plaintext, err)
	}
	if nextMs != next.UnixMilli() {
		t.Errorf("next_send_at stored as %d, want %d ms", nextMs, next.UnixMilli())
	}
	got, err := st.Task(t.Context(), alice, taskUUID(1))
	if err != nil || fmt.Sprint(got) != fmt.Sprint(task) {
		t.Errorf("Task = %+v, %v; want %+v", got, err, task)
	}
	if _, err := st.Task(t.Context(), bob, taskUUID(1)); !errors.Is(err, store.ErrTaskNotFound) {
		t.Errorf("another user's task: %v, want ErrTaskNotFound", err)
	}
}

func TestTaskIDsAreNeverReused(t *testing.T) {
	st := storetest.New(t)
	first := insertTask(t, st, alice, 1, time.Now())
	if _, err := st.DeleteTask(t.Context(), alice, first.UUID); err != nil {
		t.Fatal(err)
	}
	second := insertTask(t, st, alice, 2, time.Now())
	if second.ID <= first.ID {
		t.Errorf("id %d reused after %d was deleted: push ids embed it", second.ID, first.ID)
	}
}

func TestInsertTaskUUIDConflictAndSupersede(t *testing.T) {
	st := storetest.New(t)
	ctx := t.Context()
	now := time.Now()
	insertTask(t, st, alice, 1, now)
	insertTask(t, st, alice, 2, now)

	// Any user's uuid conflicts, and the superseded task survives the failed insert.
	_, _, err := st.InsertTask(ctx, store.NewTask{UserID: bob, UUID: taskUUID(1), MessageType: push.TypeFixed, NextSendAt: now, Payload: json.RawMessage(`{}`)})
	if !errors.Is(err, store.ErrTaskUUIDConflict) {
		t.Fatalf("conflicting uuid of another user: %v", err)
	}
	_, _, err = st.InsertTask(ctx, store.NewTask{UserID: alice, UUID: taskUUID(2), SupersedesUUID: taskUUID(1),
		MessageType: push.TypeFixed, NextSendAt: now, Payload: json.RawMessage(`{}`)})
	if !errors.Is(err, store.ErrTaskUUIDConflict) {
		t.Fatalf("conflicting uuid with supersede: %v", err)
	}
	if _, err := st.Task(ctx, alice, taskUUID(1)); err != nil {
		t.Fatalf("the supersede was not rolled back: %v", err)
	}

	// Supersede deletes in any status, only the same user's task.
	l := claimOne(t, st, now)
	if err := st.FailTask(ctx, l, 3, json.RawMessage(`{"reason":"x"}`)); err != nil {
		t.Fatal(err)
	}
	task, superseded, err := st.InsertTask(ctx, store.NewTask{UserID: alice, UUID: taskUUID(3), SupersedesUUID: taskUUID(1),
		MessageType: push.TypeAuto, NextSendAt: now, Payload: json.RawMessage(`{}`)})
	if err != nil || superseded.ID == 0 || superseded.Status != store.TaskFailed || superseded.Delivering || task.MessageType != push.TypeAuto {
		t.Fatalf("supersede a failed task: %+v %v %v", task, superseded, err)
	}
	if _, err := st.Task(ctx, alice, taskUUID(1)); !errors.Is(err, store.ErrTaskNotFound) {
		t.Errorf("superseded task still there: %v", err)
	}
	_, superseded, err = st.InsertTask(ctx, store.NewTask{UserID: bob, UUID: taskUUID(4), SupersedesUUID: taskUUID(2),
		MessageType: push.TypeFixed, NextSendAt: now, Payload: json.RawMessage(`{}`)})
	if err != nil || superseded.ID != 0 {
		t.Errorf("bob superseded alice's task: %+v %v", superseded, err)
	}
}

func TestTasksListsByNextSendAtWithStatusFilterAndPages(t *testing.T) {
	st := storetest.New(t)
	base := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	for i, offset := range []int{3, 1, 4, 2} {
		insertTask(t, st, alice, i+1, base.Add(time.Duration(offset)*time.Minute))
	}
	insertTask(t, st, bob, 9, base.Add(10*time.Minute))
	// Fail the task due first (uuid 2, at +1 min).
	l := claimOne(t, st, base.Add(time.Minute))
	if err := st.FailTask(t.Context(), l, 0, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		status        store.TaskStatus
		limit, offset int
		want          []string
		total         int
	}{
		{"", 10, 0, []string{taskUUID(2), taskUUID(4), taskUUID(1), taskUUID(3)}, 4},
		{"", 2, 1, []string{taskUUID(4), taskUUID(1)}, 4},
		{store.TaskPending, 10, 0, []string{taskUUID(4), taskUUID(1), taskUUID(3)}, 3},
		{store.TaskFailed, 10, 0, []string{taskUUID(2)}, 1},
		{"garbage", 10, 0, nil, 0},
		{"", 10, 4, nil, 4},
	} {
		tasks, total, err := st.Tasks(t.Context(), alice, c.status, c.limit, c.offset)
		if err != nil || fmt.Sprint(uuids(tasks)) != fmt.Sprint(c.want) || total != c.total {
			t.Errorf("Tasks(%q, %d, %d) = %v total %d, %v; want %v total %d", c.status, c.limit, c.offset, uuids(tasks), total, err, c.want, c.total)
		}
	}
}

func TestTasksKeepsARowThatDoesNotDecrypt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "amsg.db")
	st := storetest.Open(t, store.Config{Path: path})
	insertTask(t, st, alice, 1, time.Now())
	insertTask(t, st, alice, 2, time.Now().Add(time.Minute))
	if _, err := rawDB(t, path).Exec(`UPDATE tasks SET payload = '00:00:00' WHERE uuid = ?`, taskUUID(1)); err != nil {
		t.Fatal(err)
	}
	tasks, total, err := st.Tasks(t.Context(), alice, "", 10, 0)
	if err != nil || total != 2 || len(tasks) != 2 {
		t.Fatalf("Tasks = %d of %d, %v", len(tasks), total, err)
	}
	if tasks[0].PayloadErr == nil || tasks[0].Payload != nil || tasks[1].PayloadErr != nil {
		t.Errorf("payload errors: %v, %v", tasks[0].PayloadErr, tasks[1].PayloadErr)
	}
}

func TestUpdatePendingTask(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	next := clk.now.Add(time.Minute)
	insertTask(t, st, alice, 1, next)
	l := claimOne(t, st, next)
	if err := st.BackOffTask(ctx, l, next.Add(2*time.Minute), json.RawMessage(`{"reason":"boom"}`)); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Second)
	moved := next.Add(time.Hour)
	got, err := st.UpdatePendingTask(ctx, alice, taskUUID(1), func(task store.Task) (store.TaskUpdate, error) {
		if task.RetryCount != 1 || string(task.Payload) != `{"contactName":"c1","userMessage":"hi"}` {
			t.Errorf("update sees %+v", task)
		}
		return store.TaskUpdate{Payload: json.RawMessage(`{"contactName":"new"}`), NextSendAt: moved}, nil
	})
	if err != nil || string(got.Payload) != `{"contactName":"new"}` || !got.NextSendAt.Equal(moved) ||
		got.RetryCount != 0 || !got.RetryAfter.IsZero() || !got.UpdatedAt.Equal(clk.now) || string(got.LastError) != `{"reason":"boom"}` {
		t.Fatalf("updated %+v, %v", got, err)
	}
	// Without a new time the time stays.
	got, err = st.UpdatePendingTask(ctx, alice, taskUUID(1), func(store.Task) (store.TaskUpdate, error) {
		return store.TaskUpdate{Payload: json.RawMessage(`{}`)}, nil
	})
	if err != nil || !got.NextSendAt.Equal(moved) {
		t.Errorf("payload-only update moved the task: %+v %v", got, err)
	}
	refused := errors.New("refused")
	_, err = st.UpdatePendingTask(ctx, alice, taskUUID(1), func(store.Task) (store.TaskUpdate, error) { return store.TaskUpdate{}, refused })
	if !errors.Is(err, refused) {
		t.Errorf("update error: %v", err)
	}
	if _, err := st.UpdatePendingTask(ctx, bob, taskUUID(1), nil); !errors.Is(err, store.ErrTaskNotFound) {
		t.Errorf("another user's task: %v", err)
	}
	l = claimOne(t, st, moved)
	if err := st.FailTask(ctx, l, 0, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpdatePendingTask(ctx, alice, taskUUID(1), nil); !errors.Is(err, store.ErrTaskNotPending) {
		t.Errorf("failed task: %v", err)
	}
}

func TestDeleteTaskInAnyStatus(t *testing.T) {
	st := storetest.New(t)
	now := time.Now()
	insertTask(t, st, alice, 1, now)
	if err := st.FailTask(t.Context(), claimOne(t, st, now), 0, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		user string
		want store.TaskStatus // "" for not found
	}{{bob, ""}, {alice, store.TaskFailed}, {alice, ""}} {
		got, err := st.DeleteTask(t.Context(), c.user, taskUUID(1))
		if c.want == "" && !errors.Is(err, store.ErrTaskNotFound) || c.want != "" && (err != nil || got.Status != c.want || got.Delivering) {
			t.Errorf("DeleteTask(%s) = %+v, %v; want status %q", c.user, got, err, c.want)
		}
	}
	// A task whose lease is live was being delivered; one nobody claimed
	// was not.
	insertTask(t, st, alice, 2, now)
	insertTask(t, st, alice, 3, now.Add(time.Hour))
	claimOne(t, st, now)
	for uuid, want := range map[string]bool{taskUUID(2): true, taskUUID(3): false} {
		if got, err := st.DeleteTask(t.Context(), alice, uuid); err != nil || got.Delivering != want {
			t.Errorf("DeleteTask(%s) = %+v, %v; want Delivering %v", uuid, got, err, want)
		}
	}
}

// claimOne claims exactly one task due at now.
func claimOne(t *testing.T, st *store.Store, now time.Time) store.Lease {
	t.Helper()
	tasks, err := st.ClaimDueTasks(t.Context(), now, 90*time.Second, 1)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("claim: %d tasks, %v", len(tasks), err)
	}
	return tasks[0].Lease()
}

func TestClaimDueTasksRespectsTimeLeaseAndRetry(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	now := clk.now
	insertTask(t, st, alice, 1, now.Add(-time.Minute))
	insertTask(t, st, alice, 2, now.Add(-2*time.Minute))
	insertTask(t, st, bob, 3, now)
	insertTask(t, st, bob, 4, now.Add(time.Millisecond)) // not yet due

	tasks, err := st.ClaimDueTasks(ctx, now, 90*time.Second, 2)
	if err != nil || fmt.Sprint(uuids(tasks)) != fmt.Sprint([]string{taskUUID(2), taskUUID(1)}) {
		t.Fatalf("first claim = %v, %v", uuids(tasks), err)
	}
	if !tasks[0].LeaseUntil.Equal(now.Add(90*time.Second)) || string(tasks[0].Payload) != `{"contactName":"c2","userMessage":"hi"}` {
		t.Errorf("claimed %+v", tasks[0])
	}
	tasks, err = st.ClaimDueTasks(ctx, now, 90*time.Second, 10)
	if err != nil || fmt.Sprint(uuids(tasks)) != fmt.Sprint([]string{taskUUID(3)}) {
		t.Fatalf("second claim = %v, %v: leased tasks must not be claimed again", uuids(tasks), err)
	}
	backoff := tasks[0].Lease()
	if err := st.BackOffTask(ctx, backoff, now.Add(2*time.Minute), json.RawMessage(`{"reason":"x"}`)); err != nil {
		t.Fatal(err)
	}
	if tasks, _ := st.ClaimDueTasks(ctx, now.Add(89*time.Second), 90*time.Second, 10); len(tasks) != 1 || tasks[0].UUID != taskUUID(4) {
		t.Errorf("before the leases end: %v", uuids(tasks))
	}
	// Expired leases are claimable again, the backoff not yet.
	tasks, err = st.ClaimDueTasks(ctx, now.Add(90*time.Second), 90*time.Second, 10)
	if err != nil || fmt.Sprint(uuids(tasks)) != fmt.Sprint([]string{taskUUID(2), taskUUID(1)}) {
		t.Errorf("after the leases end = %v, %v", uuids(tasks), err)
	}
	tasks, err = st.ClaimDueTasks(ctx, now.Add(2*time.Minute), 90*time.Second, 10)
	if err != nil || len(tasks) != 1 || tasks[0].UUID != taskUUID(3) || tasks[0].RetryCount != 1 || !tasks[0].NextSendAt.Equal(now) {
		t.Errorf("after the backoff = %+v, %v", tasks, err)
	}
}

// A claim that looks ahead takes the tasks due within its window, retries
// included, and never a lease that has not ended at now, even one ending
// within the window.
func TestClaimTasksDueByLooksAheadButNotPastALease(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	now := clk.now
	leased := insertTask(t, st, bob, 5, now.Add(-time.Minute))
	if _, err := st.ClaimDueTasks(ctx, now.Add(-time.Minute), time.Minute+50*time.Millisecond, 1); err != nil {
		t.Fatal(err) // task 5, whose lease ends at now+50ms, inside the window
	}
	insertTask(t, st, alice, 1, now.Add(-time.Minute))
	insertTask(t, st, alice, 2, now.Add(40*time.Millisecond))
	insertTask(t, st, bob, 3, now.Add(100*time.Millisecond))
	insertTask(t, st, bob, 4, now.Add(101*time.Millisecond)) // past the window
	tasks, err := st.ClaimTasksDueBy(ctx, now, now.Add(100*time.Millisecond), 90*time.Second, 10, nil)
	if err != nil || fmt.Sprint(uuids(tasks)) != fmt.Sprint([]string{taskUUID(1), taskUUID(2), taskUUID(3)}) {
		t.Fatalf("claim ahead = %v, %v; want 1, 2 and 3", uuids(tasks), err)
	}
	if got, err := st.Task(ctx, bob, leased.UUID); err != nil || !got.LeaseUntil.Equal(now.Add(50*time.Millisecond)) {
		t.Errorf("the lease not yet ended was taken over: %+v, %v", got, err)
	}
	for _, task := range tasks {
		if !task.LeaseUntil.Equal(now.Add(90 * time.Second)) {
			t.Errorf("task %s leased until %s", task.UUID, task.LeaseUntil)
		}
	}
	tasks, err = st.ClaimTasksDueBy(ctx, now.Add(50*time.Millisecond), now.Add(101*time.Millisecond), 90*time.Second, 10, nil)
	if err != nil || fmt.Sprint(uuids(tasks)) != fmt.Sprint([]string{taskUUID(5), taskUUID(4)}) {
		t.Errorf("once the lease ended = %v, %v; want 5 then 4", uuids(tasks), err)
	}
}

func TestNextClaimableAt(t *testing.T) {
	st := storetest.New(t)
	now := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	if _, ok, err := st.NextClaimableAt(t.Context()); ok || err != nil {
		t.Fatalf("empty table: %v %v", ok, err)
	}
	insertTask(t, st, alice, 1, now)
	insertTask(t, st, alice, 2, now.Add(time.Minute))
	claimOne(t, st, now) // leased until now+90s: claimable after the other one
	next, ok, err := st.NextClaimableAt(t.Context())
	if err != nil || !ok || !next.Equal(now.Add(time.Minute)) {
		t.Errorf("NextClaimableAt = %s %v %v, want %s", next, ok, err, now.Add(time.Minute))
	}
}

// The next claimable instant looks past the tasks being delivered: the
// first task without a lease, or a lease that ends before it; with every
// task leased, the earliest end of a lease; a lease that ended leaves its
// task's own time.
func TestNextClaimableAtLooksPastLeases(t *testing.T) {
	st := storetest.New(t)
	ctx := t.Context()
	now := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	for i := range 5 {
		insertTask(t, st, alice, i, now.Add(time.Duration(i-5)*time.Minute)) // due 5 to 1 minutes ago
	}
	want := func(step string, at time.Time) {
		t.Helper()
		if next, ok, err := st.NextClaimableAt(ctx); err != nil || !ok || !next.Equal(at) {
			t.Errorf("%s: NextClaimableAt = %s %v %v, want %s", step, next, ok, err, at)
		}
	}
	if _, err := st.ClaimDueTasks(ctx, now, 90*time.Second, 3); err != nil {
		t.Fatal(err)
	}
	want("three of five leased", now.Add(-2*time.Minute))
	if _, err := st.ClaimDueTasks(ctx, now.Add(time.Second), 30*time.Second, 2); err != nil {
		t.Fatal(err)
	}
	want("all leased", now.Add(31*time.Second))
	// Two minutes on, every lease has ended; a task is leased again with
	// a lease that ended already, an hour before.
	leased, err := st.ClaimDueTasks(ctx, now.Add(2*time.Minute), -time.Hour, 1)
	if err != nil || len(leased) != 1 {
		t.Fatalf("claim after the leases ended: %d tasks, %v", len(leased), err)
	}
	want("a lease already ended", leased[0].NextSendAt)
}

func TestClaimDueTasksNeverHandsATaskToTwoClaimers(t *testing.T) {
	st := storetest.New(t)
	now := time.Now()
	const n = 60
	for i := range n {
		insertTask(t, st, alice, i, now.Add(-time.Duration(i)*time.Millisecond))
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			for {
				tasks, err := st.ClaimDueTasks(t.Context(), now, time.Minute, 7)
				if err != nil {
					t.Error(err)
					return
				}
				if len(tasks) == 0 {
					return
				}
				mu.Lock()
				for _, task := range tasks {
					seen[task.UUID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("%d distinct tasks claimed, want %d", len(seen), n)
	}
	for id, count := range seen {
		if count != 1 {
			t.Errorf("task %s claimed %d times", id, count)
		}
	}
}

func TestLeaseFencing(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	now := clk.now
	insertTask(t, st, alice, 1, now)
	first := claimOne(t, st, now)

	renewed, err := st.RenewLease(ctx, first, now.Add(2*time.Minute))
	if err != nil || !renewed.Until.Equal(now.Add(2*time.Minute)) {
		t.Fatalf("renew = %+v, %v", renewed, err)
	}
	// The old lease is no longer the row's: it can neither renew nor finish.
	if _, err := st.RenewLease(ctx, first, now.Add(3*time.Minute)); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("renew with the old lease: %v", err)
	}
	if err := st.CompleteTask(ctx, first, time.Time{}, push.Bookkeeping{}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("complete with the old lease: %v", err)
	}
	// After the lease expires another claimer takes over; the first is fenced off.
	second := claimOne(t, st, now.Add(2*time.Minute))
	if err := st.CompleteTask(ctx, renewed, time.Time{}, push.Bookkeeping{}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("complete by the claimer that lost the lease: %v", err)
	}
	if _, err := st.Task(ctx, alice, taskUUID(1)); err != nil {
		t.Fatalf("the fenced completion deleted the task: %v", err)
	}
	// Release makes it claimable at once.
	if err := st.ReleaseLease(ctx, second); err != nil {
		t.Fatal(err)
	}
	if err := st.ReleaseLease(ctx, second); err != nil {
		t.Errorf("second release: %v", err)
	}
	third := claimOne(t, st, now.Add(2*time.Minute))
	if err := st.CompleteTask(ctx, third, time.Time{}, push.Bookkeeping{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Task(ctx, alice, taskUUID(1)); !errors.Is(err, store.ErrTaskNotFound) {
		t.Errorf("completed one-off task not deleted: %v", err)
	}
}

func TestCompleteRecurringTaskClearsRetryStateAndLastError(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	now := clk.now
	insertTask(t, st, alice, 1, now)
	if err := st.BackOffTask(ctx, claimOne(t, st, now), now.Add(2*time.Minute), json.RawMessage(`{"reason":"first"}`)); err != nil {
		t.Fatal(err)
	}
	l := claimOne(t, st, now.Add(2*time.Minute))
	next := now.Add(24 * time.Hour)
	if err := st.CompleteTask(ctx, l, next, push.Bookkeeping{}); err != nil {
		t.Fatal(err)
	}
	task, err := st.Task(ctx, alice, taskUUID(1))
	if err != nil || !task.NextSendAt.Equal(next) || task.RetryCount != 0 || !task.RetryAfter.IsZero() ||
		!task.LeaseUntil.IsZero() || task.LastError != nil || task.Status != store.TaskPending {
		t.Errorf("after completion %+v, %v", task, err)
	}
}

func TestCompletionLeavesARescheduleByTheOwnerAlone(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	now := clk.now
	insertTask(t, st, alice, 1, now)
	l := claimOne(t, st, now)
	moved := now.Add(5 * time.Hour)
	if _, err := st.UpdatePendingTask(ctx, alice, taskUUID(1), func(task store.Task) (store.TaskUpdate, error) {
		return store.TaskUpdate{Payload: task.Payload, NextSendAt: moved}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.CompleteTask(ctx, l, time.Time{}, push.Bookkeeping{}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("complete after the owner moved the task: %v", err)
	}
	task, err := st.Task(ctx, alice, taskUUID(1))
	if err != nil || !task.NextSendAt.Equal(moved) || !task.LeaseUntil.IsZero() {
		t.Errorf("task %+v, %v: want it kept at the new time with its lease released", task, err)
	}
}

func TestRescheduleBackOffAndFail(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	now := clk.now
	insertTask(t, st, alice, 1, now)
	l := claimOne(t, st, now)
	if err := st.BackOffTask(ctx, l, now.Add(4*time.Minute), json.RawMessage(`{"reason":"a"}`)); err != nil {
		t.Fatal(err)
	}
	task, _ := st.Task(ctx, alice, taskUUID(1))
	if task.RetryCount != 1 || !task.RetryAfter.Equal(now.Add(4*time.Minute)) || !task.NextSendAt.Equal(now) || !task.LeaseUntil.IsZero() || string(task.LastError) != `{"reason":"a"}` {
		t.Errorf("after backoff %+v", task)
	}
	l = claimOne(t, st, now.Add(4*time.Minute))
	next := now.Add(7 * 24 * time.Hour)
	if err := st.RescheduleTask(ctx, l, next, json.RawMessage(`{"reason":"skipped"}`)); err != nil {
		t.Fatal(err)
	}
	task, _ = st.Task(ctx, alice, taskUUID(1))
	if task.RetryCount != 0 || !task.RetryAfter.IsZero() || !task.NextSendAt.Equal(next) || string(task.LastError) != `{"reason":"skipped"}` || task.Status != store.TaskPending {
		t.Errorf("after reschedule %+v", task)
	}
	l = claimOne(t, st, next)
	if err := st.FailTask(ctx, l, 3, json.RawMessage(`{"reason":"stale"}`)); err != nil {
		t.Fatal(err)
	}
	task, _ = st.Task(ctx, alice, taskUUID(1))
	if task.Status != store.TaskFailed || task.RetryCount != 3 || string(task.LastError) != `{"reason":"stale"}` || !task.LeaseUntil.IsZero() {
		t.Errorf("after fail %+v", task)
	}
	if tasks, _ := st.ClaimDueTasks(ctx, next.Add(time.Hour), time.Minute, 10); len(tasks) != 0 {
		t.Errorf("a failed task was claimed: %v", uuids(tasks))
	}
}

func TestDeleteFinishedTasks(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	now := clk.now
	insertTask(t, st, alice, 1, now)
	insertTask(t, st, alice, 2, now.Add(time.Second))
	if err := st.FailTask(ctx, claimOne(t, st, now), 0, nil); err != nil {
		t.Fatal(err)
	}
	clk.Add(7 * 24 * time.Hour)
	if n, err := st.DeleteFinishedTasks(ctx, now); err != nil || n != 0 {
		t.Errorf("cutoff at the failure: deleted %d, %v", n, err)
	}
	if n, err := st.DeleteFinishedTasks(ctx, now.Add(time.Millisecond)); err != nil || n != 1 {
		t.Errorf("cutoff after the failure: deleted %d, %v", n, err)
	}
	if _, err := st.Task(ctx, alice, taskUUID(2)); err != nil {
		t.Errorf("a pending task was deleted: %v", err)
	}
}

func TestInsertedLeaseIsHeldUntilItEnds(t *testing.T) {
	st := storetest.New(t)
	now := time.Now()
	task, _, err := st.InsertTask(t.Context(), store.NewTask{UserID: alice, UUID: taskUUID(1), MessageType: push.TypeInstant,
		NextSendAt: now.Add(-time.Second), Payload: json.RawMessage(`{}`), LeaseUntil: now.Add(time.Minute)})
	if err != nil || !task.LeaseUntil.Equal(fromMillisUTC(now.Add(time.Minute))) {
		t.Fatalf("insert leased: %+v %v", task, err)
	}
	if tasks, _ := st.ClaimDueTasks(t.Context(), now, time.Minute, 10); len(tasks) != 0 {
		t.Errorf("a task inserted with a lease was claimed")
	}
	if err := st.CompleteTask(t.Context(), task.Lease(), time.Time{}, push.Bookkeeping{}); err != nil {
		t.Errorf("complete the inserted lease: %v", err)
	}
}

func fromMillisUTC(t time.Time) time.Time { return time.UnixMilli(t.UnixMilli()).UTC() }

// ClaimDueTasksExcept passes over the named users' tasks, in due order for
// the rest, and leaves them claimable.
func TestClaimDueTasksExceptPassesOverUsers(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	now := clk.now
	insertTask(t, st, alice, 1, now.Add(-2*time.Minute))
	insertTask(t, st, bob, 2, now.Add(-time.Minute))
	insertTask(t, st, alice, 3, now.Add(-time.Second))
	insertTask(t, st, bob, 4, now)
	tasks, err := st.ClaimDueTasksExcept(t.Context(), now, 90*time.Second, 10, []string{alice})
	if err != nil || fmt.Sprint(uuids(tasks)) != fmt.Sprint([]string{taskUUID(2), taskUUID(4)}) {
		t.Fatalf("claim except alice = %v, %v", uuids(tasks), err)
	}
	tasks, err = st.ClaimDueTasks(t.Context(), now, 90*time.Second, 10)
	if err != nil || fmt.Sprint(uuids(tasks)) != fmt.Sprint([]string{taskUUID(1), taskUUID(3)}) {
		t.Errorf("then a plain claim = %v, %v; want alice's", uuids(tasks), err)
	}
	if _, err := st.ClaimDueTasksExcept(t.Context(), now, time.Minute, 1, make([]string, store.MaxClaimSkipUsers+1)); err == nil {
		t.Error("an oversized skip list was accepted")
	}
}

// A delivered occurrence's completion carries its last push's bookkeeping
// in the same transaction, and keeps it even when the lease was lost: the
// push went out either way.
func TestCompleteTaskWritesTheLastPushesBookkeeping(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	last := func(id string) push.Bookkeeping {
		return push.Bookkeeping{UserID: alice, Record: []store.OutboxMessage{outboxMessage(id, 1)},
			Attempts: []push.Attempt{{MessageID: id, UserID: alice, DeviceID: 1, Try: 1, Status: 201, Outcome: push.OutcomeDelivered}}}
	}
	insertTask(t, st, alice, 1, clk.now)
	lease := claimOne(t, st, clk.now)
	if err := st.CompleteTask(ctx, lease, time.Time{}, last("first")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Task(ctx, alice, taskUUID(1)); !errors.Is(err, store.ErrTaskNotFound) {
		t.Errorf("the completed task is still there: %v", err)
	}
	insertTask(t, st, alice, 2, clk.now)
	stale := claimOne(t, st, clk.now)
	claimOne(t, st, clk.now.Add(2*time.Minute)) // another claimer, after the lease ended
	if err := st.CompleteTask(ctx, stale, time.Time{}, last("second")); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("completion with a lost lease: %v, want ErrLeaseLost", err)
	}
	if _, err := st.Task(ctx, alice, taskUUID(2)); err != nil {
		t.Errorf("the fenced completion deleted the task: %v", err)
	}
	page, err := st.UnackedOutbox(ctx, alice, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := messageIDs(page); got != "first,second" || page.Entries[0].DeliveredAt.IsZero() || page.Entries[1].DeliveredAt.IsZero() {
		t.Errorf("outbox %s %+v, want first and second delivered", got, page.Entries)
	}
	for _, id := range []string{"first", "second"} {
		if attempts, err := st.Attempts(ctx, id); err != nil || len(attempts) != 1 {
			t.Errorf("attempts of %s = %+v, %v", id, attempts, err)
		}
	}
}
