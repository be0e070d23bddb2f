package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"amsg/push"
)

// Message events are the story of each message told outward (issue 25):
// an append-only row per thing that happened to a message (queued, sent,
// accepted, shown…) or to what sent it (a task failed, a device went
// away). MessageTimeline reads one message's story for its user and the
// operator; MessageEventsAfter reads every event in Seq order for
// consumers that follow the table (webhooks). Events on the delivery path
// are written inside the write that records the attempt, so they cost no
// commit of their own. A message's events go with its outbox row when the
// outbox's retention deletes it (CleanupOutbox), and live at most
// Config.OutboxMaxAge, bounded in number by Config.MessageEventsMaxRows.

// The types of a message's events.
const (
	EventQueued       = "queued"       // recorded in the outbox, about to be sent
	EventSent         = "sent"         // handed to a push service
	EventAccepted     = "accepted"     // a push service answered 201, for one device
	EventDeferred     = "deferred"     // held back: quiet hours, the daily limit
	EventFailed       = "failed"       // a push service refused it or could not be reached
	EventGone         = "gone"         // the device's subscription is gone (404, 410)
	EventShown        = "shown"        // the service worker showed it
	EventClicked      = "clicked"      // the user clicked it, or one of its actions
	EventDismissed    = "dismissed"    // the user closed it
	EventAcknowledged = "acknowledged" // the client acknowledged it in the outbox
)

// The types of events about what sends messages rather than one message.
const (
	EventTaskFailed       = "task.failed"
	EventInterruptDecided = "interrupt.decided"
	EventDeviceGone       = "device.gone"
)

// MessageEventTypes are every event type, messages' first.
var MessageEventTypes = []string{
	EventQueued, EventSent, EventAccepted, EventDeferred, EventFailed, EventGone,
	EventShown, EventClicked, EventDismissed, EventAcknowledged,
	EventTaskFailed, EventInterruptDecided, EventDeviceGone,
}

// Bounds of message events.
const (
	// MaxMessageEventsPage bounds one MessageEventsAfter read.
	MaxMessageEventsPage = 1000
	// MaxTimelineEvents bounds one message's timeline: the oldest are kept.
	MaxTimelineEvents = 500
	// MaxMessageEventDetailBytes bounds an event's detail.
	MaxMessageEventDetailBytes = 1024
	// DefaultMessageEventsMaxRows caps the table (Config): Prune deletes
	// the oldest beyond it, as it does the delivery log's.
	DefaultMessageEventsMaxRows = 1_000_000
)

// ErrInvalidMessageEvent reports an event the store cannot keep.
var ErrInvalidMessageEvent = errors.New("store: invalid message event")

// MessageEvent is one thing that happened to a message (or, for the
// task.*, interrupt.* and device.* types, around one).
type MessageEvent struct {
	// Seq orders every event of the store; AppendMessageEvents assigns it.
	Seq int64
	// At is when it happened; zero is the store's now.
	At        time.Time
	UserID    string
	MessageID string // "" for an event about no one message
	DeviceID  string // "" for an event about no one device
	Type      string // one of MessageEventTypes
	// Detail is a JSON object of the type's particulars (a push status, a
	// clicked action), at most MaxMessageEventDetailBytes; nil for none.
	Detail json.RawMessage
}

// AppendMessageEvents records events in one write, in order; an invalid
// one fails them all with ErrInvalidMessageEvent and nothing is written.
func (s *Store) AppendMessageEvents(ctx context.Context, events ...MessageEvent) error {
	if err := checkMessageEvents(events); err != nil {
		return fmt.Errorf("store: append message events: %w", err)
	}
	if len(events) == 0 {
		return nil
	}
	now := s.now()
	if err := s.write(ctx, func(tx *sql.Tx) error { return s.insertMessageEvents(ctx, tx, events, now) }); err != nil {
		return fmt.Errorf("store: append message events: %w", err)
	}
	return nil
}

func checkMessageEvents(events []MessageEvent) error {
	for i, e := range events {
		if err := checkMessageEvent(e); err != nil {
			return fmt.Errorf("%w: event %d: %w", ErrInvalidMessageEvent, i, err)
		}
	}
	return nil
}

func checkMessageEvent(e MessageEvent) error {
	switch {
	case !slices.Contains(MessageEventTypes, e.Type):
		return fmt.Errorf("unknown type %q", e.Type)
	case e.UserID == "":
		return errors.New("userId is empty")
	case len(e.UserID) > maxOutboxFieldBytes || len(e.MessageID) > maxOutboxFieldBytes || len(e.DeviceID) > maxOutboxFieldBytes:
		return fmt.Errorf("userId, messageId or deviceId is over %d bytes", maxOutboxFieldBytes)
	case len(e.Detail) > MaxMessageEventDetailBytes:
		return fmt.Errorf("detail is %d bytes, limit %d", len(e.Detail), MaxMessageEventDetailBytes)
	case e.Detail != nil && !isJSONObject(e.Detail):
		return errors.New("detail is not a JSON object")
	}
	return nil
}

