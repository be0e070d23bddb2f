package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"strconv"
	"time"
)

// The message events about what sends messages rather than one message
// (task.failed, interrupt.decided, device.gone), recorded where each thing
// happens: a device's removal and an interrupt's decision inside the write
// that makes them, a task's failure right after the fenced write that
// fails it (only a failure that took effect is told).

// recordDeviceGone records device.gone for a device the push service said
// is gone, when res (the delete's result) removed it: two pushes that both
// met the 410 tell it once.
func (s *Store) recordDeviceGone(ctx context.Context, tx *sql.Tx, res sql.Result, userID string, deviceID int64, now int64) error {
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err
	}
	return s.insertMessageEvents(ctx, tx, []MessageEvent{{UserID: userID, DeviceID: strconv.FormatInt(deviceID, 10),
		Type: EventDeviceGone, Detail: json.RawMessage(`{"reason":"push service answered 404 or 410"}`)}}, fromMillis(now))
}

// recordInterruptsDecided records interrupt.decided for each interrupt
// decided (approved, denied) or expired in tx.
func (s *Store) recordInterruptsDecided(ctx context.Context, tx *sql.Tx, decided []Interrupt) error {
	events := make([]MessageEvent, 0, len(decided))
	for _, in := range decided {
		detail, err := json.Marshal(struct {
			InterruptID string `json:"interruptId"`
			SessionID   string `json:"sessionId"`
			ToolCallID  string `json:"toolCallId"`
			State       string `json:"state"`
		}{in.ID, in.SessionID, in.ToolCallID, string(in.State)})
		if err != nil {
			return err
		}
		short, _ := json.Marshal(map[string]string{"interruptId": in.ID})
		events = append(events, MessageEvent{At: in.DecidedAt, UserID: in.UserID, Type: EventInterruptDecided, Detail: capDetail(detail, short)})
	}
	return s.insertMessageEvents(ctx, tx, events, s.now())
}

// recordTaskFailed records task.failed for the task l leased, which a
// fenced write has just failed (for good, or this occurrence of a
// recurring one) with lastError. The failure is already recorded: an event
// that cannot be written is logged, not returned.
func (s *Store) recordTaskFailed(ctx context.Context, l Lease, recurring bool, lastError json.RawMessage) {
	var userID, uuid string
	err := s.reader.QueryRowContext(ctx, `SELECT user_id, uuid FROM tasks WHERE id = ?`, l.TaskID).Scan(&userID, &uuid)
	if err == nil {
		detail := func(lastError json.RawMessage) json.RawMessage {
			b, _ := json.Marshal(struct { // plain strings, and lastError only when valid
				TaskID     string          `json:"taskId"`
				Occurrence time.Time       `json:"occurrence"`
				Recurring  bool            `json:"recurring"`
				LastError  json.RawMessage `json:"lastError,omitempty"`
			}{uuid, l.Occurrence.UTC(), recurring, lastError})
			return b
		}
		d := detail(nil)
		if json.Valid(lastError) {
			d = capDetail(detail(lastError), d)
		}
		err = s.AppendMessageEvents(ctx, MessageEvent{UserID: userID, Type: EventTaskFailed, Detail: d})
	}
	if err != nil {
		s.log.Warn("store: recording task.failed failed", "taskId", l.TaskID, "err", err)
	}
}

// capDetail is detail when it fits MaxMessageEventDetailBytes, else
// shorter (the same without its long part).
func capDetail(detail, shorter json.RawMessage) json.RawMessage {
	if len(detail) <= MaxMessageEventDetailBytes {
		return detail
	}
	return shorter
}
