package scheduler

import (
	"context"
	"encoding/json"
	"net"
	"sync"
	"testing"
	"time"

	"amsg/push"
	"amsg/push/clocktest"
	"amsg/push/courier"
	"amsg/push/pushtest"
	"amsg/store"
)

// lateness records what OnClaim is told.
type lateness struct {
	mu  sync.Mutex
	got []time.Duration
}

func (l *lateness) observe(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, d)
}

func (l *lateness) all() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Duration(nil), l.got...)
}

// claimedAhead starts the loop with a gate as its Sleep and waits until
// the task inserted for alice 60 ms after the clock (on the fire grid) is
// claimed and waits at the gate for its time; it returns the task as
// stored then.
func claimedAhead(t *testing.T, cfg Config) (*harness, *clocktest.Gate, store.Task) {
	t.Helper()
	g := clocktest.NewGate()
	cfg.Tick, cfg.Sleep = time.Hour, g.Sleep
	h := newHarness(t, cfg)
	h.subscribe(alice)
	task := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("on the dot")}, start.Add(60*time.Millisecond))
	h.sched.Start()
	if d := <-g.Asked; d != 60*time.Millisecond {
		t.Fatalf("the task claimed ahead waits %s, want the 60ms to its time", d)
	}
	got := h.task(alice, task.UUID)
	if !got.LeaseUntil.Equal(start.Add(DefaultLeaseTTL)) {
		t.Fatalf("the task waiting for its time is leased until %s, want the claim's lease", got.LeaseUntil)
	}
	return h, g, got
}