// maxEventsPerStatement bounds the rows of one statement where the driver
// binds them as arrays (seven arguments each).
const maxEventsPerStatement = 128

// insertMessageEvents writes checked events in tx, those with no time at
// now: the part of a write that already records something else. A
// delivery's events share a row (events_rows.go).
func (s *Store) insertMessageEvents(ctx context.Context, tx *sql.Tx, events []MessageEvent, now time.Time) error {
	return s.insertEventRows(ctx, tx, eventRows(events, now))
}

// MessageEventsAfter returns up to limit (1 to MaxMessageEventsPage)
// events with Seq above afterSeq, in Seq order: how a consumer follows
// every event, keeping the last Seq it handled as its cursor. Seq is the
// order the rows were inserted in. On SQLite, with its one writer, that is
// also the order they commit in; on PostgreSQL writes run concurrently (in
// one instance and across several), so a row may commit after one with a
// higher Seq, and a consumer that must see every row re-reads behind its
// cursor (or skips a gap in Seq only once it is older than a write takes).
func (s *Store) MessageEventsAfter(ctx context.Context, afterSeq int64, limit int) ([]MessageEvent, error) {
	if afterSeq < 0 || limit < 1 || limit > MaxMessageEventsPage {
		return nil, fmt.Errorf("store: message events after: %w: after %d, limit %d", ErrInvalidMessageEvent, afterSeq, limit)
	}
	events, err := s.queryMessageEvents(ctx, "message events after", `WHERE id > ? ORDER BY id LIMIT ?`, afterSeq, limit)
	// A row's first events may be at or before afterSeq: its id is its last.
	for len(events) > 0 && events[0].Seq <= afterSeq {
		events = events[1:]
	}
	return events[:min(len(events), limit)], err
}

// MessageTimeline returns the events of userID's message messageID in the
// order they were recorded, at most MaxTimelineEvents of them (the
// oldest); none for a message the user never had. They are those of its
// outbox row and those without one (events_rows.go).
func (s *Store) MessageTimeline(ctx context.Context, userID, messageID string) ([]MessageEvent, error) {
	events, err := s.queryMessageEvents(ctx, "message timeline", timelineSQL, userID, messageID, userID, messageID, MaxTimelineEvents)
	return events[:min(len(events), MaxTimelineEvents)], err
}

// eventColumns are the columns queryMessageEvents reads.
const eventColumns = `id, at, user_id, message_id, device_id, type, detail, queued_at`

// timelineSQL selects the rows of a user's message (the first two
// arguments, then again) after queryMessageEvents' SELECT: those of its
// outbox row and those without one, the oldest of them up to the limit
// (the fifth).
const timelineSQL = `WHERE outbox_id = (SELECT id FROM message_outbox WHERE user_id = ? AND message_id = ?)
	UNION ALL SELECT ` + eventColumns + ` FROM message_events WHERE user_id = ? AND message_id = ? AND outbox_id IS NULL
	ORDER BY id LIMIT ?`

