package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"time"
)

// How message events are stored (issue 24). A delivered push tells three
// events, queued, sent and accepted, and three rows cost three entries in
// the table and in message_events_message: the costliest statement of a
// push's bookkeeping. So a run of events that is one device's delivery of
// one message (queued, then sent and accepted with the attempt's time; or
// sent and accepted alone) is one row of type deliveredRow: at and
// device_id and detail are the accepted event's, queued_at the queued
// event's time (NULL for a row without it). Readers expand a row to its
// events (expand), so every reader's output is what the rows of each event
// gave.
//
// Seqs: a row of n events has the n Seqs up to its id, the earlier ones
// left unused by every other row. On SQLite the insert gives each row its
// id from the table's AUTOINCREMENT counter plus the Seqs of the rows
// before it in the statement (the one writer makes that safe), so Seqs stay
// dense; a row inserted with no id (a receipt) takes the next after the
// counter, past every reserved Seq. On PostgreSQL concurrent writers cannot
// share such a counter, so the identity counts in steps of eventSeqStride
// (eventRowsSchema): every row reserves the Seqs below its id, and a single
// event leaves two of them unused.

// deliveredRow is the stored type of a row that tells a delivery's sent and
// accepted events, and its queued event when queued_at is not NULL. No
// event has this type: checkMessageEvent refuses it.
const deliveredRow = "sent+accepted"

// eventSeqStride is how many Seqs each row reserves on PostgreSQL: the most
// events one row tells.
const eventSeqStride = 3

// eventsInRow is the SQL of how many events a row of message_events tells.
const eventsInRow = `CASE WHEN type = '` + deliveredRow + `' THEN CASE WHEN queued_at IS NULL THEN 2 ELSE 3 END ELSE 1 END`

// eventBytesInRow is the SQL of the bytes a row's events hold, counted as
// each event's row counted them before rows were shared (user
// inventories): its ids, type and detail; an event with no detail holds
// "{}". A queued and a sent event add len("queued{}") and len("sent{}").
const eventBytesInRow = `length(message_id) * (` + eventsInRow + `) + length(device_id) + length(detail) +
	CASE WHEN type = '` + deliveredRow + `' THEN CASE WHEN queued_at IS NULL THEN 6 ELSE 14 END + length('accepted') ELSE length(type) END`

// eventLatestInRow is the SQL of the time of a row's latest event.
const eventLatestInRow = `CASE WHEN queued_at > at THEN queued_at ELSE at END`

// eventSeqsPerRow is how many Seqs a row of a single event takes: one
// where the store numbers the rows (SQLite), eventSeqStride where the
// identity reserves them (PostgreSQL).
func (s *Store) eventSeqsPerRow() int64 {
	if s.dialect.Name == "sqlite" {
		return 1
	}
	return eventSeqStride
}

// eventRow is one row of message_events to insert: the events it tells
// (one, or a delivery's two or three) and its columns.
type eventRow struct {
	events                           int
	at                               int64
	userID, messageID, deviceID, typ string
	detail                           string
	queuedAt                         sql.NullInt64
}

// eventRows are the rows that store events (checked), in order, those
// with no time at now: a delivery's run of events in one row, every other
// event in one of its own.
func eventRows(events []MessageEvent, now time.Time) []eventRow {
	rows := make([]eventRow, 0, len(events))
	for len(events) > 0 {
		e := events[0]
		if n, ok := deliveryRun(events, now); ok {
			a := events[n-1]
			r := eventRow{events: n, at: millis(cmpTime(a.At, now)), userID: a.UserID, messageID: a.MessageID,
				deviceID: a.DeviceID, typ: deliveredRow, detail: detailText(a.Detail)}
			if n == 3 {
				r.queuedAt = sql.NullInt64{Int64: millis(cmpTime(e.At, now)), Valid: true}
			}
			rows, events = append(rows, r), events[n:]
			continue
		}
		rows = append(rows, eventRow{events: 1, at: millis(cmpTime(e.At, now)), userID: e.UserID, messageID: e.MessageID,
			deviceID: e.DeviceID, typ: e.Type, detail: detailText(e.Detail)})
		events = events[1:]
	}
	return rows
}

