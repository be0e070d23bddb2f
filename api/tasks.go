package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"amsg/builders"
	"amsg/push"
	"amsg/push/errcode"
	"amsg/scheduler"
	"amsg/store"
)

// taskFeature is the standard's task API: schedule, update, cancel, list
// and read tasks, plus POST /send-notifications, which runs one scheduler
// tick now. It needs the scheduler; without one (tests of other features)
// it serves nothing.
func (s *Server) taskFeature() feature {
	if s.deps.Scheduler == nil {
		return feature{}
	}
	return feature{
		capabilities: []string{"task-timezone", "task-cron", "schedule-immediate", "schedule-supersede",
			"get-message-detail", "task-last-error", "tick-stale-guard", "recurring-skip-occurrence",
			"occurrence-scoped-push-ids", "push-task-identity", "tick-lease-heartbeat",
			"update-message-contact-name", "update-message-credentials", "llm-extra-body", "send-notifications",
			"cancel-stops-delivery", "task-in-flight", "llm-permanent-errors", "idempotency-key"},
		routes: []route{
			{http.MethodPost, "schedule-message", authClient, s.idempotent(userScope, s.handleScheduleMessage)},
			{http.MethodPut, "update-message", authClient, s.handleUpdateMessage},
			{http.MethodDelete, "cancel-message", authClient, s.handleCancelMessage},
			{http.MethodGet, "messages", authClient, s.handleListMessages},
			{http.MethodGet, "message", authClient, s.handleGetMessage},
			{http.MethodPost, "send-notifications", authClient, s.handleSendNotifications},
		},
	}
}

var (
	errTaskIDRequired       = fail(errcode.TaskIDRequired)
	errTaskNotFound         = fail(errcode.TaskNotFound)
	errTaskUUIDConflict     = fail(errcode.TaskUUIDConflict)
	errSubscriptionLookup   = fail(errcode.SubscriptionLookupFailed)
	errInvalidUpdateData    = fail(errcode.InvalidUpdateData)
	errTaskAlreadyCompleted = fail(errcode.TaskAlreadyCompleted)
)

// scheduleRequest is a validated POST /schedule-message.
type scheduleRequest struct {
	payload        scheduler.Payload
	sendAt         time.Time // the effective first send time
	uuid           string
	supersedesUUID string
	subscription   json.RawMessage // a legacy pushSubscription to store as a device
}

// handleScheduleMessage creates a task, or for messageType instant creates
// and delivers it within the request.
func (s *Server) handleScheduleMessage(w http.ResponseWriter, r *http.Request) error {
	userID, body, err := s.decryptRequestWithin(w, r, s.taskBodyLimit())
	if err != nil {
		return err
	}
	req, err := s.validateSchedule(r.Context(), decodeFields(body))
	if err != nil {
		return err
	}
	owner, err := decodeOwnerClaim(decodeObject(body))
	if err != nil {
		return err
	}
	ctx := r.Context()
	if err := s.admitTask(ctx, userID, req.uuid); err != nil {
		return err
	}
	if err := s.requireCredentials(ctx, userID, req.payload.CredRefs); err != nil {
		return err
	}
	if req.payload.APIURL != nil {
		if err := s.checkAPIURL(ctx, *req.payload.APIURL); err != nil {
			return err
		}
	}
	if req.subscription != nil {
		if _, err := s.deps.Store.PutSubscription(ctx, userID, req.subscription, s.now()); err != nil {
			return err
		}
		s.deps.Courier.Forget(userID)
	}
	devices, err := s.deps.Store.CountDevices(ctx, userID)
	if err != nil {
		s.log.ErrorContext(ctx, "schedule-message: subscription lookup failed", "err", err)
		return errSubscriptionLookup
	}
	if devices == 0 {
		return errSubscriptionMissing
	}
	raw, err := req.payload.Encode()
	if err != nil {
		return err
	}
	if err := checkTaskSize(raw, 0); err != nil {
		return err
	}
	instant := req.payload.MessageType == push.TypeInstant
	n := store.NewTask{UserID: userID, UUID: req.uuid, MessageType: req.payload.MessageType, NextSendAt: req.sendAt,
		Payload: raw, SupersedesUUID: req.supersedesUUID, Owner: owner}
	if instant {
		n.LeaseUntil = s.deps.Scheduler.LeaseEnd()
	}
	task, replaced, err := s.deps.Store.InsertTask(ctx, n)
	if errors.Is(err, store.ErrTaskUUIDConflict) {
		return errTaskUUIDConflict
	}
	if err != nil {
		return ownerWriteError(err)
	}
	var supersededField *bool
	if superseded := replaced.ID != 0; req.supersedesUUID != "" {
		supersededField = &superseded
	}
	if replaced.ID != 0 {
		s.stopDelivery(ctx, userID, req.supersedesUUID, replaced)
	}
	if !instant {
		s.deps.Scheduler.WakeFor(task.NextSendAt)
		writeData(w, http.StatusCreated, struct {
			ID          int64  `json:"id"`
			UUID        string `json:"uuid"`
			ContactName string `json:"contactName"`
			NextSendAt  string `json:"nextSendAt"`
			Status      string `json:"status"`
			CreatedAt   string `json:"createdAt"`
			Superseded  *bool  `json:"superseded,omitempty"`
		}{task.ID, task.UUID, req.payload.ContactName, push.FormatTimestamp(task.NextSendAt), string(task.Status),
			push.FormatTimestamp(task.CreatedAt), supersededField})
		return nil
	}
	// The user asked for this message now: a client that goes away does not
	// cancel it.
	res, err := s.deps.Scheduler.DeliverInstant(context.WithoutCancel(ctx), task)
	var failed *scheduler.InstantError
	switch {
	case errors.As(err, &failed):
		return fail(errcode.MessageSendFailed).withDetails(failed)
	case err != nil:
		return err
	}
	writeData(w, http.StatusOK, struct {
		UUID         string `json:"uuid"`
		ContactName  string `json:"contactName"`
		MessagesSent int    `json:"messagesSent"`
		SentAt       string `json:"sentAt"`
		Status       string `json:"status"`
		RetriesUsed  int    `json:"retriesUsed"`
		Superseded   *bool  `json:"superseded,omitempty"`
	}{task.UUID, req.payload.ContactName, res.MessagesSent, push.FormatTimestamp(s.now()), "sent", res.RetriesUsed, supersededField})
	return nil
}

