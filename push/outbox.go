package push

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// OutboxMessage is one finalized push as the outbox keeps it. It lives here,
// beside Push, so the delivery engine and the store share it without the
// engine depending on the store.
type OutboxMessage struct {
	MessageID string
	TaskUUID  string // "" when the push belongs to no task
	SessionID string // "" when the push has none
	// MessageIndex (1-based) and TotalMessages place the push in its burst;
	// 0 when the push has none.
	MessageIndex  int
	TotalMessages int
	// Payload is the push as encoded for sending: a JSON object of at most
	// MaxDecodeBytes.
	Payload json.RawMessage
}

// NewOutboxMessage encodes p and lifts its identity fields, so every
// producer records pushes the same way.
func NewOutboxMessage(p Push) (OutboxMessage, error) {
	payload, err := Encode(p)
	if err != nil {
		return OutboxMessage{}, fmt.Errorf("outbox message: %w", err)
	}
	c := p.CommonFields()
	m := OutboxMessage{MessageID: c.MessageID, SessionID: c.SessionID, Payload: payload}
	m.TaskUUID, _ = c.TaskUUID.Get()
	if content, ok := p.(*ContentPush); ok {
		m.MessageIndex, _ = content.MessageIndex.Get()
		m.TotalMessages, _ = content.TotalMessages.Get()
	}
	return m, nil
}

// OutboxEntry is a stored outbox row.
type OutboxEntry struct {
	ID int64
	OutboxMessage
	CreatedAt   time.Time
	DeliveredAt time.Time // zero until a push service accepted the push
}

// ErrStoreClosed marks a write to a store that was closed: it will never
// succeed, so a writer that retries stops at it.
var ErrStoreClosed = errors.New("the store is closed")

// Bookkeeping is what one push's delivery leaves in the store, written in
// one transaction: the attempts, the outbox rows of UserID it delivered, the
// devices of UserID push services reported gone, the pushes that were
// sent before the outbox held them (recorded now, already delivered), and
// the pushes of UserID held back from Web Push (the daily limit: recorded
// in the outbox only). The store tells each message's story (its events)
// from them in the same write.
type Bookkeeping struct {
	UserID    string
	Record    []OutboxMessage
	Delivered []string
	Gone      []int64
	Attempts  []Attempt
	Deferred  []string
}

// Empty reports bookkeeping with nothing to write.
func (b Bookkeeping) Empty() bool {
	return len(b.Record) == 0 && len(b.Delivered) == 0 && len(b.Gone) == 0 && len(b.Attempts) == 0 && len(b.Deferred) == 0
}

// MessageID is the push the bookkeeping is about, for logs; "" when it has
// nothing to write.
func (b Bookkeeping) MessageID() string {
	switch {
	case len(b.Record) > 0:
		return b.Record[0].MessageID
	case len(b.Delivered) > 0:
		return b.Delivered[0]
	case len(b.Attempts) > 0:
		return b.Attempts[0].MessageID
	case len(b.Deferred) > 0:
		return b.Deferred[0]
	}
	return ""
}
