package api

import (
	"amsg/push"
	"amsg/push/errcode"

	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"

	"amsg/store"
)

// outboxFeature lets a client catch up on pushes it missed: GET /outbox pages
// through the user's unacknowledged pushes with an id cursor, POST
// /outbox/ack acknowledges them, DELETE /outbox removes some or all of them.
// Senders record every push before sending (store.AppendOutbox).
func (s *Server) outboxFeature() feature {
	return feature{
		capabilities: []string{"message-outbox", "outbox-delete"},
		routes: []route{
			{http.MethodGet, "outbox", authClient, s.handleOutbox},
			{http.MethodPost, "outbox/ack", authClient, s.handleOutboxAck},
			{http.MethodDelete, "outbox", authClient, s.handleDeleteOutbox},
		},
	}
}

var (
	errInvalidOutboxCursor = fail(errcode.InvalidOutboxCursor)
	errInvalidOutboxLimit  = fail(errcode.OutboxLimitRange.With(store.MaxOutboxPage))
	errInvalidOutboxAckIDs = fail(errcode.InvalidOutboxAck)
	errInvalidOutboxAckID  = fail(errcode.OutboxAckIDBlank)
)

// outboxEntryJSON is one entry of GET /outbox; absent identity fields are
// null, as upstream writes them.
type outboxEntryJSON struct {
	ID            int64           `json:"id"`
	MessageID     string          `json:"messageId"`
	TaskUUID      *string         `json:"taskUuid"`
	SessionID     *string         `json:"sessionId"`
	MessageIndex  *int            `json:"messageIndex"`
	TotalMessages *int            `json:"totalMessages"`
	CreatedAt     int64           `json:"createdAt"`
	DeliveredAt   *int64          `json:"deliveredAt"`
	Push          json.RawMessage `json:"push"`
}

func (s *Server) handleOutbox(w http.ResponseWriter, r *http.Request) error {
	userID, err := requireUserID(r)
	if err != nil {
		return err
	}
	since, limit, err := outboxQuery(r.URL.Query())
	if err != nil {
		return err
	}
	page, err := s.deps.Store.UnackedOutbox(r.Context(), userID, since, limit)
	if err != nil {
		return err
	}
	entries := make([]outboxEntryJSON, len(page.Entries))
	for i, e := range page.Entries {
		entries[i] = outboxEntryJSON{
			ID: e.ID, MessageID: e.MessageID,
			TaskUUID: nonZero(e.TaskUUID), SessionID: nonZero(e.SessionID),
			MessageIndex: nonZero(e.MessageIndex), TotalMessages: nonZero(e.TotalMessages),
			CreatedAt: e.CreatedAt.UnixMilli(), Push: e.Payload,
		}
		if !e.DeliveredAt.IsZero() {
			entries[i].DeliveredAt = nonZero(e.DeliveredAt.UnixMilli())
		}
	}
	return s.writeEncrypted(w, userID, struct {
		Entries []outboxEntryJSON `json:"entries"`
		Cursor  int64             `json:"cursor"`
		HasMore bool              `json:"hasMore"`
	}{entries, page.Cursor, page.HasMore})
}