// avatarURL soft-clears an invalid avatarUrl to null, as the standard does
// everywhere: a cosmetic field never fails a request.
func (s *Server) avatarURL(f fields) *string {
	v, warning := builders.CheckAvatarURL(f["avatarUrl"])
	if warning != nil {
		s.log.Warn("avatarUrl cleared", "reason", warning.String())
	}
	var url string
	if json.Unmarshal(v, &url) != nil || url == "" {
		return nil
	}
	return &url
}

// requireTaskID reads the task uuid of ?id=, the standard's TASK_ID_REQUIRED
// when there is none.
func requireTaskID(r *http.Request) (string, error) {
	id := r.URL.Query().Get("id")
	if id == "" {
		return "", errTaskIDRequired
	}
	return id, nil
}

// handleCancelMessage deletes a task in any status. An occurrence being
// delivered stops (Scheduler.Cancel, and on PostgreSQL every instance,
// told by the delete), and data.status says what the cancel found.
func (s *Server) handleCancelMessage(w http.ResponseWriter, r *http.Request) error {
	id, err := requireTaskID(r)
	if err != nil {
		return err
	}
	userID, err := requireUserID(r)
	if err != nil {
		return err
	}
	deleted, err := s.deps.Store.DeleteTask(r.Context(), userID, id)
	switch {
	case errors.Is(err, store.ErrTaskNotFound):
		return errTaskNotFound
	case err != nil:
		return err
	}
	begun := s.stopDelivery(r.Context(), userID, id, deleted)
	status := scheduler.StatusCancelled
	switch {
	case deleted.Delivering && begun:
		status = scheduler.StatusCancelledMidDelivery
	case deleted.Status != store.TaskPending:
		status = scheduler.StatusCancelledAfterDelivery
	}
	writeData(w, http.StatusOK, struct {
		UUID      string `json:"uuid"`
		Message   string `json:"message"`
		Status    string `json:"status"`
		DeletedAt string `json:"deletedAt"`
	}{id, "任务已成功取消", status, push.FormatTimestamp(s.now())})
	return nil
}

// stopDelivery finishes the cancel or supersede of a task: its delivery
// under way here stops, then the pushes of the task that never went out are
// dropped, so a client catching up later does not get the rest of a burst
// the user cancelled. begun is false when the task's occurrence was only
// claimed ahead of its time here, so nothing of it was sent
// (Scheduler.Cancel).
func (s *Server) stopDelivery(ctx context.Context, userID, taskUUID string, deleted store.DeletedTask) (begun bool) {
	if deleted.Delivering {
		begun = s.deps.Scheduler.Cancel(deleted.ID)
	}
	if _, err := s.deps.Store.DiscardUndeliveredOutbox(ctx, userID, taskUUID); err != nil {
		s.log.WarnContext(ctx, "discarding a cancelled task's undelivered outbox rows failed", "err", err)
	}
	return begun
}

// handleSendNotifications runs one scheduler tick now and returns its
// summary.
func (s *Server) handleSendNotifications(w http.ResponseWriter, r *http.Request) error {
	summary, err := s.deps.Scheduler.Tick(r.Context())
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, summary)
	return nil
}
