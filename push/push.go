package push

import (
	"encoding/json"
	"time"
)

// Push is one business push: *ContentPush, *ReasoningPush, *ToolRequestPush
// or *ErrorPush. The interface is closed; switch on the concrete type or on
// Kind.
type Push interface {
	// Kind is the push's messageKind.
	Kind() Kind
	// CommonFields returns the members every push carries, for code that
	// handles pushes of any kind (delivery, dedupe, the scheduler's stamps).
	CommonFields() *Common
	json.Marshaler
	json.Unmarshaler

	// bindings lists the push's members in wire order (see codec.go).
	bindings() []binding
}

// Common holds the members every push carries. MessageType, Source,
// MessageID, SessionID and Timestamp are required by the standard; the rest
// are optional.
type Common struct {
	MessageType MessageType
	Source      Source
	// MessageID is unique per push and stable across retries of the same
	// occurrence: the service worker dedupes on it.
	MessageID string
	// SessionID is shared by the reasoning push and the content burst of one
	// LLM round, and by every iteration of one agent loop. Opaque.
	SessionID string
	// Timestamp is the producer clock in RFC 3339, as FormatTimestamp writes
	// it. It is kept as the string that arrived so a push re-encodes to the
	// same bytes.
	Timestamp string
	// MessageSubtype is the caller's business namespace; producers write
	// DefaultSubtype when the caller gives none.
	MessageSubtype Optional[string]
	// Metadata belongs to the caller: amsg never writes into it. Raw JSON,
	// nil when absent.
	Metadata json.RawMessage
	// Notification is a hint for the service worker's notification renderer;
	// nil when absent. A null notification, which the standard rejects,
	// decodes as absent.
	Notification *Notification
	TaskIdentity
	// Unknown holds members this package does not know, in the order they
	// arrived. Encode writes them after the known members; a key that
	// duplicates a known member or another unknown one is an encoding error.
	Unknown []Member
}

// CommonFields returns c; it makes every push's Common reachable through the
// Push interface.
func (c *Common) CommonFields() *Common { return c }

// Member is one JSON object member kept verbatim: a key and its raw value.
type Member struct {
	Key   string
	Value json.RawMessage
}

// ContentPush is final user-facing content: one sentence or segment of a
// reply, or a reminder.
type ContentPush struct {
	Common
	// Message is the text to show; it may be empty.
	Message     string
	Title       Optional[string]
	ContactName Optional[string]
	AvatarURL   Optional[string]
	// MessageIndex (1-based) and TotalMessages place the push in an N-split
	// burst.
	MessageIndex  Optional[int]
	TotalMessages Optional[int]
}

// ReasoningPush carries the LLM's reasoning for one round, sent before the
// content burst of the same SessionID. It has no index fields: reasoning is
// one push per round, and an oversized one goes out as multipart chunks.
// (Index fields that arrive on the wire are kept in Unknown.)
type ReasoningPush struct {
	Common
	ReasoningContent string
	Title            Optional[string]
	ContactName      Optional[string]
	AvatarURL        Optional[string]
}

// ToolRequestPush asks the browser to run tools; the client answers through
// /continue.
type ToolRequestPush struct {
	Common
	// ToolCalls is the OpenAI choices[0].message.tool_calls array, passed
	// through as raw JSON.
	ToolCalls   json.RawMessage
	Title       Optional[string]
	ContactName Optional[string]
	// Message is an optional human-readable label for the request.
	Message Optional[string]
}

// ErrorPush reports a producer-level failure (HOOK_THREW, LOOP_EXCEEDED,
// LLM_CALL_FAILED, …). It never carries the legacy `type` member.
type ErrorPush struct {
	Common
	Code    string
	Message string
	// Iteration is the agent-loop iteration the error happened in.
	Iteration Optional[int]
	// LLMStatus and ProviderCode are what the LLM answered when its call
	// failed: the HTTP status, and the code of its error body (upstream
	// -next's error details).
	LLMStatus    Optional[int]
	ProviderCode Optional[string]
}

// Kind returns KindContent.
func (*ContentPush) Kind() Kind { return KindContent }

// Kind returns KindReasoning.
func (*ReasoningPush) Kind() Kind { return KindReasoning }

// Kind returns KindToolRequest.
func (*ToolRequestPush) Kind() Kind { return KindToolRequest }

// Kind returns KindError.
func (*ErrorPush) Kind() Kind { return KindError }

// The bindings below are the single list of each kind's wire members, in
// wire order; doc.go says how to add one.

// bindingsRoom is more members than any kind binds (ContentPush: 18), so
// that a kind's bindings take one allocation.
const bindingsRoom = 24

