package loop

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"amsg/llm"
	"amsg/push"
	"amsg/push/errcode"
	"amsg/store"
)

// MessageType is the kind of a transcript message. A transcript is typed
// by what happened, not by who spoke: the loop's input, the model's
// reasoning, its reply or tool calls, the tool results, an error.
type MessageType string

// Transcript message types.
const (
	MessageInput       MessageType = "input"        // the messages a loop started from
	MessageReasoning   MessageType = "reasoning"    // the model's reasoning in one round
	MessageReply       MessageType = "reply"        // the text a round pushed and that ended the loop
	MessageToolCalls   MessageType = "tool-calls"   // a round that asked for tools, and paused the loop
	MessageToolResults MessageType = "tool-results" // the results that resumed it
	MessageError       MessageType = "error"        // a round or loop that failed or was stopped
	MessageInterrupt   MessageType = "interrupt"    // a tool call that waits for the person's approval
	MessageDecision    MessageType = "decision"     // the approval's outcome: who decided what, when
)

// Message is one entry of a session transcript. Which fields are set
// depends on Type.
type Message struct {
	ID        string // a ULID: time-ordered, unique
	Seq       int64  // 1-based position in the session, the compare-and-append key
	Timestamp time.Time
	Type      MessageType
	Iteration int // the agent-loop iteration it belongs to (tool-results: the one they feed)
	// Text is the user text of an input, the reasoning, the reply, the
	// narration a tool-calls round pushed before its tool request, or an
	// error's message.
	Text string
	// Messages is an input's LLM messages array, verbatim.
	Messages json.RawMessage
	// Assistant is a tool-calls round's assistant message verbatim
	// (content, reasoning_content, tool_calls), from which the history is
	// restored.
	Assistant json.RawMessage
	Calls     []ToolCallEntry
	Results   []ToolResultEntry
	Code      string // an error's code: LLM_CALL_FAILED, LOOP_EXCEEDED, …
	// ClaimedBy is, on tool-results, the instance running the round they
	// feed: the claim holds while that instance lives.
	ClaimedBy string
	// Interrupt is an interrupt's or a decision's approval.
	Interrupt *InterruptEntry
	Pushes    []string // messageIds of the pushes the message produced, in order
	Usage     store.TokenUsage
}

// ToolCallEntry is one tool call of a tool-calls message.
type ToolCallEntry struct {
	ID   string          `json:"id"` // the model's call id; tool results answer it
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"` // the arguments as JSON, or as a string when the model's are not JSON
	// EntryID is a ULID of its own, so the call is an entry of the log
	// (the frame id in the Timbal rendering).
	EntryID string `json:"entryId"`
}

// ToolResultEntry is one result of a tool-results message.
type ToolResultEntry struct {
	CallID  string          `json:"callId"`
	Name    string          `json:"name,omitempty"` // of the call it answers, when the transcript has it
	Output  json.RawMessage `json:"output"`         // the tool message's content: a string or an array
	EntryID string          `json:"entryId"`
}

// body is what a message keeps sealed: its type's fields.
type body struct {
	Text      string            `json:"text,omitempty"`
	Messages  json.RawMessage   `json:"messages,omitempty"`
	Assistant json.RawMessage   `json:"assistant,omitempty"`
	Calls     []ToolCallEntry   `json:"calls,omitempty"`
	Results   []ToolResultEntry `json:"results,omitempty"`
	Code      string            `json:"code,omitempty"`
	ClaimedBy string            `json:"claimedBy,omitempty"`
	Interrupt *InterruptEntry   `json:"interrupt,omitempty"`
}

type usageJSON struct {
	Input     int64 `json:"inputTokens"`
	Cached    int64 `json:"cachedTokens"`
	Output    int64 `json:"outputTokens"`
	Reasoning int64 `json:"reasoningTokens"`
	Total     int64 `json:"totalTokens"`
}

