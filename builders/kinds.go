package builders

import (
	"encoding/json"
	"strings"

	"amsg/push"
	"amsg/push/notifytext"
)

// ContentArgs are the arguments of a content push.
type ContentArgs struct {
	Common
	// Message is the text to show; it may be empty.
	Message     string
	Title       string // left out when empty
	ContactName string // left out when empty
	// AvatarURL is any JSON value, nil for absent; see CheckAvatarURL.
	AvatarURL json.RawMessage
	// MessageIndex (1-based) and TotalMessages place the push in a burst of
	// TotalMessages; both zero leaves them out.
	MessageIndex  int
	TotalMessages int
}

// ReasoningArgs are the arguments of a reasoning push. It has no index
// fields: reasoning is one push per round.
type ReasoningArgs struct {
	Common
	ReasoningContent string // required, not empty
	Title            string // left out when empty
	ContactName      string // left out when empty
	// AvatarURL is any JSON value, nil for absent; see CheckAvatarURL.
	AvatarURL json.RawMessage
}

// ToolRequestArgs are the arguments of a tool_request push.
type ToolRequestArgs struct {
	Common
	// ToolCalls is a non-empty JSON array of objects in OpenAI tool_calls
	// shape, passed through untouched.
	ToolCalls   json.RawMessage
	Title       string // left out when empty
	ContactName string // left out when empty
	Message     string // an optional label; left out when empty
}

// ErrorArgs are the arguments of an error push.
type ErrorArgs struct {
	Common
	Code    string // required: HOOK_THREW, LOOP_EXCEEDED, …
	Message string // may be empty
	// Iteration is the agent-loop iteration (0-based), absent when the error
	// belongs to no iteration.
	Iteration push.Optional[int]
	// LLMStatus and ProviderCode say what a failed LLM call answered; 0
	// and "" leave them out.
	LLMStatus    int
	ProviderCode string
}

// BuildContentPush validates a and returns the content push. An avatarUrl
// the standard refuses is cleared to null and reported as a Warning.
func (b Builder) BuildContentPush(a ContentArgs) (*push.ContentPush, []Warning, error) {
	v := validator{kind: push.KindContent}
	p := &push.ContentPush{
		Common:      b.head(&v, &a.Common),
		Message:     a.Message,
		Title:       optionalString(a.Title),
		ContactName: optionalString(a.ContactName),
	}
	avatar, warning := checkAvatarURL(a.AvatarURL)
	p.AvatarURL = avatar
	if a.MessageIndex != 0 || a.TotalMessages != 0 {
		v.check(a.MessageIndex != 0, "messageIndex", RuleTogether, "is required with totalMessages")
		v.check(a.TotalMessages != 0, "totalMessages", RuleTogether, "is required with messageIndex")
		v.check(a.TotalMessages >= 1, "totalMessages", RuleRange, "must be at least 1, not %d", a.TotalMessages)
		v.check(a.MessageIndex >= 1, "messageIndex", RuleRange, "must be at least 1, not %d", a.MessageIndex)
		v.check(a.MessageIndex <= a.TotalMessages, "messageIndex", RuleRange,
			"must not exceed totalMessages %d, not %d", a.TotalMessages, a.MessageIndex)
		p.MessageIndex, p.TotalMessages = push.Some(a.MessageIndex), push.Some(a.TotalMessages)
	}
	tail(&v, &a.Common, &p.Common)
	if err := v.result(); err != nil {
		return nil, nil, err
	}
	b.declare(&p.Common, displayTitle(a.Title, a.ContactName), summary(strings.TrimSpace(a.Message)), p.MessageID)
	return p, warnings(warning), nil
}

