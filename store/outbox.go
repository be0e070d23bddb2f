package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"amsg/push"
)

// The outbox is the ledger of every push amsg sends: a row per (user,
// messageId), written before the push goes out, marked delivered once a
// push service took it, acknowledged by the client that received it. A
// client that was offline pages through its unacknowledged rows with an id
// cursor. AUTOINCREMENT keeps ids from being reused after cleanup deletes the
// newest rows, so a cursor never skips a new row. The acked_at index and the
// created_at range (timeorder.go) keep CleanupOutbox cheap enough to run on
// every scheduler tick.

// Bounds of the outbox, the standard's.
const (
	// DefaultOutboxPage and MaxOutboxPage are the page sizes of
	// UnackedOutbox.
	DefaultOutboxPage = 50
	MaxOutboxPage     = 100
	// MaxOutboxIDs bounds the message ids of one AckOutbox call, and those
	// one RecordDeliveries records or marks.
	MaxOutboxIDs = 200
	// maxOutboxFieldBytes bounds messageId, taskUuid and sessionId; amsg's
	// own are well under 100 bytes.
	maxOutboxFieldBytes = 1024
)

// ErrInvalidOutbox reports outbox input the store cannot keep or look up.
var ErrInvalidOutbox = errors.New("store: invalid outbox input")

// OutboxMessage is one finalized push as the outbox keeps it; the type
// lives in push so the courier shares it without importing the store.
type OutboxMessage = push.OutboxMessage

// NewOutboxMessage encodes p and lifts its identity fields
// (push.NewOutboxMessage).
var NewOutboxMessage = push.NewOutboxMessage

// OutboxEntry is a stored outbox row (push.OutboxEntry).
type OutboxEntry = push.OutboxEntry

// OutboxPage is one page of a user's unacknowledged pushes.
type OutboxPage struct {
	Entries []OutboxEntry
	// Cursor is the largest id the page covered (rows that did not decrypt
	// included), or the since it was asked with; pass it as the next since.
	Cursor int64
	// HasMore reports a full page: there may be more after Cursor.
	HasMore bool
}

// AppendOutbox records a batch of finalized pushes for userID before they are
// sent, with their queued events, in one transaction. A messageId already
// recorded for the user is a retry of the same push: its payload and
// created_at are replaced and it counts as undelivered again, unless the
// client already acknowledged it, in which case the row is left as it is.
// Messages are checked first; an invalid one fails the batch with
// ErrInvalidOutbox and nothing is written.
// Concurrent appends are written together (batches.go).
func (s *Store) AppendOutbox(ctx context.Context, userID string, messages []OutboxMessage) error {
	sealed, err := s.sealOutbox(userID, messages)
	if err != nil {
		return err
	}
	at := s.now()
	return s.appends.write(ctx, outboxAppend{userID: userID, messages: messages, sealed: sealed, now: millis(at),
		events: queuedEvents(userID, messages, at)})
}

// outboxAppend is one AppendOutbox, checked and sealed.
type outboxAppend struct {
	userID   string
	messages []OutboxMessage
	sealed   [][]byte
	now      int64
	events   []MessageEvent // the messages' queued events
}

func (s *Store) newAppends() *writeBatch[outboxAppend] {
	return newWriteBatch(s, s.appendMany, s.appendOne,
		func(_ outboxAppend, err error) error { return fmt.Errorf("store: append outbox: %w", err) })
}

// appendOne writes a in tx. Each upsert locks its own row (ON CONFLICT):
// READ COMMITTED, group committed with other deliveries' writes.
func (s *Store) appendOne(ctx context.Context, tx *sql.Tx, a outboxAppend) (outcome, err error) {
	for i, m := range a.messages {
		if err := s.upsertOutbox(ctx, tx, a.userID, m, a.sealed[i], a.now, sql.NullInt64{}); err != nil {
			return nil, err
		}
	}
	return nil, s.insertMessageEvents(ctx, tx, a.events, fromMillis(a.now))
}