func toUsageJSON(u store.TokenUsage) usageJSON {
	return usageJSON{u.Input, u.Cached, u.Output, u.Reasoning, u.Total()}
}

// MarshalJSON writes the message with its type's fields and a usage object
// on every message (zero where no LLM call was made).
func (m Message) MarshalJSON() ([]byte, error) {
	pushes := m.Pushes
	if pushes == nil {
		pushes = []string{}
	}
	return push.MarshalNoEscape(struct {
		ID        string      `json:"id"`
		Seq       int64       `json:"seq"`
		Timestamp string      `json:"timestamp"`
		Type      MessageType `json:"type"`
		Iteration int         `json:"iteration"`
		body
		Pushes []string  `json:"pushes"`
		Usage  usageJSON `json:"usage"`
	}{m.ID, m.Seq, push.FormatTimestamp(m.Timestamp), m.Type, m.Iteration,
		body{m.Text, m.Messages, m.Assistant, m.Calls, m.Results, m.Code, "", m.Interrupt}, pushes, toUsageJSON(m.Usage)})
}

// Owner says who may read and continue a session: the user when the
// request named one (X-User-Id), else whoever holds the push subscription
// the session's pushes go to. Transcripts are sealed with the owner's key,
// which for a user is the user key.
type Owner string

// UserOwner is the owner of a user's sessions.
func UserOwner(userID string) Owner { return Owner(userID) }

// SubscriptionOwner is the owner of sessions started without a user: the
// holder of the push endpoint, a capability URL only the browser, its push
// service and amsg know. Only a digest of it is kept.
func SubscriptionOwner(endpoint string) Owner {
	sum := sha256.Sum256([]byte(endpoint))
	return Owner("sub:" + hex.EncodeToString(sum[:]))
}

// Settings are what a session keeps between its requests.
type Settings struct {
	Tools      json.RawMessage `json:"tools,omitempty"`
	ToolChoice json.RawMessage `json:"toolChoice,omitempty"`
	// TokenBudget bounds the tokens (input plus output) of all the
	// session's rounds; 0 is unbounded.
	TokenBudget int64 `json:"tokenBudget,omitempty"`
	// Approvals are the tools whose calls wait for the person's decision.
	Approvals Approvals `json:"approvals,omitzero"`
}

// Transcript is a session's log.
type Transcript struct {
	SessionID string
	CreatedAt time.Time
	UpdatedAt time.Time
	Settings  Settings
	// Usage sums every round of the session, pruned ones included.
	Usage    store.TokenUsage
	Messages []Message
	lastSeq  int64
}

// LastSeq is the sequence number of the last message ever appended, for
// Transcripts.Append's compare.
func (t *Transcript) LastSeq() int64 { return t.lastSeq }

// MarshalJSON writes the transcript as GET /sessions/{sessionId} returns it.
func (t *Transcript) MarshalJSON() ([]byte, error) {
	msgs := t.Messages
	if msgs == nil {
		msgs = []Message{}
	}
	return push.MarshalNoEscape(struct {
		SessionID string    `json:"sessionId"`
		CreatedAt string    `json:"createdAt"`
		UpdatedAt string    `json:"updatedAt"`
		Usage     usageJSON `json:"usage"`
		Messages  []Message `json:"messages"`
	}{t.SessionID, push.FormatTimestamp(t.CreatedAt), push.FormatTimestamp(t.UpdatedAt), toUsageJSON(t.Usage), msgs})
}

// ErrSessionNotFound means the owner has no session with that id: it never
// existed, belongs to someone else, or was pruned.
var ErrSessionNotFound = errors.New("loop: session not found")

// ErrConcurrentAppend means the session changed after it was read: another
// request appended first (the seeds' ConcurrentAppendError).
var ErrConcurrentAppend = errors.New("loop: session changed since it was read")

// AnySeq as the after argument of Append appends whatever the session
// holds.
const AnySeq = store.AnySeq