// deliveryRun reports how many of the first events one deliveredRow tells:
// queued, sent and accepted, or sent and accepted, of one user's message,
// with no device or detail before the accepted event, and sent at the
// accepted event's time. ok is false when they are not such a run.
func deliveryRun(events []MessageEvent, now time.Time) (n int, ok bool) {
	types := []string{EventSent, EventAccepted}
	if len(events) > 0 && events[0].Type == EventQueued {
		types = []string{EventQueued, EventSent, EventAccepted}
	}
	if len(events) < len(types) {
		return 0, false
	}
	run := events[:len(types)]
	last := run[len(run)-1]
	for i, e := range run {
		switch {
		case e.Type != types[i], e.UserID != last.UserID, e.MessageID != last.MessageID:
			return 0, false
		case i < len(run)-1 && (e.DeviceID != "" || detailText(e.Detail) != "{}"):
			return 0, false
		}
	}
	sent := run[len(run)-2]
	if millis(cmpTime(sent.At, now)) != millis(cmpTime(last.At, now)) {
		return 0, false
	}
	return len(run), true
}

// expand returns the events r tells, the last with Seq id, in Seq order.
func (r eventRow) expand(id int64) []MessageEvent {
	e := MessageEvent{Seq: id, At: fromMillis(r.at), UserID: r.userID, MessageID: r.messageID, DeviceID: r.deviceID, Type: r.typ}
	if r.detail != "{}" {
		e.Detail = json.RawMessage(r.detail)
	}
	if r.typ != deliveredRow {
		return []MessageEvent{e}
	}
	e.Type = EventAccepted
	sent := MessageEvent{Seq: id - 1, At: e.At, UserID: r.userID, MessageID: r.messageID, Type: EventSent}
	if !r.queuedAt.Valid {
		return []MessageEvent{sent, e}
	}
	queued := MessageEvent{Seq: id - 2, At: fromMillis(r.queuedAt.Int64), UserID: r.userID, MessageID: r.messageID, Type: EventQueued}
	return []MessageEvent{queued, sent, e}
}

// detailText is how an event's detail is stored: "{}" for none.
func detailText(detail json.RawMessage) string {
	if detail == nil || bytes.Equal(detail, []byte("{}")) {
		return "{}"
	}
	return string(detail)
}

// cmpTime is t, or now when t is zero.
func cmpTime(t, now time.Time) time.Time {
	if t.IsZero() {
		return now
	}
	return t
}

// eventStatements insert rows on SQLite, many to a statement (chunks.go),
// each row's id the AUTOINCREMENT counter plus its first argument: the
// Seqs of the statement's rows up to it; its outbox_id its message's
// outbox row's id, if it has one (eventsByOutbox).
var eventStatements = newRowStatements(func(rows int) string {
	const row = `(?, ?, ?, ?, ?, ?, ?, ?)`
	return `INSERT INTO message_events (id, at, user_id, message_id, device_id, type, detail, queued_at, outbox_id)
		SELECT c.seq + v.column1, v.column2, v.column3, v.column4, v.column5, v.column6, v.column7, v.column8,
			(SELECT o.id FROM message_outbox AS o WHERE o.user_id = v.column3 AND o.message_id = v.column4)
		FROM (SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'message_events'), 0) AS seq) AS c,
			(VALUES ` + strings.Repeat(row+", ", rows-1) + row + `) AS v`
})

// eventValues are the values of rows in eventColumnTypes, one row after
// the other.
func eventValues(rows []eventRow) []any {
	values := make([]any, 0, len(eventColumnTypes)*len(rows))
	for _, r := range rows {
		values = append(values, r.at, r.userID, r.messageID, r.deviceID, r.typ, r.detail, r.queuedAt)
	}
	return values
}