// errRepeatedInBatch: two writes of a batch name the same outbox message,
// which one multi-row upsert may not change twice; the batch is written
// write by write instead.
var errRepeatedInBatch = errors.New("a message appears twice in one batch")

// appendMany writes the appends in multi-row upserts.
func (s *Store) appendMany(ctx context.Context, tx *sql.Tx, as []outboxAppend) ([]error, error) {
	var rows [][]any
	var events []MessageEvent
	for _, a := range as {
		for i, m := range a.messages {
			rows = append(rows, upsertOutboxArgs(a.userID, m, a.sealed[i], a.now, sql.NullInt64{}))
		}
		events = append(events, a.events...)
	}
	if err := s.upsertOutboxRows(ctx, tx, rows); err != nil {
		return nil, err
	}
	return make([]error, len(as)), s.insertMessageEvents(ctx, tx, events, time.Time{}) // queued events carry their time
}

// upsertOutboxRows runs upsertOutbox for rows (upsertOutboxArgs), many
// rows to a statement. Rows naming the same message twice fail with
// errRepeatedInBatch before anything is written: one statement may not
// change a row twice.
func (s *Store) upsertOutboxRows(ctx context.Context, tx *sql.Tx, rows [][]any) error {
	if err := checkOutboxBatch(rows); err != nil {
		return err
	}
	for len(rows) > 0 {
		chunk := rows[:s.chunk(len(rows), maxOutboxRows)]
		rows = rows[len(chunk):]
		query, args, err := s.batchStatement(outboxColumnTypes, upsertOutboxArraysSQL, outboxStatements.text, outboxArgs(chunk))
		if err != nil {
			return err
		}
		if _, err := s.txExec(ctx, tx, query, args...); err != nil {
			return err
		}
	}
	return nil
}

// outboxArgs are the values of rows, outbox rows in outboxColumnTypes, one
// row after the other.
func outboxArgs(rows [][]any) []any {
	args := make([]any, 0, len(rows)*len(outboxColumnTypes))
	for _, r := range rows {
		args = append(args, r...)
	}
	return args
}

// checkOutboxBatch refuses rows of one upsert that name one message twice
// (errRepeatedInBatch).
func checkOutboxBatch(rows [][]any) error {
	if len(rows) < 2 {
		return nil
	}
	type key struct{ user, id any }
	seen := make(map[key]bool, len(rows))
	for _, r := range rows {
		k := key{r[0], r[1]}
		if seen[k] {
			return errRepeatedInBatch
		}
		seen[k] = true
	}
	return nil
}

// maxOutboxRows bounds the rows of one multi-row upsert (9 arguments each).
const maxOutboxRows = 100

// sealOutbox checks messages and seals their payloads with userID's key,
// before a write: an invalid message is ErrInvalidOutbox.
func (s *Store) sealOutbox(userID string, messages []OutboxMessage) ([][]byte, error) {
	for i, m := range messages {
		if err := checkOutboxMessage(m); err != nil {
			return nil, fmt.Errorf("%w: message %d: %w", ErrInvalidOutbox, i, err)
		}
	}
	if len(messages) == 0 {
		return nil, nil
	}
	key := s.userKey(userID)
	sealed := make([][]byte, len(messages))
	for i, m := range messages {
		sealed[i] = key.SealAtRestBytes(m.Payload)
	}
	return sealed, nil
}

// upsertOutbox writes one message of userID, sealed, created now and
// delivered at deliveredAt (NULL: not yet). A messageId already recorded
// for the user is a retry of the same push: its payload, created_at and
// delivered_at are replaced, unless the client already acknowledged it.
func (s *Store) upsertOutbox(ctx context.Context, tx *sql.Tx, userID string, m OutboxMessage, sealed []byte, now int64, deliveredAt sql.NullInt64) error {
	_, err := s.txExec(ctx, tx, upsertOutboxSQL, upsertOutboxArgs(userID, m, sealed, now, deliveredAt)...)
	return err
}

