package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"amsg/push"
)

// The delivery log keeps one row per HTTP attempt to deliver one message to
// one device. Rows outlive the device (a 410 deletes it), so device_id is
// not a foreign key.

// maxAttemptErrorBytes bounds the error text kept per attempt; push
// services may answer with long bodies.
const maxAttemptErrorBytes = 1024

// RecordDeliveries writes what the delivery of one push did (b), in one
// transaction: the attempts go to the delivery log, the pushes sent before
// the outbox held them are recorded there, delivered, the messages of
// b.UserID a push service took are marked delivered (at most MaxOutboxIDs),
// the devices of b.UserID a push service reported gone are deleted, and the
// messages' events (deliveryEvents) are appended. The courier calls it once
// per push; the driver commits the calls of concurrent deliveries together
// (each statement keys or inserts its own rows, so READ COMMITTED suffices:
// writeLocked). CompleteTask writes the same with a
// scheduled occurrence's completion.
func (s *Store) RecordDeliveries(ctx context.Context, b push.Bookkeeping) error {
	w, err := s.prepareBookkeeping(b)
	if err == nil {
		err = s.writeLocked(ctx, func(tx *sql.Tx) error { return w.write(ctx, tx) })
	}
	if err != nil {
		return fmt.Errorf("store: record deliveries: %w", err)
	}
	return nil
}

// bookkeepingWrite is a push.Bookkeeping checked and sealed, ready to run
// in a transaction: the sealing happens on the caller's goroutine, not the
// writer's.
type bookkeepingWrite struct {
	s      *Store
	b      push.Bookkeeping
	sealed [][]byte // b.Record's payloads
	now    int64
	events []MessageEvent
}

func (s *Store) prepareBookkeeping(b push.Bookkeeping) (*bookkeepingWrite, error) {
	if len(b.Delivered) > MaxOutboxIDs || len(b.Record) > MaxOutboxIDs || len(b.Deferred) > MaxOutboxIDs {
		return nil, fmt.Errorf("%w: %d message ids, limit %d", ErrInvalidOutbox, max(len(b.Delivered), len(b.Record), len(b.Deferred)), MaxOutboxIDs)
	}
	sealed, err := s.sealOutbox(b.UserID, b.Record)
	if err != nil {
		return nil, err
	}
	now := s.now()
	return &bookkeepingWrite{s: s, b: b, sealed: sealed, now: millis(now), events: deliveryEvents(b, now)}, nil
}

func (w *bookkeepingWrite) write(ctx context.Context, tx *sql.Tx) error {
	if err := w.s.insertAttempts(ctx, tx, w.b.Attempts); err != nil {
		return err
	}
	for _, row := range w.recordRows(nil) {
		if _, err := w.s.txExec(ctx, tx, upsertOutboxSQL, row...); err != nil {
			return err
		}
	}
	if err := w.writeMarks(ctx, tx); err != nil {
		return err
	}
	return w.s.insertMessageEvents(ctx, tx, w.events, fromMillis(w.now))
}

// recordRows appends to rows the outbox rows of the pushes sent before the
// outbox held them (b.Record), delivered.
func (w *bookkeepingWrite) recordRows(rows [][]any) [][]any {
	for i, m := range w.b.Record {
		rows = append(rows, upsertOutboxArgs(w.b.UserID, m, w.sealed[i], w.now, sql.NullInt64{Int64: w.now, Valid: true}))
	}
	return rows
}

// writeMarks marks the outbox messages delivered and deletes the devices
// gone; the caller inserts the events (a batch of completions, all of
// theirs in one statement).
func (w *bookkeepingWrite) writeMarks(ctx context.Context, tx *sql.Tx) error {
	s, b := w.s, w.b
	for _, id := range b.Delivered {
		if _, err := s.txExec(ctx, tx, markOutboxDeliveredSQL, w.now, b.UserID, id); err != nil {
			return err
		}
	}
	for _, id := range b.Gone {
		res, err := s.txExec(ctx, tx, deleteDeviceSQL, b.UserID, id)
		if err != nil {
			return err
		}
		if err := s.recordDeviceGone(ctx, tx, res, b.UserID, id, w.now); err != nil {
			return err
		}
	}
	return nil
}

