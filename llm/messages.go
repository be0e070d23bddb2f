package llm

import (
	"amsg/push"
	"amsg/push/errcode"

	"bytes"
	"encoding/json"
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

// messagesTexts holds each code's message in the error table: amsg-server's
// English (validateLlmMessagesArray) and amsg-instant's Chinese
// (validateInstantPayload), filled with the message index and the tool
// call's.
var messagesTexts = map[MessagesCode]*errcode.Message{
	MessagesNotArray:   errcode.MessagesNotArray,
	MessageNotObject:   errcode.MessagesItemNotObject,
	InvalidRole:        errcode.MessagesRoleInvalid,
	ToolCallMalformed:  errcode.MessagesToolCallMalformed,
	ToolContentInvalid: errcode.MessagesToolContentInvalid,
	ToolCallIDMissing:  errcode.MessagesToolCallIDMissing,
	ContentEmptyString: errcode.MessagesContentEmptyString,
	ContentEmptyArray:  errcode.MessagesContentEmptyArray,
	ContentInvalidType: errcode.MessagesContentInvalidType,
}

// Error is the English text, as amsg-server words it.
func (e *MessagesError) Error() string { return e.English() }

// English is the message amsg-server returns for the violation.
func (e *MessagesError) English() string { return e.text().English() }

// Chinese is the message amsg-instant returns for the violation.
func (e *MessagesError) Chinese() string { return e.text().Chinese() }

func (e *MessagesError) text() *errcode.Message {
	return messagesTexts[e.Code].With(e.Index, e.ToolCallIndex)
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