// insertEventRows writes rows in tx: where the identity reserves each
// row's Seqs (PostgreSQL) as column arrays (insertEventArraysSQL), else
// (SQLite) in eventStatements, which number them.
func (s *Store) insertEventRows(ctx context.Context, tx *sql.Tx, rows []eventRow) error {
	for len(rows) > 0 {
		batch := rows[:s.chunk(len(rows), maxEventsPerStatement)]
		rows = rows[len(batch):]
		var query string
		var args []any
		if s.eventSeqsPerRow() != 1 {
			columns, err := eventColumnTypes.arrays(eventValues(batch))
			if err != nil {
				return err
			}
			query, args = insertEventArraysSQL, columns
		} else {
			args = make([]any, 0, 8*len(batch))
			seqs := 0
			for _, r := range batch {
				seqs += r.events
				args = append(args, seqs, r.at, r.userID, r.messageID, r.deviceID, r.typ, r.detail, r.queuedAt)
			}
			query = eventStatements.text(len(batch))
		}
		if _, err := s.txExec(ctx, tx, query, args...); err != nil {
			return err
		}
	}
	return nil
}

// Events by outbox row (issue 24): an event of a message that has an
// outbox row when it is inserted carries that row's id in outbox_id (the
// insert looks it up: eventStatements, insertReceiptSQL), indexed by
// message_events_outbox; on PostgreSQL the delivery path's rows, inserted
// as arrays (insertEventArraysSQL, completeInOneSQL), carry none: there
// the lookup and the foreign key's lock of the outbox row cost a trickle's
// push about 20 µs more of PostgreSQL's CPU than the index entry saves;
// message_events_message holds only the events with none. Outbox ids grow
// with time, so a delivered push's row adds its entry at the end of that
// index, where a commit's pushes share a leaf, instead of one in a leaf of
// its own keyed by (user, random message id). The foreign key sets an
// outbox row's events' outbox_id to NULL when the row is deleted (by
// anything: DeleteOutbox, the retention, a user's deletion), so they go
// back to message_events_message: an event's outbox_id, when not NULL, is
// the outbox row of its own user and message. So one message's events are
// those of its outbox row and its events without one (MessageTimeline), and
// one user's those of the user's outbox rows and its events without one
// (userEventsSQL).

// userEventsWhere are the two parts of userID's event rows: those without
// an outbox row and those of its outbox rows. Each takes userID.
var userEventsWhere = [...]string{
	`user_id = ? AND outbox_id IS NULL`,
	`outbox_id IN (SELECT id FROM message_outbox WHERE user_id = ?)`,
}

// userEventsSQL selects cols of userID's event rows (userEventsWhere). Its
// arguments are userID twice.
func userEventsSQL(cols string) string {
	return `SELECT ` + cols + ` FROM message_events WHERE ` + userEventsWhere[0] + `
		UNION ALL SELECT ` + cols + ` FROM message_events WHERE ` + userEventsWhere[1]
}

// deleteUserEventsSQL delete userID's event rows (userEventsWhere), one
// argument each.
var deleteUserEventsSQL = []string{
	`DELETE FROM message_events WHERE ` + userEventsWhere[0],
	`DELETE FROM message_events WHERE ` + userEventsWhere[1],
}

// deleteUserEvents deletes userID's message events in tx and returns how
// many events they told.
func deleteUserEvents(ctx context.Context, tx *sql.Tx, userID string) (int, error) {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(sum(`+eventsInRow+`), 0) FROM (`+userEventsSQL(`type, queued_at`)+`) e`,
		userID, userID).Scan(&n); err != nil {
		return 0, err
	}
	return n, deleteUserEventRows(ctx, tx, userID)
}

// deleteUserEventRows deletes userID's message events in tx.
func deleteUserEventRows(ctx context.Context, tx *sql.Tx, userID string) error {
	for _, query := range deleteUserEventsSQL {
		if _, err := tx.ExecContext(ctx, query, userID); err != nil {
			return err
		}
	}
	return nil
}
