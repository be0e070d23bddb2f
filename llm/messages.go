package llm

import (
	"amsg/push"

	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// MessagesCode is a stable code of the messages-array shape check, the same
// on the instant and the server path (amsg-shared LLM_MESSAGES_ERROR).
type MessagesCode string

// The shape check's codes.
const (
	MessagesNotArray   MessagesCode = "MESSAGES_NOT_ARRAY"
	MessageNotObject   MessagesCode = "MESSAGE_NOT_OBJECT"
	InvalidRole        MessagesCode = "INVALID_ROLE"
	ToolCallMalformed  MessagesCode = "TOOL_CALL_MALFORMED"
	ToolContentInvalid MessagesCode = "TOOL_CONTENT_INVALID"
	ToolCallIDMissing  MessagesCode = "TOOL_CALL_ID_MISSING"
	ContentEmptyString MessagesCode = "CONTENT_EMPTY_STRING"
	ContentEmptyArray  MessagesCode = "CONTENT_EMPTY_ARRAY"
	ContentInvalidType MessagesCode = "CONTENT_INVALID_TYPE"
)

// MessagesError says where an OpenAI messages array breaks the standard's
// shape rules. Index is the offending message (-1 for MESSAGES_NOT_ARRAY),
// ToolCallIndex the offending tool call (-1 unless TOOL_CALL_MALFORMED).
type MessagesError struct {
	Code          MessagesCode
	Index         int
	ToolCallIndex int
}

// messagesTexts holds each code's message: amsg-server's English
// (validateLlmMessagesArray) and amsg-instant's Chinese
// (validateInstantPayload). {i} is the message index, {j} the tool call's.
var messagesTexts = map[MessagesCode]struct{ english, chinese string }{
	MessagesNotArray:   {"messages must be a non-empty array", "messages 必须是长度 ≥ 1 的数组"},
	MessageNotObject:   {"messages[{i}] must be an object", "messages[{i}] 必须是对象"},
	InvalidRole:        {"messages[{i}].role must be one of system / user / assistant / tool", "messages[{i}].role 必须是 system / user / assistant / tool 之一"},
	ToolCallMalformed:  {"messages[{i}].tool_calls[{j}] is malformed (expected { id, type:'function', function:{ name, arguments } })", "messages[{i}].tool_calls[{j}] 形状非法 (需要 { id, type:'function', function:{ name, arguments } })"},
	ToolContentInvalid: {"messages[{i}].content (tool) must be a string or an array", "messages[{i}].content (tool) 必须是字符串或数组"},
	ToolCallIDMissing:  {"messages[{i}].tool_call_id is required (tool messages must reference a prior tool_call)", "messages[{i}].tool_call_id 必填 (tool 消息必须关联到一次 tool_call)"},
	ContentEmptyString: {"messages[{i}].content must be a non-empty string", "messages[{i}].content 不能是空字符串"},
	ContentEmptyArray:  {"messages[{i}].content array must be non-empty", "messages[{i}].content 数组不能为空"},
	ContentInvalidType: {"messages[{i}].content must be a non-empty string or a non-empty array", "messages[{i}].content 必须是非空字符串或长度 ≥ 1 的数组"},
}

// Error is the English text, as amsg-server words it.
func (e *MessagesError) Error() string { return e.English() }

// English is the message amsg-server returns for the violation.
func (e *MessagesError) English() string { return e.fill(messagesTexts[e.Code].english) }

// Chinese is the message amsg-instant returns for the violation.
func (e *MessagesError) Chinese() string { return e.fill(messagesTexts[e.Code].chinese) }

func (e *MessagesError) fill(text string) string {
	return strings.NewReplacer("{i}", strconv.Itoa(e.Index), "{j}", strconv.Itoa(e.ToolCallIndex)).Replace(text)
}

// ValidateMessages checks an OpenAI messages array (raw JSON) against the
// standard's shape rules (amsg-shared validateLlmMessagesShape) and returns
// nil or the first violation, a *MessagesError (errors.As finds it). Extra keys on messages are allowed; array
// content elements and tool-call arguments are not inspected; tool_call_id is
// not matched against earlier tool calls. Input that is not JSON counts as
// not an array.
func ValidateMessages(messages json.RawMessage) error {
	var list []json.RawMessage
	if push.JSONKind(messages) != '[' || json.Unmarshal(messages, &list) != nil || len(list) == 0 {
		return &MessagesError{Code: MessagesNotArray, Index: -1, ToolCallIndex: -1}
	}
	for i, raw := range list {
		if err := validateMessage(i, raw); err != nil {
			return err
		}
	}
	return nil
}

// validateMessage checks messages[i].
func validateMessage(i int, raw json.RawMessage) error {
	fail := func(code MessagesCode) error {
		return &MessagesError{Code: code, Index: i, ToolCallIndex: -1}
	}
	var m map[string]json.RawMessage
	if push.JSONKind(raw) != '{' || json.Unmarshal(raw, &m) != nil {
		return fail(MessageNotObject)
	}
	role, _ := push.JSONString(m["role"])
	switch role {
	case "system", "user", "assistant", "tool":
	default:
		return fail(InvalidRole)
	}
	// An assistant message carrying tool calls may have any content.
	var calls []json.RawMessage
	if role == "assistant" && push.JSONKind(m["tool_calls"]) == '[' && json.Unmarshal(m["tool_calls"], &calls) == nil && len(calls) > 0 {
		return validateToolCalls(i, calls)
	}
	content := m["content"]
	if role == "tool" {
		if k := push.JSONKind(content); k != '"' && k != '[' {
			return fail(ToolContentInvalid)
		}
		if id, ok := push.JSONString(m["tool_call_id"]); !ok || id == "" {
			return fail(ToolCallIDMissing)
		}
		return nil
	}
	switch push.JSONKind(content) {
	case '"':
		if s, _ := push.JSONString(content); s == "" {
			return fail(ContentEmptyString)
		}
	case '[':
		if bytes.Equal(push.CompactJSON(content), []byte("[]")) {
			return fail(ContentEmptyArray)
		}
	default:
		return fail(ContentInvalidType)
	}
	return nil
}

// validateToolCalls checks the tool calls of messages[i]: objects with a
// string id and a truthy function.
func validateToolCalls(i int, calls []json.RawMessage) error {
	for j, rawCall := range calls {
		var call map[string]json.RawMessage
		if push.JSONKind(rawCall) != '{' || json.Unmarshal(rawCall, &call) != nil ||
			push.JSONKind(call["id"]) != '"' || !push.JSTruthy(call["function"]) {
			return &MessagesError{Code: ToolCallMalformed, Index: i, ToolCallIndex: j}
		}
	}
	return nil
}
