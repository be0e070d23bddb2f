package store

import (
	"math"
	"sync"
	"time"
)

// A PostgreSQL claim walks tasks_due from its first entry and passes over
// every task leased there: those in delivery on every instance, and the
// entries of tasks just delivered that no scan has marked dead yet. With
// two instances draining one backlog it passes over both instances' (issue
// 24: a claim read 527 buffers with two instances against 390 with one).
// claimBound lets the next claim start past the last task a full claim
// took, where every task before it was then leased, being claimed, or
// taken by that claim itself.
//
// The bound holds only while that stays true, so it is dropped
//   - on every wake-up from the database (WatchTasks): a write that makes a
//     task claimable (an insert, a release, a back-off, a recurring task's
//     next occurrence) notifies every instance, this one included;
//   - when this instance is not listening, so would not hear them;
//   - after a claim that is not full, or fails: the next starts at the
//     first entry, so a task the bound passed over is claimed at the latest
//     one claim later (the scheduler claims again at once when the next
//     claimable task is due);
//   - claimBoundFor after it was set, by the claim's clock: a lease that
//     ends without a write (its instance was killed) is found then;
//   - after a claim that passed over users (fairness), or took a task not
//     yet due, before which unleased tasks may wait.
type claimBound struct {
	mu        sync.Mutex
	listening bool
	gen       uint64 // counts the drops, so a claim begun before one sets nothing
	set       bool
	at, id    int64 // the last key taken: tasks_due's (claimable_at, id)
	until     time.Time
}

// claimBoundFor is how long a bound holds after the claim that set it.
const claimBoundFor = time.Second

// start returns the key a claim at now may start after (math.MinInt64 for
// the first entry) and the generation to give advance.
func (b *claimBound) start(now time.Time) (at, id int64, gen uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.set || !now.Before(b.until) || now.Before(b.until.Add(-claimBoundFor)) {
		return math.MinInt64, math.MinInt64, b.gen
	}
	return b.at, b.id, b.gen
}

// advance records the claim begun at gen: its tasks, of limit asked for at
// now, passing over skipped users or not. It drops the bound unless the
// claim was full, passed over nobody, took only tasks due at now, and no
// drop came since it began.
func (b *claimBound) advance(gen uint64, tasks []Task, limit int, skipped bool, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if gen != b.gen {
		return
	}
	var at, id int64
	for _, t := range tasks {
		if k := millis(t.DueAt()); k > at || (k == at && t.ID > id) {
			at, id = k, t.ID
		}
	}
	if !b.listening || skipped || len(tasks) == 0 || len(tasks) < limit || at > millis(now) {
		b.dropLocked()
		return
	}
	b.set, b.at, b.id, b.until = true, at, id, now.Add(claimBoundFor)
}

// drop forgets the bound.
func (b *claimBound) drop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dropLocked()
}

func (b *claimBound) dropLocked() {
	b.set = false
	b.gen++
}

// listen records whether the wake-ups of the database reach this instance.
func (b *claimBound) listen(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.listening = on
	b.dropLocked()
}