// head starts a kind's bindings with the common members before its own.
func (c *Common) head() []binding {
	b := make([]binding, 0, bindingsRoom)
	return append(b,
		binding{"messageType", &c.MessageType},
		binding{"source", &c.Source},
		binding{"messageId", &c.MessageID},
		binding{"sessionId", &c.SessionID},
		binding{"timestamp", &c.Timestamp},
	)
}

// tail ends a kind's bindings with the common members after its own.
func (c *Common) tail(b []binding) []binding {
	return append(b,
		binding{"taskId", &c.TaskID},
		binding{"taskUuid", &c.TaskUUID},
		binding{"recurrenceType", &c.RecurrenceType},
		binding{"occurrenceMs", &c.OccurrenceMs},
		binding{"metadata", &c.Metadata},
		binding{"notification", &c.Notification},
	)
}

func (p *ContentPush) bindings() []binding {
	b := p.head()
	b = append(b,
		binding{"message", (*requiredString)(&p.Message)},
		binding{"title", &p.Title},
		binding{"contactName", &p.ContactName},
		binding{"avatarUrl", &p.AvatarURL},
		binding{"messageSubtype", &p.MessageSubtype},
		binding{"messageIndex", &p.MessageIndex},
		binding{"totalMessages", &p.TotalMessages},
	)
	return p.tail(b)
}

func (p *ReasoningPush) bindings() []binding {
	b := p.head()
	b = append(b,
		binding{"reasoningContent", &p.ReasoningContent},
		binding{"title", &p.Title},
		binding{"contactName", &p.ContactName},
		binding{"avatarUrl", &p.AvatarURL},
		binding{"messageSubtype", &p.MessageSubtype},
	)
	return p.tail(b)
}

func (p *ToolRequestPush) bindings() []binding {
	b := p.head()
	b = append(b,
		binding{"toolCalls", &p.ToolCalls},
		binding{"title", &p.Title},
		binding{"contactName", &p.ContactName},
		binding{"message", &p.Message},
		binding{"messageSubtype", &p.MessageSubtype},
	)
	return p.tail(b)
}

func (p *ErrorPush) bindings() []binding {
	b := p.head()
	b = append(b,
		binding{"code", &p.Code},
		binding{"message", (*requiredString)(&p.Message)},
		binding{"iteration", &p.Iteration},
		binding{"llmStatus", &p.LLMStatus},
		binding{"providerCode", &p.ProviderCode},
		binding{"messageSubtype", &p.MessageSubtype},
	)
	return p.tail(b)
}

// MarshalJSON encodes p as Encode does. json.Marshal HTML-escapes what it
// returns; use Encode for bytes that go on the wire.
func (p ContentPush) MarshalJSON() ([]byte, error) { return Encode(&p) }

// MarshalJSON encodes p as Encode does. json.Marshal HTML-escapes what it
// returns; use Encode for bytes that go on the wire.
func (p ReasoningPush) MarshalJSON() ([]byte, error) { return Encode(&p) }

// MarshalJSON encodes p as Encode does. json.Marshal HTML-escapes what it
// returns; use Encode for bytes that go on the wire.
func (p ToolRequestPush) MarshalJSON() ([]byte, error) { return Encode(&p) }

// MarshalJSON encodes p as Encode does. json.Marshal HTML-escapes what it
// returns; use Encode for bytes that go on the wire.
func (p ErrorPush) MarshalJSON() ([]byte, error) { return Encode(&p) }

// UnmarshalJSON decodes a content push; any other messageKind is a
// *MessageKindError.
func (p *ContentPush) UnmarshalJSON(data []byte) error { return decodeInto(p, data) }

// UnmarshalJSON decodes a reasoning push; any other messageKind is a
// *MessageKindError.
func (p *ReasoningPush) UnmarshalJSON(data []byte) error { return decodeInto(p, data) }

// UnmarshalJSON decodes a tool_request push; any other messageKind is a
// *MessageKindError.
func (p *ToolRequestPush) UnmarshalJSON(data []byte) error { return decodeInto(p, data) }

// UnmarshalJSON decodes an error push; any other messageKind is a
// *MessageKindError.
func (p *ErrorPush) UnmarshalJSON(data []byte) error { return decodeInto(p, data) }

// TimestampLayout is the wire format of timestamps: RFC 3339 in UTC with
// exactly three fractional digits, what JavaScript's toISOString prints.
const TimestampLayout = "2006-01-02T15:04:05.000Z"

// FormatTimestamp formats t for the wire in TimestampLayout.
func FormatTimestamp(t time.Time) string { return t.UTC().Format(TimestampLayout) }