// Transcripts records and reads session transcripts in the store.
type Transcripts struct {
	store *store.Store
	now   func() time.Time

	mu      sync.Mutex
	entropy *ulid.MonotonicEntropy
}

// NewTranscripts returns transcripts kept in st; now stamps messages (nil
// means time.Now).
func NewTranscripts(st *store.Store, now func() time.Time) *Transcripts {
	if now == nil {
		now = time.Now
	}
	return &Transcripts{store: st, now: now, entropy: ulid.Monotonic(rand.Reader, 0)}
}

// newID returns a ULID for at, strictly greater than the previous one of
// the same millisecond.
func (t *Transcripts) newID(at time.Time) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return ulid.MustNew(ulid.Timestamp(at), t.entropy).String()
}

// Load reads the owner's session.
func (t *Transcripts) Load(ctx context.Context, owner Owner, sessionID string) (*Transcript, error) {
	st, err := t.store.Transcript(ctx, string(owner), sessionID)
	if errors.Is(err, store.ErrTranscriptNotFound) {
		return nil, ErrSessionNotFound
	}
	if err != nil {
		return nil, err
	}
	tr := &Transcript{SessionID: sessionID, CreatedAt: st.CreatedAt, UpdatedAt: st.UpdatedAt, Usage: st.Usage, lastSeq: st.LastSeq}
	if err := json.Unmarshal(st.Settings, &tr.Settings); err != nil {
		return nil, fmt.Errorf("loop: session settings: %w", err)
	}
	for _, e := range st.Entries {
		m := Message{ID: e.ID, Seq: e.Seq, Timestamp: e.At, Type: MessageType(e.Type), Iteration: e.Iteration, Pushes: e.Pushes, Usage: e.Usage}
		var b body
		if err := json.Unmarshal(e.Body, &b); err != nil {
			return nil, fmt.Errorf("loop: transcript message %d: %w", e.Seq, err)
		}
		m.Text, m.Messages, m.Assistant, m.Calls, m.Results, m.Code, m.ClaimedBy = b.Text, b.Messages, b.Assistant, b.Calls, b.Results, b.Code, b.ClaimedBy
		m.Interrupt = b.Interrupt
		tr.Messages = append(tr.Messages, m)
	}
	return tr, nil
}

// Append adds msgs to the owner's session, creating it, and returns the
// session's new last sequence number and total usage. after is the LastSeq the caller read (0 for a
// session it found absent), and the append fails with ErrConcurrentAppend
// when someone appended since; AnySeq appends regardless. settings, when
// not nil, replace the session's. Messages without an ID or a Timestamp
// get them, as do tool calls and results without an EntryID.
func (t *Transcripts) Append(ctx context.Context, owner Owner, sessionID string, after int64, settings *Settings, msgs ...Message) (store.TranscriptHead, error) {
	a := store.TranscriptAppend{Owner: string(owner), SessionID: sessionID, After: after}
	if settings != nil {
		raw, err := push.MarshalNoEscape(settings)
		if err != nil {
			return store.TranscriptHead{}, err
		}
		a.Settings = raw
	}
	for _, m := range msgs {
		if m.Timestamp.IsZero() {
			m.Timestamp = t.now()
		}
		if m.ID == "" {
			m.ID = t.newID(m.Timestamp)
		}
		for i := range m.Calls {
			if m.Calls[i].EntryID == "" {
				m.Calls[i].EntryID = t.newID(m.Timestamp)
			}
		}
		for i := range m.Results {
			if m.Results[i].EntryID == "" {
				m.Results[i].EntryID = t.newID(m.Timestamp)
			}
		}
		raw, err := push.MarshalNoEscape(body{m.Text, m.Messages, m.Assistant, m.Calls, m.Results, m.Code, m.ClaimedBy, m.Interrupt})
		if err != nil {
			return store.TranscriptHead{}, fmt.Errorf("loop: transcript message: %w", err)
		}
		a.Entries = append(a.Entries, store.TranscriptEntry{ID: m.ID, At: m.Timestamp, Type: string(m.Type),
			Iteration: m.Iteration, Usage: m.Usage, Pushes: m.Pushes, Body: raw})
	}
	head, err := t.store.AppendTranscript(ctx, a)
	if errors.Is(err, store.ErrConcurrentAppend) {
		return head, ErrConcurrentAppend
	}
	return head, err
}