// A task due within Lookahead is claimed before its time and sent at it:
// nothing reaches the push service while it waits, and it starts with the
// clock at its time.
func TestATaskClaimedAheadIsSentAtItsTime(t *testing.T) {
	var late lateness
	h, g, task := claimedAhead(t, Config{OnClaim: late.observe})
	if n := len(h.push.Pushes()); n != 0 || len(late.all()) != 0 {
		t.Fatalf("%d pushes, lateness %v before the task's time", n, late.all())
	}
	h.clk.Set(task.NextSendAt)
	g.Open()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	pushes, err := h.push.WaitPushes(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(pushes[0].JSON, &m); err != nil || m["message"] != "on the dot" ||
		m["occurrenceMs"] != float64(task.NextSendAt.UnixMilli()) {
		t.Errorf("push %s", pushes[0].JSON)
	}
	waitFor(t, "the delivered task deleted", func() bool { return h.gone(alice, task.UUID) })
	if got := late.all(); len(got) != 1 || got[0] != 0 {
		t.Errorf("lateness %v, want one start at the task's time", got)
	}
}

// A task claimed ahead and cancelled before its time is never sent: the
// cancel (store.DeletedTask.Delivering, as its lease is live) stops its
// wait, and its time passing changes nothing.
func TestACancelBeforeItsTimeStopsATaskClaimedAhead(t *testing.T) {
	h, g, task := claimedAhead(t, Config{})
	if d := h.cancelTask(alice, task.UUID); !d.Delivering {
		t.Fatalf("the cancel did not find the claim: %+v", d)
	}
	h.clk.Set(task.NextSendAt)
	g.Open()
	waitFor(t, "the delivery to end", func() bool {
		h.sched.deliveries.mu.Lock()
		defer h.sched.deliveries.mu.Unlock()
		return len(h.sched.deliveries.running) == 0
	})
	if n := len(h.push.Pushes()); n != 0 {
		t.Errorf("%d pushes of a task cancelled before its time", n)
	}
	if !h.gone(alice, task.UUID) {
		t.Error("the cancelled task is still stored")
	}
}

// stopGivesTheLeaseBack stops h's scheduler and checks that alice's task,
// claimed ahead, got its lease back with nothing else changed and nothing
// sent.
func stopGivesTheLeaseBack(t *testing.T, h *harness, task store.Task) {
	t.Helper()
	if err := h.sched.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := h.task(alice, task.UUID); !got.LeaseUntil.IsZero() || got.RetryCount != 0 || got.LastError != nil {
		t.Errorf("after Stop: %+v, want the lease released and nothing else changed", got)
	}
	if n := len(h.push.Pushes()); n != 0 {
		t.Errorf("%d pushes", n)
	}
}

// Stop gives back the lease of a task claimed ahead at once, sending
// nothing: the next start delivers it.
func TestStopReleasesATaskClaimedAhead(t *testing.T) {
	h, _, task := claimedAhead(t, Config{})
	stopGivesTheLeaseBack(t, h, task)
}

// An edit of a task claimed ahead takes it back (Unclaim) when it has not
// begun: a one-shot task moved later is not sent at its old time, and is
// sent once, at its new one.
func TestAnEditTakesBackATaskClaimedAhead(t *testing.T) {
	h, g, task := claimedAhead(t, Config{})
	moved := task.NextSendAt.Add(time.Hour)
	if _, err := h.st.UpdatePendingTask(t.Context(), alice, task.UUID, func(got store.Task) (store.TaskUpdate, error) {
		// As the API: the occurrence has not begun, so the edit applies.
		// Asked again, as a transaction run twice asks, Unclaim says the
		// same: the claim's release waits for this transaction.
		unclaimed := h.sched.Unclaim(got.Lease())
		if again := h.sched.Unclaim(got.Lease()); !unclaimed || !again {
			t.Errorf("Unclaim said %v, then %v; want true twice", unclaimed, again)
		}
		return store.TaskUpdate{Payload: got.Payload, NextSendAt: moved, ReleaseLease: unclaimed}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := h.task(alice, task.UUID); !got.LeaseUntil.IsZero() || !got.NextSendAt.Equal(moved) {
		t.Fatalf("after the edit: %+v, want the new time and no lease", got)
	}
	h.clk.Set(task.NextSendAt)
	g.Open() // the old time: the claim taken back must not send
	h.clk.Set(moved)
	h.sched.Wake()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	pushes, err := h.push.WaitPushes(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the delivered task deleted", func() bool { return h.gone(alice, task.UUID) })
	if err := h.sched.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(pushes[0].JSON, &m); err != nil || m["occurrenceMs"] != float64(moved.UnixMilli()) {
		t.Errorf("push %s, want the occurrence at the new time", pushes[0].JSON)
	}
	if n := len(h.push.Pushes()); n != 1 {
		t.Errorf("%d pushes, want one", n)
	}
}

// Once a task claimed ahead has begun (its time came), Unclaim says false:
// an edit then finds the occurrence under way, as for a task claimed at
// its time.
func TestUnclaimLeavesABegunOccurrenceAlone(t *testing.T) {
	block := make(chan struct{})
	h, g, task := claimedAhead(t, Config{OnClaim: func(time.Duration) { <-block }})
	h.clk.Set(task.NextSendAt)
	g.Open()
	defer close(block)
	waitFor(t, "the occurrence to begin", func() bool {
		h.sched.deliveries.mu.Lock()
		defer h.sched.deliveries.mu.Unlock()
		_, waiting := h.sched.deliveries.waiting[task.ID]
		return !waiting
	})
	if h.sched.Unclaim(task.Lease()) {
		t.Error("Unclaim took back an occurrence that had begun")
	}
}

// At most Concurrency tasks wait claimed ahead, so an instance sharing a
// database holds few tasks it is not delivering yet; the others stay
// claimable.
func TestClaimsAheadAreBoundedByConcurrency(t *testing.T) {
	g := clocktest.NewGate()
	h := newHarness(t, Config{Concurrency: 2, Tick: time.Hour, Sleep: g.Sleep})
	h.subscribe(alice)
	h.subscribe(bob)
	const tasks = aheadPerSlot*2 + 2
	for i := range tasks {
		h.insert([]string{alice, bob}[i%2], Payload{MessageType: push.TypeFixed, UserMessage: str("soon")}, start.Add(50*time.Millisecond))
	}
	// Rounds of the loop, by hand: each claim takes up to the 2 free slots'
	// worth ahead, until aheadPerSlot × Concurrency tasks wait; then the
	// loop has no room, though both slots are free.
	claimed := 0
	for range tasks {
		room := h.sched.claimRoom()
		if room == 0 {
			break
		}
		n, err := h.sched.claimAndStart(room)
		if err != nil {
			t.Fatal(err)
		}
		claimed += n
	}
	if claimed != aheadPerSlot*2 {
		t.Errorf("claimed %d ahead, want aheadPerSlot × Concurrency = %d", claimed, aheadPerSlot*2)
	}
	if room := h.sched.claimRoom(); room != 0 {
		t.Errorf("room for %d more claims with aheadPerSlot × Concurrency tasks waiting ahead", room)
	}
	leased := func() int {
		n := 0
		for _, u := range []string{alice, bob} {
			tasks, _, _ := h.st.Tasks(t.Context(), u, "", 20, 0)
			for _, task := range tasks {
				if !task.LeaseUntil.IsZero() {
					n++
				}
			}
		}
		return n
	}
	if n := leased(); n != aheadPerSlot*2 {
		t.Errorf("%d tasks leased ahead, want %d", n, aheadPerSlot*2)
	}
	h.clk.Set(start.Add(50 * time.Millisecond))
	g.Open()
	h.sched.Start()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := h.push.WaitPushes(ctx, tasks); err != nil {
		t.Fatal(err)
	}
}

// With Lookahead the loop wakes half a Lookahead before the next task's
// time, whatever the trickle: its claim then takes the tasks of the next
// half Lookahead, ahead of their time. A task the claim passed over within
// that half (here a lease ending in 30ms) is waited for until then.
func TestTheLoopWakesHalfALookaheadEarly(t *testing.T) {
	h := newHarness(t, Config{Tick: time.Hour, Lookahead: 80 * time.Millisecond})
	h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("soon")}, start.Add(100*time.Millisecond))
	for _, trickle := range []bool{false, true} {
		if got := h.sched.untilNextDue(time.Hour, trickle); got != 60*time.Millisecond {
			t.Errorf("trickle %v: the loop waits %s, want 60ms", trickle, got)
		}
	}
	h.insert(bob, Payload{MessageType: push.TypeFixed, UserMessage: str("held")}, start.Add(-time.Minute))
	if _, err := h.st.ClaimDueTasks(t.Context(), start.Add(-time.Minute), time.Minute+30*time.Millisecond, 1); err != nil {
		t.Fatal(err)
	}
	if got := h.sched.untilNextDue(time.Hour, true); got != 30*time.Millisecond {
		t.Errorf("with a lease ending in 30ms the loop waits %s, want 30ms", got)
	}
}

// WakeFor wakes the loop only for a task it would not find in time by
// itself: one falling due within a Tick and a Lookahead.
func TestWakeForATaskTheLoopWouldMissOnly(t *testing.T) {
	h := newHarness(t, Config{Tick: time.Second, Lookahead: 100 * time.Millisecond})
	for _, c := range []struct {
		due  time.Time
		wake bool
	}{
		{start.Add(time.Hour), false},
		{start.Add(1100*time.Millisecond + time.Millisecond), false},
		{start.Add(1100 * time.Millisecond), true},
		{start.Add(-time.Minute), true},
	} {
		h.sched.WakeFor(c.due)
		select {
		case <-h.sched.wake:
			if !c.wake {
				t.Errorf("a task due at %s woke the loop", c.due.Sub(start))
			}
		default:
			if c.wake {
				t.Errorf("a task due at %s did not wake the loop", c.due.Sub(start))
			}
		}
	}
}

// Stop ends the wait of every task claimed ahead with errStopping, and a
// task that comes to wait after it does not wait: its lease goes back.
func TestNoTaskWaitsOnceStopHasBegun(t *testing.T) {
	d := deliveries{running: map[int64]context.CancelCauseFunc{}, early: map[int64]time.Time{}, waiting: map[int64]aheadClaim{}}
	causes := map[int64]error{}
	for _, id := range []int64{1, 2, 3} {
		ctx, cancel := context.WithCancelCause(t.Context())
		d.running[id] = func(cause error) { cancel(cause); causes[id] = context.Cause(ctx) }
	}
	lease := func(id int64) store.Lease { return store.Lease{TaskID: id, Until: start.Add(time.Minute)} }
	if !d.wait(lease(1)) || !d.wait(lease(2)) || !d.begin(2) {
		t.Fatal("before Stop, a task claimed ahead waits and begins")
	}
	d.stopWaiting()
	if causes[1] != errStopping || causes[2] != nil {
		t.Errorf("causes after Stop %v, want errStopping for the waiting task 1 only (2 had begun)", causes)
	}
	if d.wait(lease(3)) {
		t.Error("a task comes to wait after Stop began")
	}
}

// Stop that comes as a task claimed ahead reaches its time, before it
// begins, gives its lease back: the delivery does not start with its
// context ended, which would record a failed attempt.
func TestStopAtATasksTimeGivesItsLeaseBack(t *testing.T) {
	reached := make(chan struct{})
	var h *harness
	h = newHarness(t, Config{Tick: time.Hour, Sleep: func(ctx context.Context, d time.Duration) error {
		h.sched.deliveries.stopWaiting() // Stop begins as the wait ends
		close(reached)
		return nil
	}})
	h.subscribe(alice)
	task := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("on the dot")}, start.Add(60*time.Millisecond))
	h.sched.Start()
	<-reached
	stopGivesTheLeaseBack(t, h, task)
}

