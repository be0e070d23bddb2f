package scheduler

import (
	"context"
	"errors"
	"sync"
	"time"

	"amsg/store"
)

// The statuses of a cancel, upstream's words: what the cancel found the
// task doing (the API's data.status, the tick's cancelledTasks).
const (
	// StatusCancelled: no occurrence was being delivered.
	StatusCancelled = "cancelled"
	// StatusCancelledMidDelivery: an occurrence was being delivered and
	// was stopped; at most the push in flight went out after the cancel.
	StatusCancelledMidDelivery = "cancelled_mid_delivery"
	// StatusCancelledAfterDelivery: the task had finished (sent or
	// failed); there was nothing left to stop.
	StatusCancelledAfterDelivery = "cancelled_after_delivery"
)

// ErrCancelled is the cause of a delivery's context when its task was
// cancelled or superseded while an occurrence was being delivered: the LLM
// call under way is aborted, the courier round stops before its next push,
// and the occurrence's undelivered outbox rows are withdrawn.
var ErrCancelled = errors.New("the task was cancelled while it was being delivered")

// ErrUnclaimed is the cause of a delivery's context when Unclaim took its
// task back before its time: it gives its lease back and sends nothing.
var ErrUnclaimed = errors.New("the task claimed ahead was taken back before its time")

// deliveries are the occurrences this process is delivering, by task id,
// each with the cancel that stops it. A cancel that arrives before its
// delivery is tracked (the claim committed, the delivery has not started)
// waits in early until the delivery starts, or for a lease's length, after
// which no delivery of that claim can start any more. waiting holds the
// tasks claimed ahead that have not begun, by the lease of their claim.
type deliveries struct {
	mu      sync.Mutex
	running map[int64]context.CancelCauseFunc
	early   map[int64]time.Time
	waiting map[int64]aheadClaim
	// stopping is set by stopWaiting: no task starts to wait any more.
	stopping bool
}

// aheadClaim is a task claimed ahead that has not begun: the lease of its
// claim, and whether Unclaim took it back.
type aheadClaim struct {
	until     time.Time
	unclaimed bool
}

// track registers the delivery of taskID, cancelled by cancel, until
// untrack. A cancel that came early stops it at once.
func (s *Scheduler) track(taskID int64, cancel context.CancelCauseFunc) {
	d := &s.deliveries
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.early[taskID]; ok {
		delete(d.early, taskID)
		cancel(ErrCancelled)
	}
	d.running[taskID] = cancel
}

// untrack unregisters the delivery of taskID (track).
func (s *Scheduler) untrack(taskID int64) {
	d := &s.deliveries
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.running, taskID)
	delete(d.waiting, taskID)
}

// wait registers a tracked task claimed ahead under l as not begun, until
// begin, unless the scheduler is stopping (stopWaiting): then it reports
// false and the task must not wait.
func (d *deliveries) wait(l store.Lease) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopping {
		return false
	}
	d.waiting[l.TaskID] = aheadClaim{until: l.Until}
	return true
}

// stopWaiting ends the waits of the tasks claimed ahead (errStopping), and
// of those about to wait (wait): Stop calls it. A context and a
// context.AfterFunc per task waiting on Stop's signal instead cost 0.8 µs
// and 6 allocations a task warm, 4 µs a push in the trickle's profile.
func (d *deliveries) stopWaiting() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopping = true
	for id := range d.waiting {
		d.running[id](errStopping)
	}
}

// begin marks a task claimed ahead begun, at its time, unless Unclaim took
// it back first: after it, an edit of the task finds its occurrence under
// way, as for a task claimed at its time.
func (d *deliveries) begin(taskID int64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.waiting[taskID]
	delete(d.waiting, taskID)
	return ok && !c.unclaimed
}

// Unclaim takes back the claim l of a task this process claimed ahead of
// its time, if its occurrence has not begun: it will not begin, and its
// lease is given back. The API calls it in the transaction of an edit of a
// leased task: true means nothing of the task is under way, so the edit
// applies whole and clears the lease (store.TaskUpdate.ReleaseLease); false
// (begun, or another instance's claim) leaves the occurrence under way as
// it was. It says true again for the same claim until the delivery ends, so
// a transaction that runs twice reads the same.
func (s *Scheduler) Unclaim(l store.Lease) bool {
	d := &s.deliveries
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.waiting[l.TaskID]
	if !ok || !c.until.Equal(l.Until) {
		return false
	}
	c.unclaimed = true
	d.waiting[l.TaskID] = c
	d.running[l.TaskID](ErrUnclaimed)
	return true
}

// Cancel stops the delivery of taskID's occurrence under way in this
// process, if any; the API calls it after deleting a task that was being
// delivered (store.DeletedTask.Delivering), and so does the store's
// watcher when another instance deleted one. At most the push already in
// flight goes out after it returns. It reports false when the occurrence
// was claimed ahead here and had not begun, so nothing of it was sent;
// true when it had begun, or may have begun in another process.
func (s *Scheduler) Cancel(taskID int64) (begun bool) {
	d := &s.deliveries
	d.mu.Lock()
	defer d.mu.Unlock()
	if cancel, ok := d.running[taskID]; ok {
		cancel(ErrCancelled)
		_, waiting := d.waiting[taskID]
		return !waiting
	}
	now := s.now()
	for id, at := range d.early {
		if now.Sub(at) > s.cfg.LeaseTTL {
			delete(d.early, id)
		}
	}
	d.early[taskID] = now
	return true
}

// cancelled reports whether a delivery stopped because its task was
// cancelled.
func cancelled(ctx context.Context) bool { return errors.Is(context.Cause(ctx), ErrCancelled) }

// withdraw ends an occurrence its task's cancel stopped: the row is gone
// already, and the occurrence's pushes no push service took are withdrawn
// from the outbox (the API withdrew the rows it saw; this catches those a
// burst recorded meanwhile), so a page catching up does not get the rest
// of a message the user cancelled.
func (s *Scheduler) withdraw(t store.Task) result {
	ctx, cancel := context.WithTimeout(context.Background(), bookkeepingTimeout)
	defer cancel()
	if _, err := s.deps.Store.DiscardUndeliveredBurst(ctx, t.UserID, burstPrefix(t.ID, t.NextSendAt)); err != nil {
		s.log.Warn("scheduler: withdrawing a cancelled occurrence's pushes failed", "taskId", t.ID, "err", err)
	}
	return result{taskID: t.ID, kind: resultCancelled}
}

// deleted reports whether t's row is gone: a delivery whose lease was lost
// tells a cancel it missed from a takeover this way.
func (s *Scheduler) deleted(t store.Task) bool {
	ctx, cancel := context.WithTimeout(context.Background(), bookkeepingTimeout)
	defer cancel()
	_, err := s.deps.Store.Task(ctx, t.UserID, t.UUID)
	return errors.Is(err, store.ErrTaskNotFound)
}
