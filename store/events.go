package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Message events are the story of each message told outward (issue 25):
// an append-only row per thing that happened to a message (queued, sent,
// accepted, shown…) or to what sent it (a task failed, a device went
// away). MessageTimeline reads one message's story for its user and the
// operator; MessageEventsAfter reads every event in Seq order for
// consumers that follow the table (webhooks). Events on the delivery path
// are written inside the write that records the attempt, so they cost no
// commit of their own. Rows live as long as the outbox keeps a message
// (Config.OutboxMaxAge), bounded in number by Config.MessageEventsMaxRows.

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

var insertMessageEventSQL = preparedSQL(`INSERT INTO message_events (at, user_id, message_id, device_id, type, detail)
	VALUES (?, ?, ?, ?, ?, ?)`)

// insertMessageEvents writes checked events in tx, those with no time at
// now: the part of a write that already records something else.
func (s *Store) insertMessageEvents(ctx context.Context, tx *sql.Tx, events []MessageEvent, now time.Time) error {
	for _, e := range events {
		at := e.At
		if at.IsZero() {
			at = now
		}
		detail := "{}"
		if e.Detail != nil {
			detail = string(e.Detail)
		}
		if _, err := s.txExec(ctx, tx, insertMessageEventSQL, millis(at), e.UserID, e.MessageID, e.DeviceID, e.Type, detail); err != nil {
			return err
		}
	}
	return nil
}

// MessageEventsAfter returns up to limit (1 to MaxMessageEventsPage)
// events with Seq above afterSeq, in Seq order: how a consumer follows
// every event, keeping the last Seq it handled as its cursor. Seq is the
// order the rows were inserted in; on PostgreSQL with several instances
// writing, a row may commit after one with a higher Seq, so a consumer
// that must see every row re-reads a little behind its cursor.
func (s *Store) MessageEventsAfter(ctx context.Context, afterSeq int64, limit int) ([]MessageEvent, error) {
	if afterSeq < 0 || limit < 1 || limit > MaxMessageEventsPage {
		return nil, fmt.Errorf("store: message events after: %w: after %d, limit %d", ErrInvalidMessageEvent, afterSeq, limit)
	}
	return s.queryMessageEvents(ctx, "message events after", `WHERE id > ? ORDER BY id LIMIT ?`, afterSeq, limit)
}

// MessageTimeline returns the events of userID's message messageID in the
// order they were recorded, at most MaxTimelineEvents of them (the
// oldest); none for a message the user never had.
func (s *Store) MessageTimeline(ctx context.Context, userID, messageID string) ([]MessageEvent, error) {
	return s.queryMessageEvents(ctx, "message timeline", `WHERE user_id = ? AND message_id = ? ORDER BY id LIMIT ?`,
		userID, messageID, MaxTimelineEvents)
}

// queryMessageEvents reads the events that where (a WHERE clause with its
// ORDER BY and LIMIT) selects; what names the caller in errors.
func (s *Store) queryMessageEvents(ctx context.Context, what, where string, args ...any) ([]MessageEvent, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT id, at, user_id, message_id, device_id, type, detail FROM message_events `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", what, err)
	}
	defer rows.Close()
	events := []MessageEvent{}
	for rows.Next() {
		var e MessageEvent
		var at int64
		var detail string
		if err := rows.Scan(&e.Seq, &at, &e.UserID, &e.MessageID, &e.DeviceID, &e.Type, &detail); err != nil {
			return nil, fmt.Errorf("store: %s: %w", what, err)
		}
		e.At = fromMillis(at)
		if detail != "{}" {
			e.Detail = json.RawMessage(detail)
		}
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: %s: %w", what, err)
	}
	return events, nil
}

// PruneMessageEvents deletes events older than the outbox keeps a message
// (Config.OutboxMaxAge) and the oldest beyond Config.MessageEventsMaxRows, and
// returns how many. Prune calls it.
func (s *Store) PruneMessageEvents(ctx context.Context) (int, error) {
	aged, err := s.execCount(ctx, "prune message events", `DELETE FROM message_events WHERE at < ?`,
		millis(s.now().Add(-s.outboxMaxAge)))
	if err != nil {
		return aged, err
	}
	capped, err := s.execCount(ctx, "cap message events",
		`DELETE FROM message_events WHERE id <= (SELECT id FROM message_events ORDER BY id DESC LIMIT 1 OFFSET ?)`, s.messageEventsMaxRows())
	return aged + capped, err
}

// messageEventsMaxRows is Config.MessageEventsMaxRows or its default.
func (s *Store) messageEventsMaxRows() int {
	if s.messageEventsCap > 0 {
		return s.messageEventsCap
	}
	return DefaultMessageEventsMaxRows
}
