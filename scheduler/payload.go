package scheduler

import (
	"encoding/json"
	"fmt"

	"amsg/push"
	"amsg/store"
)

// Payload is a task's stored JSON, sealed at rest with the user key: the
// standard's keys, in its order, and nothing else from the request. JSON
// null and absent both read as nil here; every key is written, null when
// unset, as upstream stores it. cronExpr is amsg's and is written only for
// cron tasks.
type Payload struct {
	ContactName    string           `json:"contactName"`
	AvatarURL      *string          `json:"avatarUrl"`
	MessageType    push.MessageType `json:"messageType"`
	MessageSubtype string           `json:"messageSubtype"`
	UserMessage    *string          `json:"userMessage"`
	// FirstSendTime is the effective first send time in the wire format.
	FirstSendTime  string          `json:"firstSendTime"`
	RecurrenceType push.Recurrence `json:"recurrenceType"`
	CronExpr       string          `json:"cronExpr,omitempty"`
	TzID           *string         `json:"tzId"`
	APIURL         *string         `json:"apiUrl"`
	APIKey         *string         `json:"apiKey"`
	PrimaryModel   *string         `json:"primaryModel"`
	CompletePrompt *string         `json:"completePrompt"`
	Messages       json.RawMessage `json:"messages"` // an array, or nil
	MaxTokens      *int            `json:"maxTokens"`
	Temperature    *float64        `json:"temperature"`
	SplitPattern   json.RawMessage `json:"splitPattern"` // a string or an array of strings, or nil
	LLMExtraBody   json.RawMessage `json:"llmExtraBody"` // an object, or nil
	Metadata       json.RawMessage `json:"metadata"`     // an object
	// Priority is amsg's: PriorityCritical passes quiet hours and the daily
	// limit (quiet.go); written only when given.
	Priority string `json:"priority,omitempty"`

	// notification is the display directive of the occurrence's pushes,
	// set by the guards on the release of a deferred occurrence.
	notification *push.Notification
	// CredRefs names stored LLM credentials by purpose ({chat: credId}),
	// read when the task fires (resolveCredentials).
	CredRefs map[string]string `json:"credRefs,omitempty"`
}

// DecodePayload reads a stored payload. Keys it does not know (lastError and
// pushSubscription of rows written by upstream) are ignored.
func DecodePayload(raw json.RawMessage) (Payload, error) {
	var p Payload
	if !decodeStoredPayload(raw, &p) {
		p = Payload{}
		if err := json.Unmarshal(raw, &p); err != nil {
			return Payload{}, fmt.Errorf("task payload: %w", err)
		}
	}
	if string(p.Messages) == "null" {
		p.Messages = nil
	}
	if string(p.SplitPattern) == "null" {
		p.SplitPattern = nil
	}
	if string(p.LLMExtraBody) == "null" {
		p.LLMExtraBody = nil
	}
	if len(p.Metadata) == 0 || string(p.Metadata) == "null" {
		p.Metadata = json.RawMessage(`{}`)
	}
	return p, nil
}

// TaskPayload reads a stored task's payload: the error the store met
// decrypting it, or DecodePayload's.
func TaskPayload(t store.Task) (Payload, error) {
	if t.PayloadErr != nil {
		return Payload{}, t.PayloadErr
	}
	return DecodePayload(t.Payload)
}

// Encode returns the payload's JSON for the store.
func (p Payload) Encode() (json.RawMessage, error) {
	if p.Metadata == nil {
		p.Metadata = json.RawMessage(`{}`)
	}
	return json.Marshal(p)
}

// Recurrence returns the payload's recurrence.
func (p Payload) Recurrence() (Recurrence, error) {
	return ParseRecurrence(p.RecurrenceType, deref(p.TzID), p.CronExpr)
}

// HasPrompt reports whether the payload carries a prompt: a non-empty
// completePrompt or a messages array.
func (p Payload) HasPrompt() bool {
	return deref(p.CompletePrompt) != "" || p.Messages != nil
}

// HasAIConfig reports whether the payload can call an LLM: a prompt, and
// apiUrl, apiKey and primaryModel or a credRefs.chat naming them.
func (p Payload) HasAIConfig() bool {
	return p.HasPrompt() && (p.ChatCredRef() != "" || deref(p.APIURL) != "" && deref(p.APIKey) != "" && deref(p.PrimaryModel) != "")
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