// TestATaskClaimedAheadWarmsItsPushService: while a task claimed ahead
// waits for its time, the connection to its device's push service is
// opened already, and the push goes on it.
func TestATaskClaimedAheadWarmsItsPushService(t *testing.T) {
	connsAtTheWait := make(chan int, 1)
	var h *harness
	h = newHarnessOn(t, Config{Tick: time.Hour, Sleep: func(ctx context.Context, d time.Duration) error {
		select {
		case connsAtTheWait <- h.push.Conns():
		default:
		}
		return nil
	}}, courier.PolicyUpstream, pushtest.Options{TLS: true})
	h.subscribe(alice)
	h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("warm")}, start.Add(60*time.Millisecond))
	h.sched.Start()
	if n := <-connsAtTheWait; n != 1 {
		t.Errorf("%d connections to the push service while the task waited ahead, want 1", n)
	}
	if _, err := h.push.WaitDelivered(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	if n := h.push.Conns(); n != 1 {
		t.Errorf("%d connections after the push, want the one opened ahead", n)
	}
}

// TestAnEditTakesBackATaskWhileItsPushServiceIsDialed: a task claimed
// ahead waits for its time from before it opens its push service's
// connection, so an edit made while that dial hangs takes the claim back
// (Unclaim), the dial is abandoned, and nothing is sent at the old time.
func TestAnEditTakesBackATaskWhileItsPushServiceIsDialed(t *testing.T) {
	// A push service that accepts connections and never answers the TLS
	// handshake: the warm dial hangs until its context ends.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c
		}
	}()
	g := clocktest.NewGate()
	h := newHarnessOn(t, Config{Tick: time.Hour, Sleep: g.Sleep}, courier.PolicyUpstream, pushtest.Options{TLS: true})
	sub := h.push.Subscribe()
	sub.Endpoint = "https://" + ln.Addr().String() + "/push/hangs"
	raw, _ := json.Marshal(sub)
	if _, err := h.st.PutSubscription(t.Context(), alice, raw, time.Time{}); err != nil {
		t.Fatal(err)
	}
	task := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("moved")}, start.Add(60*time.Millisecond))
	h.sched.Start()
	conn := <-accepted // the dial is under way
	t.Cleanup(func() { _ = conn.Close() })
	if _, err := h.st.UpdatePendingTask(t.Context(), alice, task.UUID, func(got store.Task) (store.TaskUpdate, error) {
		unclaimed := h.sched.Unclaim(got.Lease())
		if !unclaimed {
			t.Error("Unclaim said false while the task claimed ahead dialed its push service, want true")
		}
		return store.TaskUpdate{Payload: got.Payload, NextSendAt: got.NextSendAt.Add(time.Hour), ReleaseLease: unclaimed}, nil
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the delivery taken back to end", func() bool {
		h.sched.deliveries.mu.Lock()
		defer h.sched.deliveries.mu.Unlock()
		return len(h.sched.deliveries.running) == 0
	})
	if got := h.task(alice, task.UUID); !got.LeaseUntil.IsZero() || got.RetryCount != 0 || got.LastError != nil {
		t.Errorf("after the edit: %+v, want the lease released and nothing else changed", got)
	}
	if err := h.sched.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// startAt rounds a time up to FireGrid, never down, and leaves it alone
