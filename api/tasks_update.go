package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"amsg/loop"
	"amsg/push"
	"amsg/scheduler"
	"amsg/store"
)

// handleUpdateMessage patches a pending task. Its gate runs in the
// standard's own order (the task id first, then the user id, then the
// encryption headers), and every decryption problem is DECRYPTION_FAILED.
func (s *Server) handleUpdateMessage(w http.ResponseWriter, r *http.Request) error {
	id, err := requireTaskID(r)
	if err != nil {
		return err
	}
	if _, err := requireUserID(r); err != nil {
		return err
	}
	// The user id is valid, so requireEncryptionHeaders's own user-id check
	// passes: this checks X-Payload-Encrypted, then X-Encryption-Version.
	userID, err := requireEncryptionHeaders(r)
	if err != nil {
		return err
	}
	body, err := s.openBody(w, r, userID, s.cfg.MaxBodyBytes)
	switch {
	case errors.Is(err, errPlaintextNotObject):
		return errInvalidUpdateData
	case errors.Is(err, errPlaintextNotJSON):
		return errDecryptionFailed
	case err != nil:
		return err
	}
	f := decodeUpdate(body)
	nextSendAt, err := s.validateUpdate(f)
	if err != nil {
		return err
	}
	if u, ok := f.str("apiUrl"); ok && f.truthy("apiUrl") {
		if err := s.checkAPIURL(r.Context(), u); err != nil {
			return err
		}
	}
	task, err := s.deps.Store.UpdatePendingTask(r.Context(), userID, id, func(t store.Task) (store.TaskUpdate, error) {
		p, err := scheduler.TaskPayload(t)
		if err != nil {
			return store.TaskUpdate{}, err
		}
		if err := mergeUpdate(&p, f); err != nil {
			return store.TaskUpdate{}, err
		}
		raw, err := p.Encode()
		return store.TaskUpdate{Payload: raw, NextSendAt: nextSendAt}, err
	})
	switch {
	case errors.Is(err, store.ErrTaskNotFound):
		return errTaskNotFound
	case errors.Is(err, store.ErrTaskNotPending):
		return errTaskAlreadyCompleted
	case err != nil:
		return err
	}
	s.deps.Scheduler.Wake()
	writeData(w, http.StatusOK, struct {
		UUID          string   `json:"uuid"`
		UpdatedFields []string `json:"updatedFields"`
		UpdatedAt     string   `json:"updatedAt"`
	}{task.UUID, f.keys, push.FormatTimestamp(task.UpdatedAt)})
	return nil
}

// validateUpdate checks the patch in the standard's order and returns the
// new time, zero when unchanged. An invalid avatarUrl is dropped from the
// patch (the stored one stays) and from updatedFields.
func (s *Server) validateUpdate(f *updateFields) (time.Time, error) {
	bad := func(message string, invalid ...string) error {
		return withMessage(errInvalidUpdateData, message, invalid...)
	}
	var next time.Time
	if f.truthy("nextSendAt") {
		t, ok := parseTime(f.fields["nextSendAt"])
		if !ok {
			return time.Time{}, bad("更新数据格式错误", "nextSendAt")
		}
		next = t
	}
	if f.has("contactName") {
		if name, ok := f.str("contactName"); !ok || strings.TrimSpace(name) == "" {
			return time.Time{}, bad("contactName 必须是非空字符串", "contactName")
		}
	}
	if rec, _ := f.str("recurrenceType"); f.truthy("recurrenceType") && !push.Recurrence(rec).Valid() {
		return time.Time{}, bad("更新数据格式错误", "recurrenceType")
	}
	if f.given("tzId") {
		if tz, ok := f.str("tzId"); !ok || !validZone(tz) {
			return time.Time{}, bad("tzId 必须是可用的 IANA 时区 id（如 Asia/Tokyo），或 null 表示按 UTC 推进", "tzId")
		}
	}
	if err := checkCronExpr(f.fields, errInvalidUpdateData); err != nil {
		return time.Time{}, err
	}
	if f.given("maxTokens") {
		if _, ok := f.positiveInt("maxTokens"); !ok {
			return time.Time{}, bad("更新数据格式错误", "maxTokens")
		}
	}
	if f.truthy("completePrompt") && f.given("messages") {
		return time.Time{}, bad("completePrompt 与 messages 不能同时更新（二选一）", "completePrompt", "messages")
	}
	if err := checkPrompt(f.fields, errInvalidUpdateData); err != nil {
		return time.Time{}, err
	}
	if f.given("temperature") {
		if _, ok := f.number("temperature"); !ok {
			return time.Time{}, bad("更新数据格式错误", "temperature")
		}
	}
	if f.has("splitPattern") {
		if err := loop.ValidateSplitPattern(f.fields["splitPattern"]); err != nil {
			return time.Time{}, bad(err.Error(), "splitPattern")
		}
	}
	if f.given("avatarUrl") && s.avatarURL(f.fields) == nil {
		delete(f.fields, "avatarUrl")
		f.keys = slices.DeleteFunc(f.keys, func(k string) bool { return k == "avatarUrl" })
	}
	if f.has("pushSubscription") {
		return time.Time{}, newError(http.StatusBadRequest, "PUSH_SUBSCRIPTION_NOT_ACCEPTED",
			"pushSubscription 不再随任务更新，改用 PUT /push-subscription 覆盖用户级订阅").
			withDetails(map[string]any{"invalidFields": []string{"pushSubscription"}})
	}
	// amsg checks the types upstream stores blindly: the payload it fires
	// from must hold strings and a metadata object.
	if f.truthy("userMessage") && f.stringPtr("userMessage") == nil {
		return time.Time{}, bad("更新数据格式错误", "userMessage")
	}
	if err := checkCredentials(f.fields, errInvalidUpdateData); err != nil {
		return time.Time{}, err
	}
	if f.truthy("metadata") && push.JSONKind(f.fields["metadata"]) != '{' {
		return time.Time{}, bad("metadata 必须是普通对象", "metadata")
	}
	return next, nil
}

