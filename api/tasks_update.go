package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"time"

	"amsg/push"
	"amsg/push/errcode"
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
	task, stored, err := s.updateTask(r.Context(), userID, id, f, refs, nextSendAt)
	switch {
	case errors.Is(err, store.ErrTaskNotFound):
		return errTaskNotFound
	case errors.Is(err, store.ErrTaskNotPending):
		return errTaskAlreadyCompleted
	case err != nil:
		return err
	}
	s.deps.Scheduler.WakeFor(task.NextSendAt)
	writeData(w, http.StatusOK, struct {
		UUID          string   `json:"uuid"`
		UpdatedFields []string `json:"updatedFields"`
		UpdatedAt     string   `json:"updatedAt"`
	}{task.UUID, stored, push.FormatTimestamp(task.UpdatedAt)})
	return nil
}

// updateTask merges the patch f (and the credential references refs, nil
// when the patch names none) into userID's pending task id and returns the
// task and the keys stored. An occurrence that has begun (being
// delivered, or waiting to retry) keeps what it sends: a change of its
// timing while it is delivered is errTaskInFlight, and before any other
// edit is stored the occurrence is committed (Scheduler.CommitOccurrence),
// outside the update's transaction, which then runs again.
func (s *Server) updateTask(ctx context.Context, userID, id string, f *updateFields, refs map[string]string, nextSendAt time.Time) (store.Task, []string, error) {
	var committed time.Time // the occurrence committed
	var begun store.Task    // the task whose occurrence must be committed first
	for range maxCommitRounds {
		var stored []string
		task, err := s.deps.Store.UpdatePendingTask(ctx, userID, id, func(t store.Task) (store.TaskUpdate, error) {
			p, err := scheduler.TaskPayload(t)
			if err != nil {
				return store.TaskUpdate{}, err
			}
			if err := mergeCredRefs(&p, f, refs); err != nil {
				return store.TaskUpdate{}, err
			}
			before := p
			if stored, err = mergeUpdate(&p, f); err != nil {
				return store.TaskUpdate{}, err
			}
			if refs != nil {
				stored = withCredRefs(stored, f)
			}
			raw, err := p.Encode()
			if err == nil {
				err = checkTaskSize(raw, len(t.Payload))
			}
			if err != nil {
				return store.TaskUpdate{}, err
			}
			// A task this process claimed ahead of its time is taken back
			// (Scheduler.Unclaim): nothing of it is under way.
			inFlight := t.LeaseUntil.After(s.now())
			unclaimed := inFlight && s.deps.Scheduler.Unclaim(t.Lease())
			inFlight = inFlight && !unclaimed
			switch {
			case inFlight && movesOccurrence(before, p, t.NextSendAt, nextSendAt):
				return store.TaskUpdate{}, errTaskInFlight
			case (inFlight || t.RetryCount > 0) && !t.NextSendAt.Equal(committed):
				begun = t
				return store.TaskUpdate{}, errCommitFirst
			}
			return store.TaskUpdate{Payload: raw, NextSendAt: nextSendAt, ReleaseLease: unclaimed}, nil
		})
		if !errors.Is(err, errCommitFirst) {
			return task, stored, err
		}
		if err := s.deps.Scheduler.CommitOccurrence(ctx, begun); err != nil {
			return store.Task{}, nil, err
		}
		committed = begun.NextSendAt
	}
	// Occurrences kept beginning under the update: it is in flight.
	return store.Task{}, nil, errTaskInFlight
}

// maxCommitRounds bounds updateTask's rounds: each commits an occurrence
// that began since the last, which happens about once per occurrence.
const maxCommitRounds = 3

// errCommitFirst ends an update's transaction to commit the occurrence
// under way first; it never leaves updateTask.
var errCommitFirst = errors.New("commit the occurrence under way first")