// queryMessageEvents reads the events of the rows that where (a WHERE
// clause with its ORDER BY and LIMIT) selects; what names the caller in
// errors. It returns no events with an error.
func (s *Store) queryMessageEvents(ctx context.Context, what, where string, args ...any) ([]MessageEvent, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT `+eventColumns+` FROM message_events `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", what, err)
	}
	defer rows.Close()
	events := []MessageEvent{}
	for rows.Next() {
		var r eventRow
		var id int64
		if err := rows.Scan(&id, &r.at, &r.userID, &r.messageID, &r.deviceID, &r.typ, &r.detail, &r.queuedAt); err != nil {
			return nil, fmt.Errorf("store: %s: %w", what, err)
		}
		events = append(events, r.expand(id)...)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: %s: %w", what, err)
	}
	return events, nil
}

// PruneMessageEvents deletes events older than the outbox keeps a message
// (Config.OutboxMaxAge) and the oldest beyond Config.MessageEventsMaxRows, and
// returns how many rows (a delivery's row tells up to three events).
func (s *Store) PruneMessageEvents(ctx context.Context) (int, error) {
	cutoff := millis(s.now().Add(-s.outboxMaxAge))
	r, err := s.rowsBefore(ctx, eventsByTime, cutoff)
	if err != nil {
		return 0, fmt.Errorf("store: prune message events: %w", err)
	}
	aged, err := s.execCount(ctx, "prune message events", pruneEventsSQL(r),
		append(r.args(), cutoff, cutoff)...)
	if err != nil {
		return aged, err
	}
	// Seq only grows: the newest cap rows' Seqs bound the rows kept without
	// the scan an OFFSET of a million rows would cost every minute (gaps
	// left by deleted users keep fewer, never more; so does a row whose
	// first events are past the bound and its last not). The first bound
	// is the primary key's range, the second a row's first Seq.
	keep := int64(s.messageEventsMaxRows()) * s.eventSeqsPerRow()
	capped, err := s.execCount(ctx, "cap message events",
		`DELETE FROM message_events WHERE id <= (SELECT max(id) FROM message_events) - ?
			AND id - (`+eventsInRow+`) < (SELECT max(id) FROM message_events) - ?`, keep-(eventSeqStride-1), keep)
	return aged + capped, err
}

// pruneEventsSQL deletes the rows in r whose events are all before its
// argument, given twice.
func pruneEventsSQL(r rowRange) string {
	return `DELETE FROM message_events WHERE ` + r.where("message_events") + `at < ? AND (queued_at IS NULL OR queued_at < ?)`
}

// messageEventsMaxRows is Config.MessageEventsMaxRows or its default.
func (s *Store) messageEventsMaxRows() int {
	if s.messageEventsCap > 0 {
		return s.messageEventsCap
	}
	return DefaultMessageEventsMaxRows
}

// deliveryEvents tell what one push's delivery (b) did to its messages,
// stamped now where an attempt has no time: queued for a push recorded
// only now, sent once the push went to any push service, then per attempt
// accepted, gone or failed with the push service's status (outcome "retry"
// when another try follows), and deferred for a push held back. A delivery
// without a user (an /instant request's own subscription) has no story.
func deliveryEvents(b push.Bookkeeping, now time.Time) []MessageEvent {
	if b.UserID == "" {
		return nil
	}
	events := make([]MessageEvent, 0, len(b.Record)+len(b.Attempts)+len(b.Deferred)+1)
	for _, m := range b.Record {
		events = append(events, MessageEvent{At: now, UserID: b.UserID, MessageID: m.MessageID, Type: EventQueued})
	}
	var sent []string // a push's attempts share its one message id: no map needed
	for _, a := range b.Attempts {
		if !slices.Contains(sent, a.MessageID) {
			sent = append(sent, a.MessageID)
			events = append(events, MessageEvent{At: cmp.Or(a.At, now), UserID: b.UserID, MessageID: a.MessageID, Type: EventSent})
		}
		events = append(events, attemptEvent(b.UserID, a, now))
	}
	for _, id := range b.Deferred {
		events = append(events, MessageEvent{At: now, UserID: b.UserID, MessageID: id, Type: EventDeferred, Detail: deferredDailyLimit})
	}
	return events
}

// deferredDailyLimit is the detail of a push the daily limit held back.
var deferredDailyLimit = json.RawMessage(`{"reason":"daily_limit"}`)

// attemptEvent is what one attempt tells: accepted, gone or failed, with
// the push service's host and status.
func attemptEvent(userID string, a push.Attempt, now time.Time) MessageEvent {
	e := MessageEvent{At: cmp.Or(a.At, now), UserID: userID, MessageID: a.MessageID, Type: EventFailed}
	switch a.Outcome {
	case push.OutcomeDelivered:
		e.Type = EventAccepted
	case push.OutcomeGone:
		e.Type = EventGone
	}
	if a.DeviceID != 0 {
		e.DeviceID = DeviceIDString(a.DeviceID)
	}
	detail := attemptDetail{PushHost: a.PushHost, Status: a.Status, Try: a.Try}
	if e.Type == EventFailed {
		detail.Outcome = string(a.Outcome)
	}
	e.Detail, _ = json.Marshal(detail) // cannot fail: strings and numbers
	return e
}

// attemptDetail is the detail of an attempt's event.
type attemptDetail struct {
	PushHost string `json:"pushHost,omitempty"`
	Status   int    `json:"status,omitempty"`
	Outcome  string `json:"outcome,omitempty"`
	Try      int    `json:"try,omitempty"`
}

// queuedEvents are the events of userID's messages recorded in the outbox
// before they are sent.
func queuedEvents(userID string, messages []OutboxMessage, now time.Time) []MessageEvent {
	events := make([]MessageEvent, len(messages))
	for i, m := range messages {
		events[i] = MessageEvent{At: now, UserID: userID, MessageID: m.MessageID, Type: EventQueued}
	}
	return events
}

// ackedEvents runs query (AckOutbox's) in tx with now, userID and ids and
// returns an acknowledged event of userID for each message id it returns.
func (s *Store) ackedEvents(ctx context.Context, tx *sql.Tx, query string, now time.Time, userID, ids string) ([]MessageEvent, error) {
	rows, err := tx.QueryContext(ctx, query, millis(now), userID, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var events []MessageEvent
	for rows.Next() {
		e := MessageEvent{UserID: userID, Type: EventAcknowledged}
		if err := rows.Scan(&e.MessageID); err != nil {
			return nil, err
		}
		events = append(events, e)
	}
	return events, rows.Err()
}

// DayCount is how many events of one type happened on one UTC day.
type DayCount struct {
	Day   time.Time // midnight UTC
	Type  string
	Count int
}

// EventsPerDay counts the events of types since since, per UTC day and
// type, oldest day first: the operator's daily chart of sent, shown and
// clicked messages.
func (s *Store) EventsPerDay(ctx context.Context, since time.Time, types []string) (counts []DayCount, err error) {
	stored := slices.Clone(types)
	if slices.ContainsFunc(types, func(t string) bool { return t == EventQueued || t == EventSent || t == EventAccepted }) {
		stored = append(stored, deliveredRow)
	}
	names, err := json.Marshal(stored)
	if err != nil {
		return nil, err
	}
	perDay := map[DayCount]int{} // by Day and Type, Count 0
	err = s.readSince(ctx, eventsByTime, millis(since), func(q searcher, r rowRange) error {
		at := millis(since)
		args := append(append([]any{at, at}, r.args()...), at, at, string(names))
		rows, err := q.QueryContext(ctx, s.eventsPerDaySQL(r), args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var day, n int64
			var queuedDay sql.NullInt64
			var typ string
			if err := rows.Scan(&day, &queuedDay, &typ, &n); err != nil {
				return err
			}
			countRowEvents(perDay, types, typ, day, queuedDay, int(n))
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: events per day: %w", err)
	}
	for c, n := range perDay {
		c.Count = n
		counts = append(counts, c)
	}
	slices.SortFunc(counts, func(a, b DayCount) int { return cmp.Or(a.Day.Compare(b.Day), strings.Compare(a.Type, b.Type)) })
	return counts, nil
}

// eventsPerDaySQL counts EventsPerDay's rows in r by the day of their at
// (-1 before since) and of their queued_at (NULL for none or before since)
// and their type; its arguments are since twice, r's, since twice and the
// types.
func (s *Store) eventsPerDaySQL(r rowRange) string {
	return `SELECT CASE WHEN at >= ? THEN at / 86400000 ELSE -1 END AS day,
			CASE WHEN queued_at >= ? THEN queued_at / 86400000 END AS queued_day, type, count(*) FROM message_events
		WHERE ` + r.where("message_events") + `(at >= ? OR queued_at >= ?) AND type IN (` + s.dialect.InJSONArray + `)
		GROUP BY 1, 2, type`
}

// countRowEvents adds to perDay the events of types that n rows of type
// typ tell, at day (-1 for before since) and queued at queuedDay.
func countRowEvents(perDay map[DayCount]int, types []string, typ string, day int64, queuedDay sql.NullInt64, n int) {
	add := func(t string, day int64) {
		if day >= 0 && slices.Contains(types, t) {
			perDay[DayCount{Day: fromMillis(day * 86400000), Type: t}] += n
		}
	}
	if typ != deliveredRow {
		add(typ, day)
		return
	}
	add(EventSent, day)
	add(EventAccepted, day)
	if queuedDay.Valid {
		add(EventQueued, queuedDay.Int64)
	}
}

// deleteOutboxRows deletes the outbox rows where (a condition on
// message_outbox, with args) selects, and their messages' events, in one
// write: a message's story goes with its outbox row. It returns how many
// outbox rows it deleted; what names the step in errors.
func (s *Store) deleteOutboxRows(ctx context.Context, what, where string, args ...any) (int, error) {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		for _, query := range outboxEventsDeletes(where) {
			if _, err := tx.ExecContext(ctx, query, args...); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM message_outbox WHERE `+where, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: %s: %w", what, err)
	}
	return int(n), nil
}

// outboxEventsDeletes delete the events of the outbox rows where selects:
// those of the rows, then those of their messages without one
// (events_rows.go). Each takes where's arguments.
func outboxEventsDeletes(where string) []string {
	return []string{
		`DELETE FROM message_events WHERE outbox_id IN (SELECT id FROM message_outbox WHERE ` + where + `)`,
		`DELETE FROM message_events WHERE outbox_id IS NULL AND (user_id, message_id) IN (
			SELECT user_id, message_id FROM message_outbox WHERE ` + where + `)`,
	}
}
