package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"amsg/push/tracing"
	"amsg/store/driver/batch"
)

// Some writes of the delivery path are batched by the store itself, not
// only group-committed by the driver: a batch's rows go in multi-row
// statements, so a statement's fixed cost (a round trip, on PostgreSQL the
// executor's start and the locks of a table and its indexes) is paid once
// for many pushes (issue 24). A batch takes the writes waiting when its
// handler is free; none waits for company. One handler: the writes that
// arrive while a batch commits make the next one, as the driver's group
// commit does, so a burst writes fewer, larger batches (with four at once,
// a batch of completions held 9 pushes on PostgreSQL; with one, 31). Where
// the dialect does not batch statements (SQLite:
// driver.Dialect.BatchStatements), each write goes alone, and the driver's
// writer commits it with those beside it.
const (
	maxWriteBatch    = 64
	writeBatchers    = 1
	writeBatchExpiry = 30 * time.Second // bounds a batch's write, which no one caller's context may end
)

// writeBatch batches requests of type R: combined writes many in one
// transaction and returns each one's outcome (nil, or an error of its own
// such as ErrLeaseLost); alone writes one in a transaction of its own,
// for a lone request and for each request of a batch whose transaction
// failed, so that one request's failure is its own. alone's and the
// outcomes' errors are returned as they are; what writes returns itself
// is wrapped by wrap.
type writeBatch[R any] struct {
	s        *Store
	batcher  *batch.Batcher[*pendingWrite[R]]
	combined func(ctx context.Context, tx *sql.Tx, reqs []R) ([]error, error)
	alone    func(ctx context.Context, req R) error
	wrap     func(req R, err error) error
}

// pendingWrite is one request waiting for its batch.
type pendingWrite[R any] struct {
	ctx  context.Context
	req  R
	done chan error
}

func newWriteBatch[R any](s *Store, combined func(context.Context, *sql.Tx, []R) ([]error, error),
	alone func(context.Context, R) error, wrap func(R, error) error) *writeBatch[R] {
	w := &writeBatch[R]{s: s, combined: combined, alone: alone, wrap: wrap}
	if s.dialect.BatchStatements {
		w.batcher = batch.New(batch.Options{MaxItems: maxWriteBatch, MaxHandlers: writeBatchers}, w.handle)
	}
	return w
}

// write hands req to its batch and returns its outcome.
func (w *writeBatch[R]) write(ctx context.Context, req R) (err error) {
	if err := ctx.Err(); err != nil {
		return w.wrap(req, err)
	}
	if w.batcher == nil {
		return w.alone(ctx, req)
	}
	ctx, span := tracing.Start(ctx, "store.batch")
	defer func() { w.s.traceWrite(span, err) }()
	p := &pendingWrite[R]{ctx: ctx, req: req, done: make(chan error, 1)}
	if err := w.batcher.Add(p); err != nil {
		return w.wrap(req, errClosed)
	}
	return <-p.done
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
