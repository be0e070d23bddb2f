package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"amsg/builders"
	"amsg/loop"
	"amsg/push"
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
			"update-message-contact-name", "update-message-credentials", "llm-extra-body", "send-notifications"},
		routes: []route{
			{http.MethodPost, "schedule-message", authClient, s.handleScheduleMessage},
			{http.MethodPut, "update-message", authClient, s.handleUpdateMessage},
			{http.MethodDelete, "cancel-message", authClient, s.handleCancelMessage},
			{http.MethodGet, "messages", authClient, s.handleListMessages},
			{http.MethodGet, "message", authClient, s.handleGetMessage},
			{http.MethodPost, "send-notifications", authClient, s.handleSendNotifications},
		},
	}
}

// The standard's generic message for a missing or malformed field.
const msgInvalidParameters = "缺少必需参数或参数格式错误"

var (
	errTaskIDRequired       = newError(http.StatusBadRequest, "TASK_ID_REQUIRED", "缺少任务ID")
	errTaskNotFound         = newError(http.StatusNotFound, "TASK_NOT_FOUND", "指定的任务不存在或已被删除")
	errTaskUUIDConflict     = newError(http.StatusConflict, "TASK_UUID_CONFLICT", "任务 UUID 已存在，请使用新的 uuid 重新提交")
	errSubscriptionLookup   = newError(http.StatusServiceUnavailable, "PUSH_SUBSCRIPTION_LOOKUP_FAILED", "推送订阅读取失败，请稍后重试")
	errInvalidUpdateData    = newError(http.StatusBadRequest, "INVALID_UPDATE_DATA", "更新数据格式错误")
	errTaskAlreadyCompleted = newError(http.StatusConflict, "TASK_ALREADY_COMPLETED", "任务已完成或已失败，无法更新")
)

func invalidParameters(message string, invalid ...string) *Error {
	return newError(http.StatusBadRequest, "INVALID_PARAMETERS", message).withDetails(map[string]any{"invalidFields": invalid})
}

func missingParameters(missing ...string) *Error {
	return newError(http.StatusBadRequest, "INVALID_PARAMETERS", msgInvalidParameters).withDetails(map[string]any{"missingFields": missing})
}

func invalidTimestamp(message string, details map[string]any) *Error {
	return newError(http.StatusBadRequest, "INVALID_TIMESTAMP", message).withDetails(details)
}