func upsertOutboxArgs(userID string, m OutboxMessage, sealed []byte, now int64, deliveredAt sql.NullInt64) []any {
	return []any{userID, m.MessageID, nullString(m.TaskUUID), nullString(m.SessionID),
		nullInt(m.MessageIndex), nullInt(m.TotalMessages), sealed, now, deliveredAt}
}

// outboxStatements upsert outbox rows, many to a statement (chunks.go).
var outboxStatements = newRowStatements(func(rows int) string {
	return upsertOutboxHead + upsertOutboxRow + strings.Repeat(", "+upsertOutboxRow, rows-1) + upsertOutboxTail
})

// The outbox upsert, in parts so that appendMany can give it many rows.
const (
	upsertOutboxInto = `INSERT INTO message_outbox
		(user_id, message_id, task_uuid, session_id, message_index, total_messages, payload, created_at, delivered_at)`
	upsertOutboxHead = upsertOutboxInto + `
	VALUES `
	upsertOutboxRow  = `(?, ?, ?, ?, ?, ?, ?, ?, ?)`
	upsertOutboxTail = `
	ON CONFLICT (user_id, message_id) DO UPDATE SET
		payload = excluded.payload, created_at = excluded.created_at, delivered_at = excluded.delivered_at
	WHERE message_outbox.acked_at IS NULL`
)

var upsertOutboxSQL = preparedSQL(upsertOutboxHead + upsertOutboxRow + upsertOutboxTail)

func checkOutboxMessage(m OutboxMessage) error {
	switch {
	case strings.TrimSpace(m.MessageID) == "":
		return errors.New("messageId is blank")
	case len(m.MessageID) > maxOutboxFieldBytes || len(m.TaskUUID) > maxOutboxFieldBytes || len(m.SessionID) > maxOutboxFieldBytes:
		return fmt.Errorf("messageId, taskUuid or sessionId is over %d bytes", maxOutboxFieldBytes)
	case m.MessageIndex < 0 || m.TotalMessages < 0:
		return errors.New("messageIndex or totalMessages is negative")
	case len(m.Payload) > push.MaxDecodeBytes:
		return fmt.Errorf("payload is %d bytes, limit %d", len(m.Payload), push.MaxDecodeBytes)
	case !isJSONObject(m.Payload):
		return errors.New("payload is not a JSON object")
	}
	return nil
}

func isJSONObject(b []byte) bool {
	return json.Valid(b) && push.JSONKind(b) == '{'
}

// AckOutbox records that userID's client received these pushes, with an
// acknowledged event for each, and returns how many rows that changed: ids
// already acknowledged or never recorded count nothing, so a repeated ack
// returns 0 (and tells nothing again). Every id must be non-blank
// (JavaScript trim), else ErrInvalidOutbox.
func (s *Store) AckOutbox(ctx context.Context, userID string, messageIDs []string) (int, error) {
	for _, id := range messageIDs {
		if push.IsJSBlank(id) {
			return 0, fmt.Errorf("store: ack outbox: %w: a message id is blank", ErrInvalidOutbox)
		}
	}
	n, err := s.updateOutbox(ctx, `UPDATE message_outbox SET acked_at = ?
		WHERE user_id = ? AND acked_at IS NULL AND message_id IN (`+s.dialect.InJSONArray+`)
		RETURNING message_id`, userID, messageIDs)
	if err != nil {
		return 0, fmt.Errorf("store: ack outbox: %w", err)
	}
	return n, nil
}

