package api

import (
	"encoding/json"
	"errors"
	"net/http"

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
	body, err := s.openBody(w, r, userID, s.taskBodyLimit())
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
	apiURL, _ := f.str("apiUrl") // "" when not given: nothing to check
	if err := s.checkAPIURL(r.Context(), apiURL); err != nil {
		return err
	}
	refs, err := updateCredRefs(f)
	if err != nil {
		return err
	}
	if err := s.requireCredentials(r.Context(), userID, refs); err != nil {
		return err
	}
	task, err := s.deps.Store.UpdatePendingTask(r.Context(), userID, id, func(t store.Task) (store.TaskUpdate, error) {
		p, err := scheduler.TaskPayload(t)
		if err != nil {
			return store.TaskUpdate{}, err
		}
		if err := mergeCredRefs(&p, f, refs); err != nil {
			return store.TaskUpdate{}, err
		}
		if err := mergeUpdate(&p, f); err != nil {
			return store.TaskUpdate{}, err
		}
		raw, err := p.Encode()
		if err == nil {
			err = checkTaskSize(raw, len(t.Payload))
		}
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
		p.Temperature, _ = f.optionalNumber("temperature")
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