// Round is one LLM call of a session and what came of it, as a producer
// that runs its own calls (the scheduler's prompted and auto tasks) records
// it with Record. The agent loop records its rounds the same way.
type Round struct {
	Iteration int
	// Input is the messages array the call started a loop from (an input
	// message); nil when the round continues one. Prompt, when Input is
	// nil, is a completePrompt, recorded as the one user message it was
	// sent as.
	Input  json.RawMessage
	Prompt string
	// Response is the model's answer; nil when the call failed.
	Response *llm.Response
	// Reasoning is the reasoning the round pushed, with the push's id.
	Reasoning     string
	ReasoningPush string
	// Text is the reply (or the narration before a tool request) as pushed,
	// reasoning removed, with the ids of its content pushes.
	Text          string
	ContentPushes []string
	// ToolRequestPush is the id of the tool_request push, "" when the
	// round's tool calls were not sent (the loop was stopped instead).
	ToolRequestPush string
	// Interrupts are the round's tool calls that wait for approval, each
	// with the push that asked.
	Interrupts []InterruptEntry
	// Error, when set, ends the round: a failed call, or a loop stopped.
	Error *RoundError
}

// RoundError is how a round ended when it did not end with a reply or a
// tool request.
type RoundError struct {
	Code    string // LLM_CALL_FAILED, PUSH_SEND_FAILED, LOOP_EXCEEDED, BUDGET_EXHAUSTED, …
	Message string
	Push    string // the id of the error push sent about it, if any
}

// Record appends a whole round to the owner's session.
func (t *Transcripts) Record(ctx context.Context, owner Owner, sessionID string, r Round) error {
	var msgs []Message
	switch {
	case r.Input != nil:
		msgs = append(msgs, inputMessage(r.Iteration, r.Input))
	case r.Prompt != "":
		msgs = append(msgs, inputMessage(r.Iteration, llm.PromptMessages(r.Prompt)))
	}
	_, err := t.Append(ctx, owner, sessionID, AnySeq, nil, append(msgs, r.messages()...)...)
	return err
}

// messages are the transcript messages of a round's outcome: reasoning,
// then the reply or the tool calls, then the error.
func (r Round) messages() []Message {
	var msgs []Message
	if r.Reasoning != "" {
		msgs = append(msgs, Message{Type: MessageReasoning, Iteration: r.Iteration, Text: r.Reasoning, Pushes: nonEmpty(r.ReasoningPush)})
	}
	// A failed call may have pushed part of its reply already.
	if resp := r.Response; resp != nil || len(r.ContentPushes) > 0 {
		m := Message{Type: MessageReply, Iteration: r.Iteration, Text: r.Text, Pushes: r.ContentPushes}
		if resp == nil {
			resp = &llm.Response{}
		}
		m.Usage = usageOf(resp.Usage)
		if calls, _ := resp.Calls(); len(calls) > 0 {
			m.Type, m.Assistant = MessageToolCalls, resp.Message
			m.Pushes = append(append([]string(nil), r.ContentPushes...), nonEmpty(r.ToolRequestPush)...)
			for _, c := range calls {
				m.Calls = append(m.Calls, ToolCallEntry{ID: c.ID, Name: c.Function.Name, Args: argsJSON(c.Function.Arguments)})
			}
		}
		msgs = append(msgs, m)
	}
	for _, in := range r.Interrupts {
		msgs = append(msgs, Message{Type: MessageInterrupt, Iteration: r.Iteration, Interrupt: &in, Pushes: nonEmpty(in.Push)})
	}
	if e := r.Error; e != nil {
		msgs = append(msgs, Message{Type: MessageError, Iteration: r.Iteration, Code: e.Code, Text: e.Message, Pushes: nonEmpty(e.Push)})
	}
	return msgs
}