// DeleteOutbox deletes userID's outbox rows with these message ids,
// acknowledged or not, and returns how many it deleted. Every id must be
// non-blank (ErrInvalidOutbox), at most MaxOutboxIDs of them.
func (s *Store) DeleteOutbox(ctx context.Context, userID string, messageIDs []string) (int, error) {
	for _, id := range messageIDs {
		if push.IsJSBlank(id) {
			return 0, fmt.Errorf("store: delete outbox: %w: a message id is blank", ErrInvalidOutbox)
		}
	}
	if len(messageIDs) > MaxOutboxIDs {
		return 0, fmt.Errorf("store: delete outbox: %w: %d message ids, limit %d", ErrInvalidOutbox, len(messageIDs), MaxOutboxIDs)
	}
	ids, err := json.Marshal(messageIDs)
	if err != nil {
		return 0, err
	}
	return s.execCount(ctx, "delete outbox", `DELETE FROM message_outbox WHERE user_id = ? AND message_id IN (`+s.dialect.InJSONArray+`)`, userID, string(ids))
}

// DeleteAllOutbox deletes every outbox row of userID and returns how many.
func (s *Store) DeleteAllOutbox(ctx context.Context, userID string) (int, error) {
	return s.execCount(ctx, "delete outbox", `DELETE FROM message_outbox WHERE user_id = ?`, userID)
}

// markOutboxDeliveredSQL marks one message delivered: now, userID, messageID.
var markOutboxDeliveredSQL = preparedSQL(`UPDATE message_outbox SET delivered_at = ? WHERE user_id = ? AND message_id = ?`)

// updateOutbox runs query, which returns the message id of each row it
// changes, with now, userID and messageIDs as a JSON array, appends an
// acknowledged event for each of those rows in the same write, and returns
// how many there were.
func (s *Store) updateOutbox(ctx context.Context, query, userID string, messageIDs []string) (int, error) {
	if len(messageIDs) > MaxOutboxIDs {
		return 0, fmt.Errorf("%w: %d message ids, limit %d", ErrInvalidOutbox, len(messageIDs), MaxOutboxIDs)
	}
	if len(messageIDs) == 0 {
		return 0, nil
	}
	ids, err := json.Marshal(messageIDs)
	if err != nil {
		return 0, err
	}
	var acked int
	err = s.write(ctx, func(tx *sql.Tx) error {
		now := s.now()
		events, err := s.ackedEvents(ctx, tx, query, now, userID, string(ids))
		acked = len(events)
		if err != nil {
			return err
		}
		return s.insertMessageEvents(ctx, tx, events, now)
	})
	return acked, err
}

// UnackedOutbox returns up to limit (1 to MaxOutboxPage) of userID's
// unacknowledged pushes with ids above since, oldest first. A row that does
// not decrypt is skipped (logged) but still moves the cursor, so one bad row
// never stalls a client's catch-up.
func (s *Store) UnackedOutbox(ctx context.Context, userID string, since int64, limit int) (OutboxPage, error) {
	if since < 0 || limit < 1 || limit > MaxOutboxPage {
		return OutboxPage{}, fmt.Errorf("store: unacked outbox: %w: since %d, limit %d", ErrInvalidOutbox, since, limit)
	}
	entries, fetched, last, err := s.readOutbox(ctx, userID,
		outboxColumns+`WHERE user_id = ? AND acked_at IS NULL AND id > ? ORDER BY id LIMIT ?`, userID, since, limit)
	if err != nil {
		return OutboxPage{}, fmt.Errorf("store: unacked outbox: %w", err)
	}
	if entries == nil {
		entries = []OutboxEntry{} // an empty page: [], not nil
	}
	return OutboxPage{Entries: entries, Cursor: max(since, last), HasMore: fetched == limit}, nil
}

// outboxSealedTextLength is the length a payload stored as bytes
// (iv||tag||ciphertext) had as the standard's hex(iv):hex(tag):hex(ct)
// text: what the inventory reports as its size, as before the bytes.
const outboxSealedTextLength = `(2 * length(payload) + 2)`

