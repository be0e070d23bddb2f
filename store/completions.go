package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"amsg/push"
)

// One-off occurrences are completed in batches (batches.go): each batch is
// one write whose delivery-log rows go in one multi-row insert and whose
// fenced deletes are one statement.

// completion is one CompleteTask of a one-off occurrence.
type completion struct {
	l Lease
	w *bookkeepingWrite
}

func (s *Store) newCompletions() *writeBatch[completion] {
	return newWriteBatch(s, s.completeMany, s.completeOne, wrapTaskError)
}

// completeOne completes c in tx, as CompleteTask did before completions
// were batched: ErrLeaseLost is its outcome when its fence failed.
func (s *Store) completeOne(ctx context.Context, tx *sql.Tx, c completion) (outcome, err error) {
	lost, err := s.finishIn(ctx, tx, c.l, func(tx *sql.Tx) error { return c.w.write(ctx, tx) }, completeOneOffSQL)
	if lost {
		outcome = ErrLeaseLost
	}
	return outcome, err
}

// completeMany completes cs in tx: their attempts and outbox records in
// multi-row statements, their outbox and device marks, the tasks deleted under their fences in
// one statement, and the lease released of each whose fence failed
// (ErrLeaseLost).
func (s *Store) completeMany(ctx context.Context, tx *sql.Tx, cs []completion) ([]error, error) {
	var attempts []push.Attempt
	var records [][]any
	var events []MessageEvent
	for _, c := range cs {
		attempts = append(attempts, c.w.b.Attempts...)
		records = c.w.recordRows(records)
		events = append(events, c.w.events...) // each carries its time (deliveryEvents)
	}
	deleted, err := s.completeInOne(ctx, tx, cs, attempts, records, events) // completions_one.go
	if deleted == nil && err == nil {
		deleted, err = s.completeApart(ctx, tx, cs, attempts, records, events)
	}
	if err != nil {
		return nil, err
	}
	outcomes := make([]error, len(cs))
	for i, c := range cs {
		if deleted[c.l.TaskID] {
			continue
		}
		if err := s.releaseLease(ctx, tx, c.l); err != nil {
			return nil, err
		}
		outcomes[i] = ErrLeaseLost
	}
	return outcomes, nil
}

// completeApart writes completeMany's statements one after the other and
// returns the ids of the tasks it deleted.
func (s *Store) completeApart(ctx context.Context, tx *sql.Tx, cs []completion, attempts []push.Attempt, records [][]any,
	events []MessageEvent) (map[int64]bool, error) {
	if err := s.insertAttempts(ctx, tx, attempts); err != nil {
		return nil, err
	}
	if err := s.upsertOutboxRows(ctx, tx, records); err != nil {
		return nil, err
	}
	for _, c := range cs {
		if err := c.w.writeMarks(ctx, tx); err != nil {
			return nil, err
		}
	}
	if err := s.insertMessageEvents(ctx, tx, events, time.Time{}); err != nil {
		return nil, err
	}
	return s.deleteLeased(ctx, tx, cs)
}

// deleteLeased deletes the one-off tasks the completions lease, each
// fenced as completeOneOffSQL fences one, and returns the ids it deleted:
// in one statement where the driver binds arrays, else in chunks
// (deleteLeasedStatements).
func (s *Store) deleteLeased(ctx context.Context, tx *sql.Tx, cs []completion) (map[int64]bool, error) {
	deleted := make(map[int64]bool, len(cs))
	for len(cs) > 0 {
		chunk := cs[:s.chunk(len(cs), len(cs))]
		cs = cs[len(chunk):]
		var query string
		var args []any
		if s.dialect.ArrayParams {
			var err error
			if args, err = deleteLeasedArrays(chunk); err != nil {
				return nil, err
			}
			query = deleteLeasedArraysSQL
		} else {
			args = make([]any, 0, 4*len(chunk))
			for _, c := range chunk {
				args = append(args, c.l.TaskID)
			}
			query, args = deleteLeasedStatements.text(len(chunk)), appendFences(args, chunk)
		}
		if err := s.scanDeleted(ctx, tx, deleted, query, args); err != nil {
			return nil, err
		}
	}
	return deleted, nil
}

// deleteLeasedArrays are deleteLeasedArraysSQL's arguments for cs: the
// tasks' ids, then their fences, as column arrays.
func deleteLeasedArrays(cs []completion) ([]any, error) {
	fences, err := fenceColumnTypes.arrays(appendFences(make([]any, 0, len(fenceColumnTypes)*len(cs)), cs))
	if err != nil {
		return nil, err
	}
	return append([]any{fences[0]}, fences...), nil
}

// appendFences appends the fence of each of cs (fenceColumnTypes).
func appendFences(args []any, cs []completion) []any {
	for _, c := range cs {
		args = append(args, c.l.TaskID, millis(c.l.Until), millis(c.l.Occurrence))
	}
	return args
}

// deleteLeasedStatements delete rows fenced one-off tasks. The id list lets
// either database find the rows by primary key before it checks the fences.
var deleteLeasedStatements = newRowStatements(func(rows int) string {
	return `DELETE FROM tasks WHERE id IN (` + strings.Repeat("?, ", rows-1) + "?" + `) AND (` +
		strings.Repeat("(id = ? AND lease_until = ? AND next_send_at = ?) OR ", rows-1) +
		"(id = ? AND lease_until = ? AND next_send_at = ?)" + `) RETURNING id`
})

// scanDeleted runs query, a delete of deleteLeased, and adds the ids it
// returns to deleted.
func (s *Store) scanDeleted(ctx context.Context, tx *sql.Tx, deleted map[int64]bool, query string, args []any) error {
	rows, err := s.txQuery(ctx, tx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return err
		}
		deleted[id] = true
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("delete completed tasks: %w", err)
	}
	return nil
}