func nonEmpty(id string) []string {
	if id == "" {
		return nil
	}
	return []string{id}
}

func usageOf(u llm.Usage) store.TokenUsage {
	return store.TokenUsage{Input: u.InputTokens, Cached: u.CachedInputTokens, Output: u.OutputTokens, Reasoning: u.ReasoningTokens}
}

// argsJSON is a call's arguments as JSON when the model wrote JSON, else
// as the string it wrote.
func argsJSON(args string) json.RawMessage {
	if strings.TrimSpace(args) == "" {
		return nil
	}
	if json.Valid([]byte(args)) {
		return push.CompactJSON(json.RawMessage(args))
	}
	return push.MustMarshalNoEscape(args)
}

// inputMessage records the messages a loop starts from, with the text of
// the last user message for display.
func inputMessage(iteration int, messages json.RawMessage) Message {
	return Message{Type: MessageInput, Iteration: iteration, Text: lastUserText(messages), Messages: messages}
}

// lastUserText is the content of the last user message: the string, or the
// text parts of an array joined.
func lastUserText(messages json.RawMessage) string {
	var list []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(messages, &list)
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].Role != "user" {
			continue
		}
		if s, ok := push.JSONString(list[i].Content); ok {
			return s
		}
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		_ = json.Unmarshal(list[i].Content, &parts)
		var texts []string
		for _, p := range parts {
			if p.Type == "text" {
				texts = append(texts, p.Text)
			}
		}
		return strings.Join(texts, "\n")
	}
	return ""
}

// replay walks the loop in progress (from the last input message) and
// returns its LLM history, and the tool calls it waits results for with the
// iteration those results start. A tool-results message followed by a
// failed call (LLM_CALL_FAILED), or ending the transcript and abandoned (a
// claim whose round died), is dropped: the iteration may be retried, and the
// retry's results replace it.
func (t *Transcript) replay(abandoned func(Message) bool) (history []json.RawMessage, pending []ToolCallEntry, next int, err error) {
	start := -1
	for i, m := range t.Messages {
		if m.Type == MessageInput {
			start = i
		}
	}
	if start < 0 {
		return nil, nil, 0, nil
	}
	if err := json.Unmarshal(t.Messages[start].Messages, &history); err != nil {
		return nil, nil, 0, fmt.Errorf("loop: transcript input: %w", err)
	}
	mark := len(history) // history up to the last tool calls
	var awaited []ToolCallEntry
	for _, m := range t.Messages[start+1:] {
		switch m.Type {
		case MessageToolCalls:
			history = append(history, m.Assistant)
			mark, awaited, pending, next = len(history), m.Calls, m.Calls, m.Iteration+1
		case MessageToolResults:
			history = history[:mark] // a retry's results replace an abandoned claim's
			for _, r := range m.Results {
				history = append(history, toolMessage(r))
			}
			pending = nil
		case MessageError:
			if m.Code == errcode.LLMCallFailed.Code() && awaited != nil {
				history, pending = history[:mark], awaited
				continue
			}
			awaited, pending = nil, nil
		case MessageReply:
			awaited, pending = nil, nil
		}
	}
	if last := t.Messages[len(t.Messages)-1]; last.Type == MessageToolResults && awaited != nil && abandoned(last) {
		history, pending = history[:mark], awaited
	}
	return history, pending, next, nil
}

func toolMessage(r ToolResultEntry) json.RawMessage {
	return json.RawMessage(`{"role":"tool","tool_call_id":` + string(push.MustMarshalNoEscape(r.CallID)) + `,"content":` + string(r.Output) + `}`)
}