var insertAttemptSQL = preparedSQL(`INSERT INTO delivery_log
	(at, message_id, user_id, device_id, push_host, try, status, outcome, latency_ms, error)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)

// maxAttemptRows bounds the rows of one multi-row insert into the
// delivery log (10 arguments each, well under either dialect's limit).
const maxAttemptRows = 100

// insertAttempts inserts attempts into the delivery log, many rows to a
// statement: a statement's fixed cost (a round trip, on PostgreSQL the
// executor's start and the locks of the table and its indexes) is paid
// once for them.
func (s *Store) insertAttempts(ctx context.Context, tx *sql.Tx, attempts []push.Attempt) error {
	for len(attempts) > 0 {
		chunk := attempts[:s.chunk(len(attempts), maxAttemptRows)]
		attempts = attempts[len(chunk):]
		query, args, err := s.batchStatement(attemptColumnTypes, insertAttemptArraysSQL, attemptStatements.text, s.attemptArgs(chunk))
		if err != nil {
			return err
		}
		if _, err := s.txExec(ctx, tx, query, args...); err != nil {
			return err
		}
	}
	return nil
}

// attemptArgs are the values of attempts' rows, one row after the other.
func (s *Store) attemptArgs(attempts []push.Attempt) []any {
	args := make([]any, 0, 10*len(attempts))
	for _, a := range attempts {
		at := a.At
		if at.IsZero() {
			at = s.now()
		}
		args = append(args, millis(at), a.MessageID, a.UserID, a.DeviceID, a.PushHost, a.Try,
			a.Status, string(a.Outcome), a.Latency.Milliseconds(), truncateUTF8(a.Error, maxAttemptErrorBytes))
	}
	return args
}

// attemptStatements insert attempts, many rows to a statement (chunks.go).
var attemptStatements = newRowStatements(func(rows int) string {
	return insertAttemptSQL + strings.Repeat(", (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows-1)
})

// Attempts returns the logged attempts of one message, oldest first. No
// index serves it (attemptsUnindexedSchema): it reads the whole log, for
// tests and an operator's look, never a request's or a delivery's path.
func (s *Store) Attempts(ctx context.Context, messageID string) ([]push.Attempt, error) {
	return s.queryAttempts(ctx, s.reader, "attempts", `WHERE message_id = ? ORDER BY at, id`, messageID)
}

// queryAttempts reads in q the delivery log rows that where (a WHERE
// clause and its ORDER BY and LIMIT) selects; what names the caller in
// errors.
func (s *Store) queryAttempts(ctx context.Context, q querier, what, where string, args ...any) ([]push.Attempt, error) {
	rows, err := q.QueryContext(ctx, `SELECT at, message_id, user_id, device_id, push_host, try, status, outcome, latency_ms, error
		FROM delivery_log `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", what, err)
	}
	defer rows.Close()
	var attempts []push.Attempt
	for rows.Next() {
		var a push.Attempt
		var at, latency int64
		if err := rows.Scan(&at, &a.MessageID, &a.UserID, &a.DeviceID, &a.PushHost, &a.Try, &a.Status, &a.Outcome, &latency, &a.Error); err != nil {
			return nil, fmt.Errorf("store: %s: %w", what, err)
		}
		a.At, a.Latency = fromMillis(at), time.Duration(latency)*time.Millisecond
		attempts = append(attempts, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: %s: %w", what, err)
	}
	return attempts, nil
}

// PruneDeliveryLog deletes attempts older than Config.DeliveryLogMaxAge and
// the oldest beyond Config.DeliveryLogMaxRows, and returns how many it
// deleted. The server calls it periodically.
func (s *Store) PruneDeliveryLog(ctx context.Context) (int, error) {
	cutoff := millis(s.now().Add(-s.deliveryLogMaxAge))
	aged, err := s.rowsBefore(ctx, attemptsByTime, cutoff)
	if err != nil {
		return 0, fmt.Errorf("store: prune delivery log: %w", err)
	}
	var deleted int64
	err = s.write(ctx, func(tx *sql.Tx) error {
		for _, q := range []struct {
			query string
			args  []any
		}{
			{pruneAttemptsSQL(aged), append(aged.args(), cutoff)},
			{`DELETE FROM delivery_log WHERE id <= (SELECT id FROM delivery_log ORDER BY id DESC LIMIT 1 OFFSET ?)`, []any{int64(s.deliveryLogMaxRows)}},
		} {
			res, err := s.txExec(ctx, tx, q.query, q.args...)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			deleted += n
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: prune delivery log: %w", err)
	}
	return int(deleted), nil
}

// pruneAttemptsSQL deletes the attempts in r before its argument.
func pruneAttemptsSQL(r rowRange) string {
	return `DELETE FROM delivery_log WHERE ` + r.where("delivery_log") + `at < ?`
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
