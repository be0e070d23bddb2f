package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"amsg/push/tracing"
	"amsg/store/driver"
	"amsg/store/driver/batch"
)

// Some writes of the delivery path are batched by the store itself, not
// only group-committed by the driver: a batch's rows go in multi-row
// statements, so a statement's fixed cost (a round trip, on PostgreSQL the
// executor's start and the locks of a table and its indexes) is paid once
// for many pushes (issue 24). A batch takes the writes waiting when its
// handler is free, without waiting for more. One handler: the writes that
// arrive while a batch commits make the next one, as the driver's group
// commit does, so a burst writes fewer, larger batches (with four at once,
// a batch of completions held 9 pushes on PostgreSQL; with one, 31).
// An unhurried write (Unhurried: a delivered occurrence's completion) does
// wait, up to writeBatchLinger, for company, as on SQLite's writer
// (groupLinger): a trickle's completions come one by one and otherwise
// commit about three a batch (a 1 000/s trickle on PostgreSQL: 0.3 commits
// a push against 0.09, and PostgreSQL's CPU a push 40 % lower).
//
// Where the dialect does not batch statements (SQLite:
// driver.Dialect.BatchStatements), a batcher of the store's would starve
// the writer's group commit, which waits for company: there each write
// goes to the writer as a write of its kind (driver.WriteCombined), and the
// writer hands the writes of one kind it commits together to one call
// (combine), so the batch is the group.
const (
	maxWriteBatch    = 64
	writeBatchers    = 1
	writeBatchLinger = 15 * time.Millisecond
	writeBatchExpiry = 30 * time.Second // bounds a batch's write, which no one caller's context may end
)

// writeBatchOptions bound the store's batches (batch.Options).
var writeBatchOptions = batch.Options{MaxItems: maxWriteBatch, MaxHandlers: writeBatchers, Linger: writeBatchLinger}

// writeBatch batches requests of type R: combined writes many in a
// transaction and returns each one's outcome (nil, or an error of its own
// such as ErrLeaseLost); single writes one so, for a lone request and for
// each request of a batch whose write failed, so that one request's
// failure is its own. The outcomes are returned as they are; a failed
// write's error is wrapped by wrap.
type writeBatch[R any] struct {
	s        *Store
	batcher  *batch.Batcher[*pendingWrite[R]]
	kind     *driver.WriteKind // where the driver's writer combines the requests instead
	combined func(ctx context.Context, tx *sql.Tx, reqs []R) ([]error, error)
	single   func(ctx context.Context, tx *sql.Tx, req R) (outcome, err error)
	wrap     func(req R, err error) error
}

// pendingWrite is one request waiting for its batch.
type pendingWrite[R any] struct {
	ctx  context.Context
	req  R
	done chan error
}

// combinedWrite is one request handed to the driver's writer, and its
// outcome once a call of combine ran it.
type combinedWrite[R any] struct {
	req     R
	outcome error
}

func newWriteBatch[R any](s *Store, combined func(context.Context, *sql.Tx, []R) ([]error, error),
	single func(context.Context, *sql.Tx, R) (error, error), wrap func(R, error) error) *writeBatch[R] {
	w := &writeBatch[R]{s: s, combined: combined, single: single, wrap: wrap}
	if s.dialect.BatchStatements {
		w.batcher = batch.New(writeBatchOptions, w.handle)
	} else {
		w.kind = &driver.WriteKind{Combine: w.combine}
	}
	return w
}

// write hands req to its batch and returns its outcome.
func (w *writeBatch[R]) write(ctx context.Context, req R) (err error) {
	if err := ctx.Err(); err != nil {
		return w.wrap(req, err)
	}
	if w.batcher == nil {
		c := &combinedWrite[R]{req: req}
		err := w.s.writeWith(ctx, func(ctx context.Context, _ func(*sql.Tx) error) error {
			return w.s.db.WriteCombined(ctx, w.kind, c)
		}, nil)
		if err != nil {
			return w.wrap(req, err)
		}
		return c.outcome
	}
	ctx, span := tracing.Start(ctx, "store.batch")
	defer func() { w.s.traceWrite(span, err) }()
	p := &pendingWrite[R]{ctx: ctx, req: req, done: make(chan error, 1)}
	if err := w.handOver(p); err != nil {
		return w.wrap(req, errClosed)
	}
	return <-p.done
}

// handOver gives p to the batcher; an unhurried write lingers for company.
func (w *writeBatch[R]) handOver(p *pendingWrite[R]) error {
	if driver.IsUnhurried(p.ctx) {
		return w.batcher.Linger(p)
	}
	return w.batcher.Add(p)
}

// combine is the driver's call of the requests its writer commits
// together (driver.WriteKind): one alone as single writes it, several in
// combined's multi-row statements.
func (w *writeBatch[R]) combine(ctx context.Context, tx *sql.Tx, items []any) error {
	cs := make([]*combinedWrite[R], len(items))
	for i, item := range items {
		cs[i] = item.(*combinedWrite[R])
	}
	if len(cs) == 1 {
		var err error
		cs[0].outcome, err = w.single(ctx, tx, cs[0].req)
		return err
	}
	reqs := make([]R, len(cs))
	for i, c := range cs {
		reqs[i] = c.req
	}
	outcomes, err := w.combined(ctx, tx, reqs)
	if err != nil {
		return err
	}
	for i, c := range cs {
		c.outcome = outcomes[i]
	}
	return nil
}

// alone writes req in a write of its own.
func (w *writeBatch[R]) alone(ctx context.Context, req R) error {
	var outcome error
	err := w.s.writeLocked(ctx, func(tx *sql.Tx) error {
		var err error
		outcome, err = w.single(ctx, tx, req)
		return err
	})
	if err != nil {
		return w.wrap(req, err)
	}
	return outcome
}

func (w *writeBatch[R]) close() {
	if w.batcher != nil {
		w.batcher.Close()
	}
}

func (w *writeBatch[R]) handle(pending []*pendingWrite[R]) {
	live := pending[:0:0]
	for _, p := range pending {
		if err := p.ctx.Err(); err != nil {
			p.done <- w.wrap(p.req, err)
			continue
		}
		live = append(live, p)
	}
	if len(live) == 0 {
		return
	}
	if len(live) == 1 {
		live[0].done <- w.alone(live[0].ctx, live[0].req)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeBatchExpiry)
	defer cancel()
	reqs := make([]R, len(live))
	for i, p := range live {
		reqs[i] = p.req
	}
	var outcomes []error
	err := w.s.writeLocked(ctx, func(tx *sql.Tx) error {
		var err error
		outcomes, err = w.combined(ctx, tx, reqs)
		return err
	})
	if err != nil {
		// Each write's own error reaches its caller; this says the batch
		// failed, which a fault of its statements would otherwise keep
		// silent (every write succeeding alone, one commit each).
		w.s.log.Warn("store: a batch of writes failed together; writing each alone", "writes", len(live), "err", err)
	}
	for i, p := range live {
		if err != nil {
			p.done <- w.alone(p.ctx, p.req)
			continue
		}
		p.done <- outcomes[i]
	}
}

// wrapTaskError is how CompleteTask wraps an error of its own.
func wrapTaskError(c completion, err error) error {
	return fmt.Errorf("store: task %d: %w", c.l.TaskID, err)
}