// outboxColumns starts every outbox read.
const outboxColumns = `SELECT id, message_id, task_uuid, session_id, message_index, total_messages,
		payload, created_at, delivered_at
	FROM message_outbox `

// BurstOutbox returns the pushes of userID whose message ids start with
// idPrefix, oldest first, whether delivered or acknowledged or not: the
// burst of one scheduled occurrence, whose ids share a prefix. The
// scheduler resends a failed occurrence's burst from here, so a retry
// repeats the first answer rather than asking the LLM for a new one.
func (s *Store) BurstOutbox(ctx context.Context, userID, idPrefix string) ([]OutboxEntry, error) {
	end, err := prefixEnd(idPrefix)
	if err != nil {
		return nil, fmt.Errorf("store: burst outbox: %w", err)
	}
	entries, _, _, err := s.readOutbox(ctx, userID, outboxColumns+`WHERE `+s.idPrefixRange()+` ORDER BY id`, userID, idPrefix, end)
	if err != nil {
		return nil, fmt.Errorf("store: burst outbox: %w", err)
	}
	return entries, nil
}

// idPrefixRange selects the rows of one user (the first argument) whose
// message ids lie in [second, third): those with a prefix (prefixEnd), on
// the (user_id, message_id) index.
func (s *Store) idPrefixRange() string {
	id := "message_id" + s.dialect.ByteOrder
	return `user_id = ? AND ` + id + ` >= ? AND ` + id + ` < ?`
}

// prefixEnd is the least string above every string that starts with
// prefix, which must be printable ASCII.
func prefixEnd(prefix string) (string, error) {
	if prefix == "" || len(prefix) > maxOutboxFieldBytes {
		return "", fmt.Errorf("%w: a message id prefix must be 1 to %d bytes", ErrInvalidOutbox, maxOutboxFieldBytes)
	}
	for i := range len(prefix) {
		if prefix[i] < ' ' || prefix[i] >= '~' {
			return "", fmt.Errorf("%w: a message id prefix must be printable ASCII below '~'", ErrInvalidOutbox)
		}
	}
	return prefix[:len(prefix)-1] + string(prefix[len(prefix)-1]+1), nil
}

// readOutbox reads the outbox rows of userID that query (outboxColumns and
// a WHERE … ORDER BY id clause) selects and returns those whose payload opens, the count of rows read and the
// id of the last row read (0 for none), both counting the rows that were
// skipped because they do not decrypt (logged).
func (s *Store) readOutbox(ctx context.Context, userID, query string, args ...any) (entries []OutboxEntry, fetched int, last int64, err error) {
	rows, err := s.readQuery(ctx, query, args...)
	if err != nil {
		return nil, 0, 0, err
	}
	defer rows.Close()
	key := s.userKey(userID)
	for rows.Next() {
		var e OutboxEntry
		var taskUUID, sessionID sql.NullString
		var index, total, delivered sql.NullInt64
		var sealed []byte
		var created int64
		if err := rows.Scan(&e.ID, &e.MessageID, &taskUUID, &sessionID, &index, &total, &sealed, &created, &delivered); err != nil {
			return nil, 0, 0, err
		}
		fetched, last = fetched+1, e.ID
		payload, err := key.OpenAtRestBytes(sealed)
		if err == nil && !isJSONObject(payload) {
			err = errors.New("payload is not a JSON object")
		}
		if err != nil {
			s.log.Warn("store: skipping an outbox row that does not decrypt", "userId", userID, "outboxId", e.ID, "err", err)
			continue
		}
		e.TaskUUID, e.SessionID = taskUUID.String, sessionID.String
		e.MessageIndex, e.TotalMessages = int(index.Int64), int(total.Int64)
		e.Payload = payload
		e.CreatedAt = fromMillis(created)
		if delivered.Valid {
			e.DeliveredAt = fromMillis(delivered.Int64)
		}
		entries = append(entries, e)
	}
	return entries, fetched, last, rows.Err()
}