// BuildReasoningPush validates a and returns the reasoning push. An
// avatarUrl the standard refuses is cleared to null and reported as a
// Warning.
func (b Builder) BuildReasoningPush(a ReasoningArgs) (*push.ReasoningPush, []Warning, error) {
	v := validator{kind: push.KindReasoning}
	p := &push.ReasoningPush{
		Common:           b.head(&v, &a.Common),
		ReasoningContent: a.ReasoningContent,
		Title:            optionalString(a.Title),
		ContactName:      optionalString(a.ContactName),
	}
	v.check(a.ReasoningContent != "", "reasoningContent", RuleRequired, "is required")
	avatar, warning := checkAvatarURL(a.AvatarURL)
	p.AvatarURL = avatar
	tail(&v, &a.Common, &p.Common)
	if err := v.result(); err != nil {
		return nil, nil, err
	}
	return p, warnings(warning), nil
}

// BuildToolRequestPush validates a and returns the tool_request push.
func (b Builder) BuildToolRequestPush(a ToolRequestArgs) (*push.ToolRequestPush, error) {
	v := validator{kind: push.KindToolRequest}
	p := &push.ToolRequestPush{
		Common:      b.head(&v, &a.Common),
		ToolCalls:   a.ToolCalls,
		Title:       optionalString(a.Title),
		ContactName: optionalString(a.ContactName),
		Message:     optionalString(a.Message),
	}
	checkToolCalls(&v, a.ToolCalls)
	tail(&v, &a.Common, &p.Common)
	if err := v.result(); err != nil {
		return nil, err
	}
	who := a.ContactName
	if who == "" {
		who = notifytext.Text(notifytext.English, notifytext.Companion)
	}
	b.quiet(&p.Common, displayTitle(a.Title, a.ContactName), notifytext.Text(notifytext.English, notifytext.ToolRequestBody, who))
	return p, nil
}

// BuildErrorPush validates a and returns the error push.
func (b Builder) BuildErrorPush(a ErrorArgs) (*push.ErrorPush, error) {
	v := validator{kind: push.KindError}
	p := &push.ErrorPush{
		Common:    b.head(&v, &a.Common),
		Code:      a.Code,
		Message:   a.Message,
		Iteration: a.Iteration,
	}
	if a.LLMStatus != 0 {
		p.LLMStatus = push.Some(a.LLMStatus)
	}
	if a.ProviderCode != "" {
		p.ProviderCode = push.Some(a.ProviderCode)
	}
	v.check(a.Code != "", "code", RuleRequired, "is required")
	if !a.Iteration.IsAbsent() {
		n, ok := a.Iteration.Get()
		if v.check(ok, "iteration", RuleType, "must be a number when present") {
			v.check(n >= 0, "iteration", RuleRange, "must be at least 0, not %d", n)
		}
	}
	tail(&v, &a.Common, &p.Common)
	if err := v.result(); err != nil {
		return nil, err
	}
	body := a.Message
	if strings.TrimSpace(body) == "" {
		body = a.Code
	}
	b.quiet(&p.Common, notifytext.Text(notifytext.English, notifytext.ReplyInterrupted), summary(body))
	return p, nil
}

// checkToolCalls requires a non-empty JSON array of objects.
func checkToolCalls(v *validator, raw json.RawMessage) {
	if !v.check(raw != nil, "toolCalls", RuleRequired, "is required") {
		return
	}
	kind := jsonKind(raw)
	if !v.check(kind != 0, "toolCalls", RuleJSON, "must be valid UTF-8 JSON") ||
		!v.check(kind == '[', "toolCalls", RuleType, "must be a JSON array") {
		return
	}
	var calls []json.RawMessage
	_ = json.Unmarshal(raw, &calls) // a valid JSON array: cannot fail
	v.check(len(calls) > 0, "toolCalls", RuleRequired, "must hold at least one tool call")
	for i, call := range calls {
		// Each element is part of raw, already valid UTF-8 JSON.
		v.check(push.JSONKind(call) == '{', "toolCalls", RuleType, "must hold objects; element %d is not one", i)
	}
}

func warnings(w *Warning) []Warning {
	if w == nil {
		return nil
	}
	return []Warning{*w}
}
