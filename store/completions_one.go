package store

import (
	"context"
	"database/sql"
	"time"

	"amsg/push"
)

// On PostgreSQL a batch of completions is one statement where it can be
// (issue 24): its attempts, outbox rows and events are data-modifying WITH
// queries of the fenced delete (completeInOneSQL), so the batch costs one
// round trip and one executor start where it cost four. Each statement
// cost amsg a round trip through database/sql and pgx (a write, a wait
// for the answer, a wake-up) and PostgreSQL a Bind, an Execute and a
// portal. PostgreSQL runs every data-modifying WITH query once and to the
// end whether the main statement reads it or not, all four on one
// snapshot: none of the four reads what another writes (the delete reads
// tasks, the others write other tables), so the result is that of the four
// statements in turn.

// completeInOneSQL is the statement of completeInOne; its arguments are
// the arrays of the attempts, the outbox rows, the events, the ids and the
// fences, in that order.
var completeInOneSQL = `WITH attempts AS (` + insertAttemptArraysSQL + `),
	outbox AS (` + upsertOutboxArraysSQL + `),
	events AS (` + insertEventArraysSQL + `)
	` + deleteLeasedArraysSQL

// completeInOne writes what completeApart writes for cs in one statement
// and returns the ids of the tasks it deleted; nil (and no error) where
// it cannot: a dialect without array parameters, a completion that marks
// outbox messages or deletes devices (those statements come between), or
// a part over its statements' bound of rows.
func (s *Store) completeInOne(ctx context.Context, tx *sql.Tx, cs []completion, attempts []push.Attempt, records [][]any,
	events []MessageEvent) (map[int64]bool, error) {
	if !s.dialect.ArrayParams || len(attempts) > maxAttemptRows || len(records) > maxOutboxRows || len(cs) > maxWriteBatch {
		return nil, nil
	}
	for _, c := range cs {
		if len(c.w.b.Delivered) > 0 || len(c.w.b.Gone) > 0 {
			return nil, nil
		}
	}
	rows := eventRows(events, time.Time{}) // each carries its time, as in completeApart
	if len(rows) > maxEventsPerStatement {
		return nil, nil
	}
	if err := checkOutboxBatch(records); err != nil {
		return nil, err
	}
	args := make([]any, 0, len(attemptColumnTypes)+len(outboxColumnTypes)+len(eventColumnTypes)+1+len(fenceColumnTypes))
	for _, part := range []struct {
		types  columnTypes
		values []any
	}{
		{attemptColumnTypes, s.attemptArgs(attempts)},
		{outboxColumnTypes, outboxArgs(records)},
		{eventColumnTypes, eventValues(rows)},
	} {
		columns, err := part.types.arrays(part.values)
		if err != nil {
			return nil, err
		}
		args = append(args, columns...)
	}
	deleteArgs, err := deleteLeasedArrays(cs)
	if err != nil {
		return nil, err
	}
	args = append(args, deleteArgs...)
	deleted := make(map[int64]bool, len(cs))
	return deleted, s.scanDeleted(ctx, tx, deleted, completeInOneSQL, args)
}