// errTaskInFlight refuses to move a task whose occurrence is being
// delivered: the occurrence is committed, and moving the task under it
// would deliver a one-shot task twice (upstream's 409).
var errTaskInFlight = fail(errcode.TaskInFlight)

// movesOccurrence reports whether an update changes when the task fires:
// its next time, recurrence, cron expression or time zone.
func movesOccurrence(before, after scheduler.Payload, next, newNext time.Time) bool {
	return (!newNext.IsZero() && !newNext.Equal(next)) || before.RecurrenceType != after.RecurrenceType ||
		before.CronExpr != after.CronExpr || !equalPtr(before.TzID, after.TzID)
}

func equalPtr[T comparable](a, b *T) bool { return a == b || (a != nil && b != nil && *a == *b) }

// mergeUpdate applies a validated patch to a stored payload with the
// standard's semantics and returns the keys it stored, in the order sent:
// contactName, tzId, maxTokens, temperature, splitPattern, messageSubtype,
// llmExtraBody and amsg's priority are set when present (null included:
// the default for the last three); userMessage, recurrenceType, avatarUrl, metadata and the
// credentials only when truthy; a new prompt replaces the other kind;
// nextSendAt (written by the caller) when truthy. messageType and
// firstSendTime do not change, and keys the standard does not know are
// not stored.
func mergeUpdate(p *scheduler.Payload, f *updateFields) ([]string, error) {
	stored := map[string]bool{"nextSendAt": f.truthy("nextSendAt")}
	switch {
	case f.truthy("completePrompt"):
		p.CompletePrompt, p.Messages = f.stringPtr("completePrompt"), nil
		stored["completePrompt"] = true
	case f.given("messages"):
		p.Messages, p.CompletePrompt = f.fields["messages"], nil
		stored["messages"] = true
	}
	present := func(k string) bool {
		stored[k] = stored[k] || f.has(k)
		return f.has(k)
	}
	truthy := func(k string) bool {
		stored[k] = stored[k] || f.truthy(k)
		return f.truthy(k)
	}
	if present("contactName") {
		p.ContactName, _ = f.str("contactName")
	}
	if present("tzId") {
		p.TzID = f.stringPtr("tzId")
	}
	if present("maxTokens") {
		p.MaxTokens = nil
		if n, ok := f.positiveInt("maxTokens"); ok {
			p.MaxTokens = &n
		}
	}
	if present("temperature") {
		p.Temperature, _ = f.optionalNumber("temperature")
	}
	if present("splitPattern") {
		p.SplitPattern = f.raw("splitPattern")
	}
	if present("messageSubtype") {
		sub, _ := f.optionalString("messageSubtype")
		p.MessageSubtype = cmp.Or(sub, push.DefaultSubtype)
	}
	if present("llmExtraBody") {
		p.LLMExtraBody = f.raw("llmExtraBody")
	}
	if present("priority") {
		p.Priority, _ = decodePriority(f.fields["priority"])
	}
	for k, dst := range map[string]**string{"userMessage": &p.UserMessage, "avatarUrl": &p.AvatarURL,
		"apiUrl": &p.APIURL, "apiKey": &p.APIKey, "primaryModel": &p.PrimaryModel} {
		if truthy(k) {
			*dst = f.stringPtr(k)
		}
	}
	if truthy("recurrenceType") {
		rec, _ := f.str("recurrenceType")
		p.RecurrenceType = push.Recurrence(rec)
	}
	if truthy("metadata") {
		p.Metadata = f.fields["metadata"]
	}
	if present("cronExpr") {
		p.CronExpr, _ = f.str("cronExpr")
	}
	switch {
	case p.RecurrenceType != push.RecurrenceCron:
		p.CronExpr = ""
	case p.CronExpr == "":
		return nil, invalidUpdate(errcode.CronRequired, "cronExpr")
	}
	keys := slices.DeleteFunc(slices.Clone(f.keys), func(k string) bool { return !stored[k] })
	return keys, nil
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
