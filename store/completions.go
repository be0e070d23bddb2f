package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"amsg/push"
	"amsg/store/driver/batch"
)

// One-off occurrences are completed in batches: each batch is one write
// (grouped by the driver with the others waiting) whose delivery-log rows
// go in one multi-row insert and whose fenced deletes are one statement,
// so the fixed cost of a statement is paid once a batch rather than twice
// a push (issue 24). A batch takes the completions waiting when a handler
// is free; none waits for company.
const (
	maxCompletionBatch    = 64
	completionHandlers    = 4
	completionBatchExpiry = 30 * time.Second // bounds a batch's write, which no one caller's context may end
)

// completion is one CompleteTask of a one-off occurrence waiting for its
// batch.
type completion struct {
	ctx  context.Context
	l    Lease
	w    *bookkeepingWrite
	done chan error
}

func (s *Store) startCompletions() {
	s.completions = batch.New(batch.Options{MaxItems: maxCompletionBatch, MaxHandlers: completionHandlers}, s.completeBatch)
}

// completeOneOff is CompleteTask for a one-off occurrence: it waits for
// its batch, and returns what CompleteTask returns.
func (s *Store) completeOneOff(ctx context.Context, l Lease, w *bookkeepingWrite) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: task %d: %w", l.TaskID, err)
	}
	c := &completion{ctx: ctx, l: l, w: w, done: make(chan error, 1)}
	if err := s.completions.Add(c); err != nil {
		return fmt.Errorf("store: task %d: %w", l.TaskID, errClosed)
	}
	return <-c.done
}

// completeAlone completes c in a write of its own: the path of a lone
// completion, and of every completion of a batch whose write failed, so
// that one completion's failure is its own.
func (s *Store) completeAlone(c *completion) error {
	return s.finishWith(c.ctx, c.l, func(tx *sql.Tx) error { return c.w.write(c.ctx, tx) }, completeOneOffSQL)
}

// completeBatch is the completions' handler: one write for the batch, or,
// if it fails, one write per completion.
func (s *Store) completeBatch(batch []*completion) {
	live := batch[:0:0]
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.done <- fmt.Errorf("store: task %d: %w", c.l.TaskID, err)
			continue
		}
		live = append(live, c)
	}
	if len(live) == 1 {
		live[0].done <- s.completeAlone(live[0])
		return
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), completionBatchExpiry)
	defer cancel()
	var deleted map[int64]bool
	err := s.writeLocked(ctx, func(tx *sql.Tx) error {
		var attempts []push.Attempt
		for _, c := range live {
			attempts = append(attempts, c.w.b.Attempts...)
		}
		if err := s.insertAttempts(ctx, tx, attempts); err != nil {
			return err
		}
		for _, c := range live {
			if err := c.w.writeMarks(ctx, tx); err != nil {
				return err
			}
		}
		var err error
		if deleted, err = s.deleteLeased(ctx, tx, live); err != nil {
			return err
		}
		for _, c := range live {
			if !deleted[c.l.TaskID] {
				if err := s.releaseLease(ctx, tx, c.l); err != nil {
					return err
				}
			}
		}
		return nil
	})
	for _, c := range live {
		switch {
		case err != nil:
			c.done <- s.completeAlone(c)
		case !deleted[c.l.TaskID]:
			c.done <- ErrLeaseLost
		default:
			c.done <- nil
		}
	}
}

// deleteLeased deletes the one-off tasks the completions lease, each
// fenced as completeOneOffSQL fences one, and returns the ids it deleted.
// The id list lets either database find the rows by primary key before it
// checks the fences.
func (s *Store) deleteLeased(ctx context.Context, tx *sql.Tx, cs []*completion) (map[int64]bool, error) {
	ids := strings.Repeat("?, ", len(cs)-1) + "?"
	fences := strings.Repeat("(id = ? AND lease_until = ? AND next_send_at = ?) OR ", len(cs)-1) +
		"(id = ? AND lease_until = ? AND next_send_at = ?)"
	args := make([]any, 0, 4*len(cs))
	for _, c := range cs {
		args = append(args, c.l.TaskID)
	}
	for _, c := range cs {
		args = append(args, c.l.TaskID, millis(c.l.Until), millis(c.l.Occurrence))
	}
	rows, err := tx.QueryContext(ctx, `DELETE FROM tasks WHERE id IN (`+ids+`) AND (`+fences+`) RETURNING id`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	deleted := make(map[int64]bool, len(cs))
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		deleted[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("delete completed tasks: %w", err)
	}
	return deleted, nil
}