var allowedTypes = []string{"fixed", "prompted", "auto", "instant"}

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
	userID, body, err := s.decryptRequest(w, r)
	if err != nil {
		return err
	}
	req, err := s.validateSchedule(r.Context(), decodeFields(body))
	if err != nil {
		return err
	}
	ctx := r.Context()
	if err := s.admitTask(ctx, userID, req.uuid); err != nil {
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
	devices, err := s.deps.Store.Devices(ctx, userID)
	if err != nil {
		s.log.ErrorContext(ctx, "schedule-message: subscription lookup failed", "err", err)
		return errSubscriptionLookup
	}
	if len(devices) == 0 {
		return errSubscriptionMissing
	}
	raw, err := req.payload.Encode()
	if err != nil {
		return err
	}
	instant := req.payload.MessageType == push.TypeInstant
	n := store.NewTask{UserID: userID, UUID: req.uuid, MessageType: req.payload.MessageType, NextSendAt: req.sendAt,
		Payload: raw, SupersedesUUID: req.supersedesUUID}
	if instant {
		n.LeaseUntil = s.deps.Scheduler.LeaseEnd()
	}
	task, superseded, err := s.deps.Store.InsertTask(ctx, n)
	if errors.Is(err, store.ErrTaskUUIDConflict) {
		return errTaskUUIDConflict
	}
	if err != nil {
		return err
	}
	var supersededField *bool
	if req.supersedesUUID != "" {
		supersededField = &superseded
	}
	if superseded {
		s.discardOutbox(ctx, userID, req.supersedesUUID)
	}
	if !instant {
		s.deps.Scheduler.Wake()
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
	res, ierr := s.deps.Scheduler.DeliverInstant(context.WithoutCancel(ctx), task)
	if ierr != nil {
		return newError(http.StatusInternalServerError, "MESSAGE_SEND_FAILED", "消息发送失败").withDetails(ierr)
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

// validateSchedule applies the standard's checks in its order; the first
// failure wins. Where amsg checks more than upstream (types of userMessage,
// completePrompt and the credentials, apiUrl, metadata, cronExpr), the
// check sits beside the upstream check of the same field.
func (s *Server) validateSchedule(ctx context.Context, f fields) (scheduleRequest, error) {
	var req scheduleRequest
	p := &req.payload

	contactName, ok := f.str("contactName")
	if !ok || contactName == "" {
		return req, missingParameters("contactName")
	}
	mt, _ := f.str("messageType")
	p.MessageType = push.MessageType(mt)
	if !p.MessageType.Valid() {
		return req, newError(http.StatusBadRequest, "INVALID_MESSAGE_TYPE", "消息类型无效").withDetails(struct {
			ProvidedType json.RawMessage `json:"providedType,omitempty"`
			AllowedTypes []string        `json:"allowedTypes"`
		}{f["messageType"], allowedTypes})
	}
	if f.has("immediate") && string(f["immediate"]) != "true" && string(f["immediate"]) != "false" {
		return req, invalidParameters("immediate 必须是布尔值", "immediate")
	}
	immediate := string(f["immediate"]) == "true"
	if immediate && p.MessageType == push.TypeInstant {
		return req, invalidParameters("messageType 'instant' 本就立即投递，不能再带 immediate", "immediate")
	}
	now := s.now()
	rec, _ := f.str("recurrenceType")
	// A cron task without a first time starts at its expression's next
	// time after now, computed once the expression and zone are checked.
	cronStartsItself := rec == string(push.RecurrenceCron) && !immediate && !f.given("firstSendTime")
	switch {
	case cronStartsItself:
	case immediate:
		if f.given("firstSendTime") {
			if _, ok := parseTime(f["firstSendTime"]); !ok {
				return req, invalidTimestamp("时间格式无效", map[string]any{"field": "firstSendTime"})
			}
		}
		req.sendAt = now
	default:
		at, ok := parseTime(f["firstSendTime"])
		if !f.truthy("firstSendTime") || !ok {
			return req, invalidTimestamp("时间格式无效", map[string]any{"field": "firstSendTime"})
		}
		if !at.After(now) {
			return req, invalidTimestamp("时间必须在未来", map[string]any{"field": "firstSendTime", "reason": "must be in the future"})
		}
		req.sendAt = at
	}
	uuid, _ := f.str("uuid")
	if f.given("supersedesUuid") {
		sup, ok := f.str("supersedesUuid")
		if !ok || !anyUUID.MatchString(sup) {
			return req, invalidParameters("supersedesUuid 必须是合法 UUID", "supersedesUuid")
		}
		if f.truthy("uuid") && sup == uuid {
			return req, invalidParameters("supersedesUuid 不能与本条任务的 uuid 相同", "supersedesUuid")
		}
		req.supersedesUUID = sup
	}
	// Clients of the older generation send their subscription with every
	// task; amsg keeps it as one of the user's devices instead of refusing.
	if f.given("pushSubscription") {
		if sub, ok := subscriptionShape(f["pushSubscription"]); !ok || s.checkSubscription(ctx, sub, "pushSubscription.") != nil {
			return req, newError(http.StatusBadRequest, "INVALID_PUSH_SUBSCRIPTION", "推送订阅格式无效").
				withDetails(map[string]any{"invalidFields": []string{"pushSubscription"}})
		}
		req.subscription = f["pushSubscription"]
	}
	if f.truthy("recurrenceType") && !push.Recurrence(rec).Valid() {
		return req, invalidParameters(msgInvalidParameters, "recurrenceType")
	}
	p.RecurrenceType = push.Recurrence(rec)
	if rec == "" {
		p.RecurrenceType = push.RecurrenceNone
	}
	if f.given("tzId") {
		tz, ok := f.str("tzId")
		if _, err := scheduler.LoadZone(tz); !ok || err != nil {
			return req, invalidParameters("tzId 必须是可用的 IANA 时区 id（如 Asia/Tokyo）", "tzId")
		}
		p.TzID = &tz
	}
	if err := checkCronExpr(f, newError(http.StatusBadRequest, "INVALID_PARAMETERS", "")); err != nil {
		return req, err
	}
	p.CronExpr, _ = f.str("cronExpr")
	if p.RecurrenceType == push.RecurrenceCron && p.CronExpr == "" {
		return req, invalidParameters(msgCronRequired, "cronExpr")
	}
	if cronStartsItself {
		var tz string
		if p.TzID != nil {
			tz = *p.TzID
		}
		r, err := scheduler.ParseRecurrence(push.RecurrenceCron, tz, p.CronExpr)
		if err != nil {
			return req, invalidParameters(msgCronInvalid, "cronExpr")
		}
		req.sendAt, _ = r.NextAfter(now, now)
	}
	if f.given("maxTokens") {
		n, ok := f.positiveInt("maxTokens")
		if !ok {
			return req, invalidParameters(msgInvalidParameters, "maxTokens")
		}
		p.MaxTokens = &n
	}
	if f.given("userMessage") {
		if p.UserMessage = f.stringPtr("userMessage"); p.UserMessage == nil {
			return req, invalidParameters(msgInvalidParameters, "userMessage (must be a string)")
		}
	}
	if p.MessageType == push.TypeFixed && !f.truthy("userMessage") {
		return req, missingParameters("userMessage (required for fixed type)")
	}
	if err := checkPrompt(f, newError(http.StatusBadRequest, "INVALID_PARAMETERS", "")); err != nil {
		return req, err
	}
	hasPrompt := (f.given("completePrompt") && string(f["completePrompt"]) != `""`) || f.given("messages")
	if p.MessageType == push.TypePrompted || p.MessageType == push.TypeAuto {
		var missing []string
		if !hasPrompt {
			missing = append(missing, "completePrompt or messages")
		}
		for _, k := range []string{"apiUrl", "apiKey", "primaryModel"} {
			if !f.truthy(k) {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			return req, missingParameters(missing...)
		}
	}
	if err := checkCredentials(f, newError(http.StatusBadRequest, "INVALID_PARAMETERS", msgInvalidParameters)); err != nil {
		return req, err
	}
	if p.MessageType == push.TypeInstant {
		if f.truthy("recurrenceType") && p.RecurrenceType != push.RecurrenceNone {
			return req, invalidParameters("instant 类型的 recurrenceType 必须为 none", `recurrenceType (must be "none" for instant type)`)
		}
		aiConfig := hasPrompt && f.truthy("apiUrl") && f.truthy("apiKey") && f.truthy("primaryModel")
		if !aiConfig && !f.truthy("userMessage") {
			return req, newError(http.StatusBadRequest, "INVALID_PARAMETERS", "instant 类型必须提供 userMessage 或完整的 AI 配置").
				withDetails(map[string]any{"missingFields": []string{"userMessage or ((completePrompt | messages) + apiUrl + apiKey + primaryModel)"}})
		}
	}
	if f.given("temperature") {
		t, ok := f.number("temperature")
		if !ok {
			return req, invalidParameters(msgInvalidParameters, "temperature (must be a finite number)")
		}
		p.Temperature = &t
	}
	p.AvatarURL = s.avatarURL(f)
	if f.truthy("uuid") && !anyUUID.MatchString(uuid) {
		return req, invalidParameters(msgInvalidParameters, "uuid (invalid UUID format)")
	}
	p.MessageSubtype = push.DefaultSubtype
	if f.given("messageSubtype") {
		sub, ok := f.str("messageSubtype")
		if !ok {
			return req, invalidParameters(msgInvalidParameters, "messageSubtype")
		}
		if sub != "" {
			p.MessageSubtype = sub
		}
	}
	if err := loop.ValidateSplitPattern(f["splitPattern"]); err != nil {
		return req, invalidParameters(err.Error(), "splitPattern")
	}
	if f.given("llmExtraBody") && push.JSONKind(f["llmExtraBody"]) != '{' {
		return req, invalidParameters("llmExtraBody 必须是普通对象", "llmExtraBody")
	}
	// Upstream stores any metadata; the pushes it is copied into must carry
	// an object, so anything else is refused now rather than at every fire.
	if f.given("metadata") && push.JSONKind(f["metadata"]) != '{' {
		return req, invalidParameters("metadata 必须是普通对象", "metadata")
	}

	p.ContactName = contactName
	p.FirstSendTime = push.FormatTimestamp(req.sendAt)
	if f.truthy("completePrompt") {
		p.CompletePrompt = f.stringPtr("completePrompt")
	}
	p.Messages = f.raw("messages")
	for k, dst := range map[string]**string{"apiUrl": &p.APIURL, "apiKey": &p.APIKey, "primaryModel": &p.PrimaryModel} {
		if f.truthy(k) {
			*dst = f.stringPtr(k)
		}
	}
	if p.UserMessage != nil && *p.UserMessage == "" {
		p.UserMessage = nil // stored as `userMessage || null`
	}
	p.SplitPattern = f.raw("splitPattern")
	p.LLMExtraBody = f.raw("llmExtraBody")
	p.Metadata = f.raw("metadata")
	req.uuid = uuid
	if !f.truthy("uuid") {
		req.uuid = push.NewUUID()
	}
	return req, nil
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

// Messages of the cronExpr checks, amsg's own.
const (
	msgCronRequired = `recurrenceType "cron" 需要 cronExpr（五段 cron 表达式，如 "0 9 * * 1-5"）`
	msgCronInvalid  = `cronExpr 必须是五段 cron 表达式，如 "0 9 * * 1-5"`
	msgCronNotCron  = `cronExpr 只用于 recurrenceType "cron"`
)

// checkCronExpr checks a cronExpr member: a valid five-field expression, and
// not beside a recurrenceType other than cron. null is allowed (on update it
// clears the expression). base carries the endpoint's status and code.
func checkCronExpr(f fields, base *Error) error {
	if !f.given("cronExpr") {
		return nil
	}
	expr, ok := f.str("cronExpr")
	if _, err := scheduler.ParseCron(expr); !ok || err != nil {
		return withMessage(base, msgCronInvalid, "cronExpr")
	}
	if rec, _ := f.str("recurrenceType"); f.truthy("recurrenceType") && push.Recurrence(rec) != push.RecurrenceCron {
		return withMessage(base, msgCronNotCron, "cronExpr")
	}
	return nil
}

// checkPrompt applies the prompt rules shared by schedule and update:
// completePrompt and messages exclude each other, messages has the
// standard's shape, and completePrompt is a string.
func checkPrompt(f fields, base *Error) error {
	if f.truthy("completePrompt") && f.given("messages") {
		return withMessage(base, "exactly one of `completePrompt` or `messages` must be provided（两者不能同时出现）", "completePrompt", "messages")
	}
	if f.given("messages") {
		if err := loop.ValidateMessages(f["messages"]); err != nil {
			return withMessage(base, err.English(), "messages")
		}
	}
	if f.truthy("completePrompt") && f.stringPtr("completePrompt") == nil {
		return withMessage(base, msgInvalidParameters, "completePrompt")
	}
	return nil
}

// checkCredentials checks what upstream only checks for truthiness: apiUrl,
// apiKey and primaryModel, when given, are strings, and apiUrl normalizes to
// a chat-completions URL, so a typo fails the request and not every fire.
// base carries the endpoint's status and code, and its message is the one
// for a value that is not a string.
func checkCredentials(f fields, base *Error) error {
	for _, k := range []string{"apiUrl", "apiKey", "primaryModel"} {
		if f.truthy(k) && f.stringPtr(k) == nil {
			return withMessage(base, base.Message, k)
		}
	}
	if u, ok := f.str("apiUrl"); ok && u != "" {
		if _, err := loop.NormalizeAPIURL(u); err != nil {
			return withMessage(base, err.Error(), "apiUrl")
		}
	}
	return nil
}

// withMessage is base with message and invalidFields details.
func withMessage(base *Error, message string, invalid ...string) *Error {
	e := *base
	e.Message = message
	e.Details = map[string]any{"invalidFields": invalid}
	return &e
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

// handleCancelMessage deletes a task in any status.
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
	if err != nil {
		return err
	}
	if !deleted {
		return errTaskNotFound
	}
	s.discardOutbox(r.Context(), userID, id)
	writeData(w, http.StatusOK, struct {
		UUID      string `json:"uuid"`
		Message   string `json:"message"`
		DeletedAt string `json:"deletedAt"`
	}{id, "任务已成功取消", push.FormatTimestamp(s.now())})
	return nil
}

// discardOutbox drops the pushes of a cancelled or superseded task that
// never went out, so a client catching up later does not get the rest of a
// burst the user cancelled.
func (s *Server) discardOutbox(ctx context.Context, userID, taskUUID string) {
	if _, err := s.deps.Store.DiscardUndeliveredOutbox(ctx, userID, taskUUID); err != nil {
		s.log.WarnContext(ctx, "discarding a cancelled task's undelivered outbox rows failed", "err", err)
	}
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
