package llm

import (
	"amsg/push"

	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// requestBody builds the JSON body of a call. Keys of req.ExtraBody come
// first, in their order, minus those this call writes; then model, messages,
// stream, stream_options (streaming only), temperature, max_tokens, tools,
// tool_choice. Strings are written without HTML escaping; Messages, Tools,
// ToolChoice and the extra values are copied byte for byte.
func requestBody(req Request, stream bool) ([]byte, error) {
	invalid := func(msg string) error { return &Error{kind: ErrInvalidRequest, msg: msg} }
	if req.MaxTokens < 0 {
		return nil, invalid("Invalid maxTokens: maxTokens must be a positive integer when provided.")
	}
	for name, raw := range map[string]json.RawMessage{"messages": req.Messages, "tools": req.Tools, "toolChoice": req.ToolChoice, "llmExtraBody": req.ExtraBody} {
		if len(bytes.TrimSpace(raw)) > 0 && !json.Valid(raw) {
			return nil, invalid(fmt.Sprintf("Invalid %s: not valid JSON.", name))
		}
	}

	type field struct {
		key   string
		value json.RawMessage
	}
	var core []field
	add := func(key string, value json.RawMessage) { core = append(core, field{key, value}) }

	add("model", push.MustMarshalNoEscape(req.Model))
	messagesIsArray := push.JSONKind(req.Messages) == '['
	if messagesIsArray && !bytes.Equal(push.CompactJSON(req.Messages), []byte("[]")) {
		add("messages", req.Messages)
	} else {
		if req.Prompt == "" {
			return nil, invalid("Invalid request: completePrompt or messages is required.")
		}
		add("messages", PromptMessages(req.Prompt))
	}
	add("stream", json.RawMessage(strconv.FormatBool(stream)))
	if stream {
		add("stream_options", json.RawMessage(`{"include_usage":true}`))
	}
	switch {
	case req.Temperature != nil:
		t, err := json.Marshal(*req.Temperature)
		if err != nil {
			return nil, invalid("Invalid temperature: must be a finite number.")
		}
		add("temperature", t)
	case !messagesIsArray:
		add("temperature", json.RawMessage("0.8"))
	}
	if req.MaxTokens > 0 {
		add("max_tokens", json.RawMessage(strconv.Itoa(req.MaxTokens)))
	}
	if push.JSONKind(req.Tools) == '[' && !bytes.Equal(push.CompactJSON(req.Tools), []byte("[]")) {
		add("tools", req.Tools)
		if k := push.JSONKind(req.ToolChoice); k != 0 && k != 'n' {
			add("tool_choice", req.ToolChoice)
		}
	}

	written := map[string]bool{}
	for _, f := range core {
		written[f.key] = true
	}
	var extra []field
	if push.JSONKind(req.ExtraBody) == '{' {
		keys, values, err := objectFields(req.ExtraBody)
		if err != nil {
			return nil, invalid("Invalid llmExtraBody: not valid JSON.")
		}
		for i, k := range keys {
			if !written[k] {
				extra = append(extra, field{k, values[i]})
			}
		}
	}

	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range append(extra, core...) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(push.MustMarshalNoEscape(f.key))
		b.WriteByte(':')
		b.Write(f.value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// objectFields returns the keys of a JSON object in order with their raw
// values. A repeated key keeps its first position and its last value, as
// JSON.parse does.
func objectFields(raw json.RawMessage) ([]string, []json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // {
		return nil, nil, err
	}
	var keys []string
	var values []json.RawMessage
	pos := map[string]int{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		if i, ok := pos[key]; ok {
			values[i] = v
			continue
		}
		pos[key] = len(keys)
		keys = append(keys, key)
		values = append(values, v)
	}
	return keys, values, nil
}

// PromptMessages is completePrompt as the one user message it is sent as.
func PromptMessages(prompt string) json.RawMessage {
	return json.RawMessage(`[{"role":"user","content":` + string(push.MustMarshalNoEscape(prompt)) + `}]`)
}