// without a FireGrid.
func TestStartAtRoundsUpToTheFireGrid(t *testing.T) {
	grid := &Scheduler{cfg: Config{FireGrid: 4 * time.Millisecond}}
	none := &Scheduler{cfg: Config{FireGrid: 0}}
	for _, c := range []struct{ due, want time.Time }{
		{start, start}, // on the grid already
		{start.Add(time.Nanosecond), start.Add(4 * time.Millisecond)},
		{start.Add(3999 * time.Microsecond), start.Add(4 * time.Millisecond)},
		{start.Add(4 * time.Millisecond), start.Add(4 * time.Millisecond)},
		{start.Add(61 * time.Millisecond), start.Add(64 * time.Millisecond)},
	} {
		if got := grid.startAt(c.due); !got.Equal(c.want) {
			t.Errorf("startAt(%s) = %s with a 4ms grid, want %s", c.due.Format(time.StampMicro), got.Format(time.StampMicro), c.want.Format(time.StampMicro))
		}
		if got := none.startAt(c.due); !got.Equal(c.due) {
			t.Errorf("startAt(%s) = %s without a grid, want it unchanged", c.due.Format(time.StampMicro), got.Format(time.StampMicro))
		}
	}
}

// A task claimed ahead waits until the first FireGrid point at or after
// its time, not before it; New's default grid is DefaultFireGrid and a
// negative one waits for the task's time exactly.
func TestATaskClaimedAheadStartsOnTheFireGrid(t *testing.T) {
	for _, c := range []struct {
		grid time.Duration
		want time.Duration // the wait, from start, for a task due 65ms on
	}{
		{0, 70 * time.Millisecond}, // DefaultFireGrid, 10ms: start is on it
		{8 * time.Millisecond, 72 * time.Millisecond},
		{-1, 65 * time.Millisecond},
	} {
		waited := make(chan time.Duration, 1)
		h := newHarness(t, Config{Tick: time.Hour, FireGrid: c.grid, Sleep: func(ctx context.Context, d time.Duration) error {
			select {
			case waited <- d:
			default:
			}
			return nil
		}})
		h.subscribe(alice)
		h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("on the grid")}, start.Add(65*time.Millisecond))
		h.sched.Start()
		if d := <-waited; d != c.want {
			t.Errorf("FireGrid %s: the task claimed ahead waited %s, want %s", c.grid, d, c.want)
		}
		if _, err := h.push.WaitDelivered(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
	}
}