// DiscardUndeliveredOutbox deletes the pushes of a task that no push service
// has accepted and no client acknowledged, and returns how many. Call it when
// a task is cancelled or superseded mid-burst, so a client catching up later
// does not receive the rest of a task the user cancelled; what already went
// out stays for the client to acknowledge.
func (s *Store) DiscardUndeliveredOutbox(ctx context.Context, userID, taskUUID string) (int, error) {
	return s.execCount(ctx, "discard undelivered outbox", `DELETE FROM message_outbox
		WHERE user_id = ? AND task_uuid = ? AND delivered_at IS NULL AND acked_at IS NULL`, userID, taskUUID)
}

// DiscardUndeliveredBurst deletes the pushes of userID whose message ids
// start with idPrefix (BurstOutbox) that no push service accepted and no
// client acknowledged, and returns how many. The scheduler calls it when an
// occurrence failed before any of its burst was delivered, so the retry
// builds the burst afresh.
func (s *Store) DiscardUndeliveredBurst(ctx context.Context, userID, idPrefix string) (int, error) {
	end, err := prefixEnd(idPrefix)
	if err != nil {
		return 0, fmt.Errorf("store: discard undelivered burst: %w", err)
	}
	return s.execCount(ctx, "discard undelivered burst", `DELETE FROM message_outbox
		WHERE `+s.idPrefixRange()+` AND delivered_at IS NULL AND acked_at IS NULL`, userID, idPrefix, end)
}

// CleanupOutbox applies the retention (Config.OutboxAckedMaxAge,
// Config.OutboxMaxAge, Config.OutboxMaxRowsPerUser): it deletes rows
// acknowledged longer ago than the first and any row created longer ago
// than the second (a push service keeps a push four weeks at most), then
// each user's rows over the cap, delivered or acknowledged ones first,
// oldest first, each with its message's events, and returns how many rows.
// The housekeeping calls it.
func (s *Store) CleanupOutbox(ctx context.Context) (int, error) {
	now := s.now()
	cutoff := millis(now.Add(-s.outboxMaxAge))
	r, err := s.rowsBefore(ctx, outboxByCreation, cutoff)
	if err != nil {
		return 0, fmt.Errorf("store: cleanup outbox: %w", err)
	}
	aged, err := s.deleteOutboxRows(ctx, "cleanup outbox", agedOutboxWhere(r),
		append(append([]any{millis(now.Add(-s.outboxAckedMaxAge))}, r.args()...), cutoff)...)
	if err != nil {
		return aged, err
	}
	capped, err := s.deleteOutboxRows(ctx, "cap outbox", cappedOutboxSQL, s.outboxMaxRows, s.outboxMaxRows)
	return aged + capped, err
}

// agedOutboxWhere selects the outbox rows acknowledged before its first
// argument or, in r, created before its second.
func agedOutboxWhere(r rowRange) string {
	return `acked_at < ? OR (` + r.where("message_outbox") + `created_at < ?)`
}

// cappedOutboxSQL selects each user's outbox rows past the first ? kept:
// undelivered ones before the rest, newest first (issue 22: with no cap per
// user the outbox grew 21 MiB a minute under steady load).
const cappedOutboxSQL = `id IN (
	SELECT id FROM (
		SELECT id, ROW_NUMBER() OVER (PARTITION BY user_id
			ORDER BY CASE WHEN delivered_at IS NULL AND acked_at IS NULL THEN 0 ELSE 1 END, id DESC) AS kept
		FROM message_outbox WHERE user_id IN (SELECT user_id FROM message_outbox GROUP BY user_id HAVING count(*) > ?)
	) ranked WHERE kept > ?)`

// nullString stores "" as NULL, as the standard's optional columns are.
func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// nullInt stores 0 as NULL.
func nullInt(n int) sql.NullInt64 { return sql.NullInt64{Int64: int64(n), Valid: n != 0} }
