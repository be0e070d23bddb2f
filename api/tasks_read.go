package api

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"amsg/push"
	"amsg/push/errcode"
	"amsg/scheduler"
	"amsg/store"
)

// Bounds of GET /messages, the standard's.
const (
	defaultTaskPage = 20
	maxTaskPage     = 100
)

// taskView is the standard's task projection: a whitelist that never shows
// credentials or prompts. Metadata is set only by GET /message; cronExpr is
// amsg's and appears only on cron tasks.
type taskView struct {
	ID             int64           `json:"id"`
	UUID           string          `json:"uuid"`
	ContactName    *string         `json:"contactName"`
	MessageType    string          `json:"messageType"`
	MessageSubtype *string         `json:"messageSubtype"`
	NextSendAt     string          `json:"nextSendAt"`
	RecurrenceType *string         `json:"recurrenceType"`
	CronExpr       string          `json:"cronExpr,omitempty"`
	TzID           *string         `json:"tzId"`
	Status         string          `json:"status"`
	RetryCount     int             `json:"retryCount"`
	CreatedAt      string          `json:"createdAt"`
	UpdatedAt      string          `json:"updatedAt"`
	CharID         json.RawMessage `json:"charId"`
	ClientTaskID   json.RawMessage `json:"clientTaskId"`
	Metadata       json.RawMessage `json:"metadata,omitempty"`
	LastError      json.RawMessage `json:"lastError"`
	// CredRefs names the stored credentials the task uses: ids, never
	// values.
	CredRefs map[string]string `json:"credRefs,omitempty"`
	// DeferredUntil is amsg's: when a task that waits for the end of the
	// user's quiet hours fires.
	DeferredUntil string `json:"deferredUntil,omitempty"`
}

// projectTask builds the projection. A payload that does not decrypt (the
// master key changed) leaves its fields null instead of failing the list,
// so the user can still see and cancel the task.
func (s *Server) projectTask(t store.Task, withMetadata bool) taskView {
	v := taskView{
		ID:          t.ID,
		UUID:        t.UUID,
		MessageType: string(t.MessageType),
		NextSendAt:  push.FormatTimestamp(t.NextSendAt),
		Status:      string(t.Status),
		RetryCount:  t.RetryCount,
		CreatedAt:   push.FormatTimestamp(t.CreatedAt),
		UpdatedAt:   push.FormatTimestamp(t.UpdatedAt),
		LastError:   lastErrorJSON(t.LastError),
	}
	p, err := scheduler.TaskPayload(t)
	if err != nil {
		s.log.Warn("task payload unreadable; listing it without its fields", "taskId", t.ID, "err", err)
		if withMetadata {
			v.Metadata = json.RawMessage("null")
		}
		return v
	}
	rec := string(p.RecurrenceType)
	v.ContactName, v.MessageSubtype, v.RecurrenceType, v.TzID, v.CronExpr = &p.ContactName, &p.MessageSubtype, &rec, p.TzID, p.CronExpr
	var meta map[string]json.RawMessage
	_ = json.Unmarshal(p.Metadata, &meta)
	v.CharID, v.ClientTaskID, v.CredRefs = meta["charId"], meta["amsgClientTaskId"], p.CredRefs
	if withMetadata {
		v.Metadata = p.Metadata
	}
	return v
}

// lastErrorJSON is the last_error column as the projection shows it: the
// object, {"reason": <text>} for text that is not JSON, or null.
func lastErrorJSON(raw json.RawMessage) json.RawMessage {
	switch {
	case raw == nil:
		return nil
	case json.Valid(raw):
		return raw
	}
	b, _ := json.Marshal(map[string]string{"reason": string(raw)})
	return b
}

// handleListMessages serves a page of the user's tasks, encrypted.
func (s *Server) handleListMessages(w http.ResponseWriter, r *http.Request) error {
	userID, err := requireUserID(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	status := q.Get("status")
	if status == "" || status == "all" {
		status = ""
	}
	limit, ok := push.JSParseInt(cmp.Or(q.Get("limit"), strconv.Itoa(defaultTaskPage)))
	if !ok || limit < 1 {
		return fail(errcode.InvalidLimit)
	}
	limit = min(limit, maxTaskPage)
	offset, ok := push.JSParseInt(cmp.Or(q.Get("offset"), "0"))
	if !ok || offset < 0 {
		return fail(errcode.InvalidOffset)
	}
	tasks, total, err := s.deps.Store.Tasks(r.Context(), userID, store.TaskStatus(status), limit, offset)
	if err != nil {
		return err
	}
	views := make([]taskView, len(tasks))
	for i, t := range tasks {
		views[i] = s.projectTask(t, false)
	}
	if err := s.markDeferred(r.Context(), userID, views); err != nil {
		return err
	}
	type pagination struct {
		Total   int  `json:"total"`
		Limit   int  `json:"limit"`
		Offset  int  `json:"offset"`
		HasMore bool `json:"hasMore"`
	}
	return s.writeEncrypted(w, userID, struct {
		Tasks      []taskView `json:"tasks"`
		Pagination pagination `json:"pagination"`
	}{views, pagination{total, limit, offset, offset+limit < total}})
}

// handleGetMessage serves one pending task with its metadata, encrypted. A
// task that was sent or failed is 409 TASK_ALREADY_COMPLETED with its status
// and last error, so a client can tell why it never fired.
func (s *Server) handleGetMessage(w http.ResponseWriter, r *http.Request) error {
	userID, err := requireUserID(r)
	if err != nil {
		return err
	}
	id, err := requireTaskID(r)
	if err != nil {
		return err
	}
	t, err := s.deps.Store.Task(r.Context(), userID, id)
	if errors.Is(err, store.ErrTaskNotFound) {
		return errTaskNotFound
	}
	if err != nil {
		return err
	}
	if t.Status != store.TaskPending {
		return fail(errcode.TaskEnded).
			withDetails(map[string]any{"status": t.Status, "lastError": lastErrorJSON(t.LastError)})
	}
	views := []taskView{s.projectTask(t, true)}
	if err := s.markDeferred(r.Context(), userID, views); err != nil {
		return err
	}
	return s.writeEncrypted(w, userID, struct {
		Task taskView `json:"task"`
	}{views[0]})
}
