package courier

import (
	"context"
	"sync"

	"amsg/push"
)

// Backups is an SSE round's queue of Web Push copies of what its stream
// carried, which are also the only delivery of frames a client that went
// away no longer reads. They go in order on a goroutine of the courier's,
// so a slow push service never holds up the stream, and Courier.Stop waits
// for them.
type Backups struct {
	r      *Round
	ctx    context.Context // the producer's; also cancelled when Stop stops waiting
	cancel context.CancelFunc
	mu     sync.Mutex
	items  []backup
	closed bool // the producer is done adding (Wait)
	ended  bool // the queue's goroutine is gone: Add keeps pushes unsent
	wake   chan struct{}
	done   chan struct{}
}

// backup is a push of the queue and whether the stream delivered it.
type backup struct {
	push     push.Push
	streamed bool
}

// backups are a courier's queues, so Stop can wait for them.
type backups struct {
	mu       sync.Mutex
	stopping bool // Stop began: a queue opened now sends nothing
	queues   sync.WaitGroup
	// cut ends when Stop gives up waiting: the sends under way are
	// interrupted and what is queued goes to the outbox unsent.
	cut    context.Context
	cutNow context.CancelFunc
}

func newBackups() *backups {
	b := &backups{}
	b.cut, b.cutNow = context.WithCancel(context.Background())
	return b
}

// Backups opens the round's backup queue; ctx bounds its sends. Call Wait
// when the stream has ended.
func (r *Round) Backups(ctx context.Context) *Backups {
	q := &Backups{r: r, wake: make(chan struct{}, 1), done: make(chan struct{})}
	q.ctx, q.cancel = context.WithCancel(ctx)
	bs := r.c.backups
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if bs.stopping {
		q.ended = true
		q.cancel()
		close(q.done)
		return q
	}
	bs.queues.Add(1)
	go q.run()
	return q
}

// Add queues p behind the pushes already queued; streamed says the stream
// delivered it. Once Stop stopped waiting, p is recorded in the outbox and
// not sent.
func (q *Backups) Add(p push.Push, streamed bool) {
	q.mu.Lock()
	if q.ended {
		q.mu.Unlock()
		q.keep(p)
		return
	}
	q.items = append(q.items, backup{p, streamed})
	q.mu.Unlock()
	q.signal()
}

// Wait returns once every queued push has been attempted (or, when Stop
// stopped waiting, recorded in the outbox); nothing may be added after.
// Courier.Stop waits for the producers' Wait.
func (q *Backups) Wait() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
	<-q.done
}

func (q *Backups) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *Backups) run() {
	cut := q.r.c.backups.cut
	stopWatching := context.AfterFunc(cut, q.cancel)
	defer func() {
		stopWatching()
		q.cancel()
		close(q.done)
		q.r.c.backups.queues.Done()
	}()
	for {
		b, ok := q.next()
		if !ok {
			return
		}
		if cut.Err() != nil {
			q.keep(b.push)
			continue
		}
		if err := q.r.Reach(q.ctx, b.push, b.streamed); err != nil {
			q.r.c.log.WarnContext(q.ctx, "courier: a backup push failed", "messageId", b.push.CommonFields().MessageID, "err", err)
			if cut.Err() != nil {
				q.keep(b.push)
			}
		}
	}
}

// next waits for the next push of the queue; false once it is closed and
// empty, or Stop stopped waiting and it is empty, which ends the queue.
func (q *Backups) next() (backup, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			b := q.items[0]
			q.items = q.items[1:]
			q.mu.Unlock()
			return b, true
		}
		if q.closed || q.r.c.backups.cut.Err() != nil {
			q.ended = true
			q.mu.Unlock()
			return backup{}, false
		}
		q.mu.Unlock()
		select {
		case <-q.wake:
		case <-q.r.c.backups.cut.Done():
		}
	}
}

// keep records p in the user's outbox without sending it, where the page
// catches up: the courier stopped before its turn came.
func (q *Backups) keep(p push.Push) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(q.ctx), bookkeepingTimeout)
	defer cancel()
	m, err := push.NewOutboxMessage(p)
	if err == nil {
		err = q.r.Record(ctx, []push.OutboxMessage{m})
	}
	if err != nil {
		q.r.c.log.ErrorContext(ctx, "courier: a backup push the courier stopped before sending could not be kept in the outbox",
			"messageId", p.CommonFields().MessageID, "err", err)
	}
}

// Stop waits for the backup queues to send what they hold. When ctx ends
// first, the sends under way are interrupted and what is still queued is
// recorded in the users' outboxes unsent, where their pages catch up; Stop
// then returns ctx's error once every queue has ended. A queue opened after
// Stop began sends nothing and keeps its pushes the same way. The courier's
// other sends belong to their producers, which stop them.
func (c *Courier) Stop(ctx context.Context) error {
	bs := c.backups
	bs.mu.Lock()
	bs.stopping = true
	bs.mu.Unlock()
	return push.Drain(ctx, &bs.queues, bs.cutNow)
}