func validZone(name string) bool {
	_, err := scheduler.LoadZone(name)
	return err == nil
}

// mergeUpdate applies a validated patch to a stored payload with the
// standard's semantics: contactName, tzId, maxTokens, temperature and
// splitPattern are set when present (null included); userMessage,
// recurrenceType, avatarUrl, metadata and the credentials only when truthy;
// a new prompt replaces the other kind. messageType, messageSubtype,
// llmExtraBody and firstSendTime do not change.
func mergeUpdate(p *scheduler.Payload, f *updateFields) error {
	switch {
	case f.truthy("completePrompt"):
		p.CompletePrompt, p.Messages = f.stringPtr("completePrompt"), nil
	case f.given("messages"):
		p.Messages, p.CompletePrompt = f.fields["messages"], nil
	}
	if f.has("contactName") {
		p.ContactName, _ = f.str("contactName")
	}
	if f.has("tzId") {
		p.TzID = f.stringPtr("tzId")
	}
	if f.has("maxTokens") {
		p.MaxTokens = nil
		if n, ok := f.positiveInt("maxTokens"); ok {
			p.MaxTokens = &n
		}
	}
	if f.has("temperature") {
		p.Temperature = nil
		if t, ok := f.number("temperature"); ok {
			p.Temperature = &t
		}
	}
	if f.has("splitPattern") {
		p.SplitPattern = f.raw("splitPattern")
	}
	for k, dst := range map[string]**string{"userMessage": &p.UserMessage, "avatarUrl": &p.AvatarURL,
		"apiUrl": &p.APIURL, "apiKey": &p.APIKey, "primaryModel": &p.PrimaryModel} {
		if f.truthy(k) {
			*dst = f.stringPtr(k)
		}
	}
	if f.truthy("recurrenceType") {
		rec, _ := f.str("recurrenceType")
		p.RecurrenceType = push.Recurrence(rec)
	}
	if f.truthy("metadata") {
		p.Metadata = f.fields["metadata"]
	}
	if f.has("cronExpr") {
		p.CronExpr, _ = f.str("cronExpr")
	}
	switch {
	case p.RecurrenceType != push.RecurrenceCron:
		p.CronExpr = ""
	case p.CronExpr == "":
		return withMessage(errInvalidUpdateData, msgCronRequired, "cronExpr")
	}
	return nil
}

// updateFields is an update patch: its members and their keys in the order
// sent, which updatedFields echoes.
type updateFields struct {
	fields
	keys []string
}

func decodeUpdate(raw json.RawMessage) *updateFields {
	return &updateFields{fields: decodeFields(raw), keys: objectKeys(raw)}
}