// nonZero returns a pointer to v, or nil (JSON null) for the zero value.
func nonZero[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// outboxQuery reads since and limit as upstream does, with JavaScript's
// Number(): since is 0 when absent or empty, else a non-negative integer;
// limit is DefaultOutboxPage when absent or empty, else a positive integer,
// capped at MaxOutboxPage.
func outboxQuery(q url.Values) (since int64, limit int, err error) {
	if raw := q.Get("since"); raw != "" {
		n, ok := push.JSNumber(raw)
		// An integer above 2^53 cannot be a cursor this server wrote.
		if !ok || n != math.Trunc(n) || n < 0 || n > maxSafeInteger {
			return 0, 0, errInvalidOutboxCursor
		}
		since = int64(n)
	}
	limit = store.DefaultOutboxPage
	if raw := q.Get("limit"); raw != "" {
		n, ok := push.JSNumber(raw)
		if !ok || math.IsInf(n, 0) || n != math.Trunc(n) || n <= 0 {
			return 0, 0, errInvalidOutboxLimit
		}
		limit = int(min(n, store.MaxOutboxPage))
	}
	return since, limit, nil
}

func (s *Server) handleOutboxAck(w http.ResponseWriter, r *http.Request) error {
	userID, payload, err := s.decryptRequest(w, r)
	if err != nil {
		return err
	}
	items, ok := decodeObject(payload)["messageIds"].([]any)
	if !ok || len(items) == 0 {
		return errInvalidOutboxAckIDs
	}
	if len(items) > store.MaxOutboxIDs {
		return fail(errcode.OutboxAckIDsOver.With(store.MaxOutboxIDs)).
			withDetails(map[string]int{"count": len(items)})
	}
	ids := make([]string, len(items))
	for i, item := range items {
		if ids[i], ok = item.(string); !ok {
			return errInvalidOutboxAckID
		}
	}
	acked, err := s.deps.Store.AckOutbox(r.Context(), userID, ids)
	if errors.Is(err, store.ErrInvalidOutbox) { // a blank id
		return errInvalidOutboxAckID
	}
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, struct {
		Acked int `json:"acked"`
	}{acked})
	return nil
}

var (
	errOutboxDeleteTarget = fail(errcode.OutboxDeleteTarget).
				withDetails(map[string]any{"invalidFields": []string{"messageIds"}})
	errOutboxDeleteBoth = fail(errcode.OutboxDeleteBoth).
				withDetails(map[string]any{"invalidFields": []string{"all", "messageIds"}})
)

// handleDeleteOutbox deletes the outbox rows the encrypted body names,
// {messageIds: [...]} (at most store.MaxOutboxIDs) or {all: true}, exactly
// one of the two, acknowledged or not.
func (s *Server) handleDeleteOutbox(w http.ResponseWriter, r *http.Request) error {
	userID, payload, err := s.decryptRequest(w, r)
	if err != nil {
		return err
	}
	all, ids, err := decodeOutboxDelete(payload)
	if err != nil {
		return err
	}
	var deleted int
	if all {
		deleted, err = s.deps.Store.DeleteAllOutbox(r.Context(), userID)
	} else {
		deleted, err = s.deps.Store.DeleteOutbox(r.Context(), userID, ids)
	}
	if err != nil {
		return err
	}
	return writeDeleted(w, deleted)
}

// decodeOutboxDelete reads DELETE /outbox's body: all when it is
// {all: true} without messageIds, else the non-blank ids of messageIds.
func decodeOutboxDelete(payload json.RawMessage) (all bool, ids []string, err error) {
	body := decodeObject(payload)
	if body == nil {
		return false, nil, errPlaintextNotObject
	}
	rawIDs, hasIDs := body["messageIds"]
	if body["all"] == true {
		if hasIDs {
			return false, nil, errOutboxDeleteBoth
		}
		return true, nil, nil
	}
	items, ok := rawIDs.([]any)
	if !ok || len(items) == 0 {
		return false, nil, errOutboxDeleteTarget
	}
	if len(items) > store.MaxOutboxIDs {
		return false, nil, fail(errcode.OutboxDeleteOver.With(store.MaxOutboxIDs)).
			withDetails(map[string]any{"invalidFields": []string{"messageIds"}, "count": len(items)})
	}
	ids = make([]string, len(items))
	for i, item := range items {
		if ids[i], ok = item.(string); !ok || push.IsJSBlank(ids[i]) {
			return false, nil, fail(errcode.OutboxDeleteIDBlank.With(i)).
				withDetails(map[string]any{"invalidFields": []string{fmt.Sprintf("messageIds[%d]", i)}})
		}
	}
	return false, ids, nil
}
