package llm

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestValidateMessages(t *testing.T) {
	tests := []struct {
		name, messages string
		want           *MessagesError // nil = valid
		english, zh    string
	}{
		{"valid chat", `[{"role":"system","content":"s"},{"role":"user","content":"hi"}]`, nil, "", ""},
		{"whitespace content passes", `[{"role":"user","content":"  "}]`, nil, "", ""},
		{"array content, elements unchecked", `[{"role":"user","content":[1]}]`, nil, "", ""},
		{"extra keys allowed", `[{"role":"assistant","content":"a","reasoning_content":"r","name":"n","refusal":null}]`, nil, "", ""},
		{"agentic replay", `[{"role":"user","content":"t?"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_time","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":""}]`, nil, "", ""},
		{"tool content array, empty ok", `[{"role":"tool","tool_call_id":"x","content":[]}]`, nil, "", ""},
		{"tool call id not cross-checked", `[{"role":"tool","tool_call_id":"fake","content":"r"}]`, nil, "", ""},
		{"tool call with truthy non-object function", `[{"role":"assistant","tool_calls":[{"id":"","function":1}]}]`, nil, "", ""},

		{"not an array", `{"role":"user"}`, &MessagesError{MessagesNotArray, -1, -1},
			"messages must be a non-empty array", "messages 必须是长度 ≥ 1 的数组"},
		{"empty array", `[]`, &MessagesError{MessagesNotArray, -1, -1},
			"messages must be a non-empty array", "messages 必须是长度 ≥ 1 的数组"},
		{"null", `null`, &MessagesError{MessagesNotArray, -1, -1}, "", ""},
		{"absent", ``, &MessagesError{MessagesNotArray, -1, -1}, "", ""},
		{"element null", `[{"role":"user","content":"a"},null]`, &MessagesError{MessageNotObject, 1, -1},
			"messages[1] must be an object", "messages[1] 必须是对象"},
		{"element array", `[[]]`, &MessagesError{MessageNotObject, 0, -1}, "", ""},
		{"element string", `["hi"]`, &MessagesError{MessageNotObject, 0, -1}, "", ""},
		{"bad role", `[{"role":"developer","content":"a"}]`, &MessagesError{InvalidRole, 0, -1},
			"messages[0].role must be one of system / user / assistant / tool", "messages[0].role 必须是 system / user / assistant / tool 之一"},
		{"role not a string", `[{"role":1,"content":"a"}]`, &MessagesError{InvalidRole, 0, -1}, "", ""},
		{"tool call without id", `[{"role":"user","content":"a"},{"role":"assistant","tool_calls":[{"id":"a","function":{}},{"function":{}}]}]`, &MessagesError{ToolCallMalformed, 1, 1},
			"messages[1].tool_calls[1] is malformed (expected { id, type:'function', function:{ name, arguments } })",
			"messages[1].tool_calls[1] 形状非法 (需要 { id, type:'function', function:{ name, arguments } })"},
		{"tool call with falsy function", `[{"role":"assistant","tool_calls":[{"id":"a","function":0}]}]`, &MessagesError{ToolCallMalformed, 0, 0}, "", ""},
		{"tool call with empty-string function", `[{"role":"assistant","tool_calls":[{"id":"a","function":""}]}]`, &MessagesError{ToolCallMalformed, 0, 0}, "", ""},
		{"tool call null", `[{"role":"assistant","tool_calls":[null]}]`, &MessagesError{ToolCallMalformed, 0, 0}, "", ""},
		{"empty tool_calls needs content", `[{"role":"assistant","tool_calls":[],"content":""}]`, &MessagesError{ContentEmptyString, 0, -1}, "", ""},
		{"tool content null", `[{"role":"tool","tool_call_id":"x","content":null}]`, &MessagesError{ToolContentInvalid, 0, -1},
			"messages[0].content (tool) must be a string or an array", "messages[0].content (tool) 必须是字符串或数组"},
		{"tool without call id", `[{"role":"tool","content":"r"}]`, &MessagesError{ToolCallIDMissing, 0, -1},
			"messages[0].tool_call_id is required (tool messages must reference a prior tool_call)", "messages[0].tool_call_id 必填 (tool 消息必须关联到一次 tool_call)"},
		{"tool with empty call id", `[{"role":"tool","content":"r","tool_call_id":""}]`, &MessagesError{ToolCallIDMissing, 0, -1}, "", ""},
		{"empty string content", `[{"role":"user","content":""}]`, &MessagesError{ContentEmptyString, 0, -1},
			"messages[0].content must be a non-empty string", "messages[0].content 不能是空字符串"},
		{"empty array content", `[{"role":"user","content":[ ]}]`, &MessagesError{ContentEmptyArray, 0, -1},
			"messages[0].content array must be non-empty", "messages[0].content 数组不能为空"},
		{"null content", `[{"role":"assistant","content":null}]`, &MessagesError{ContentInvalidType, 0, -1},
			"messages[0].content must be a non-empty string or a non-empty array", "messages[0].content 必须是非空字符串或长度 ≥ 1 的数组"},
		{"missing content", `[{"role":"user"}]`, &MessagesError{ContentInvalidType, 0, -1}, "", ""},
		{"duplicate key, last wins", `[{"role":"user","content":"","content":"x"}]`, nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateMessages(json.RawMessage(tt.messages))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("got %+v, want valid", err)
				}
				return
			}
			var got *MessagesError
			errors.As(err, &got)
			if got == nil || *got != *tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			if tt.english != "" && (got.English() != tt.english || got.Error() != tt.english) {
				t.Errorf("English() = %q, want %q", got.English(), tt.english)
			}
			if tt.zh != "" && got.Chinese() != tt.zh {
				t.Errorf("Chinese() = %q, want %q", got.Chinese(), tt.zh)
			}
		})
	}
}

// shapeOracle restates the upstream rules over a generic decoding, as a
// second opinion for the fuzz test.
func shapeOracle(v any) (MessagesCode, int, int) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return MessagesNotArray, -1, -1
	}
	for i, e := range list {
		if code, j := oracleMessage(e); code != "" {
			return code, i, j
		}
	}
	return "", 0, 0
}

// oracleMessage is shapeOracle for one element: the violated code and the
// offending tool call's index (-1 for none), or "".
func oracleMessage(e any) (MessagesCode, int) {
	m, ok := e.(map[string]any)
	if !ok {
		return MessageNotObject, -1
	}
	role, _ := m["role"].(string)
	if role != "system" && role != "user" && role != "assistant" && role != "tool" {
		return InvalidRole, -1
	}
	if calls, ok := m["tool_calls"].([]any); ok && role == "assistant" && len(calls) > 0 {
		for j, c := range calls {
			cm, ok := c.(map[string]any)
			_, idOK := cm["id"].(string)
			if !ok || !idOK || !oracleTruthy(cm["function"]) {
				return ToolCallMalformed, j
			}
		}
		return "", -1
	}
	switch c := m["content"].(type) {
	case string:
		if role != "tool" && c == "" {
			return ContentEmptyString, -1
		}
	case []any:
		if role != "tool" && len(c) == 0 {
			return ContentEmptyArray, -1
		}
	default:
		if role == "tool" {
			return ToolContentInvalid, -1
		}
		return ContentInvalidType, -1
	}
	if id, _ := m["tool_call_id"].(string); role == "tool" && id == "" {
		return ToolCallIDMissing, -1
	}
	return "", -1
}

// oracleTruthy is JavaScript truthiness over a generic decoding.
func oracleTruthy(x any) bool {
	switch x := x.(type) {
	case nil:
		return false
	case bool:
		return x
	case float64:
		return x != 0
	case string:
		return x != ""
	}
	return true
}

func FuzzValidateMessages(f *testing.F) {
	for _, s := range []string{
		`[{"role":"user","content":"hi"}]`, `[]`, `{}`, `[null]`, `[{"role":"tool","content":""}]`,
		`[{"role":"assistant","content":null,"tool_calls":[{"id":"c","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":[]}]`,
		`[{"role":"assistant","tool_calls":[{"id":"a","function":-0.0}]}]`, `[{"role":"system","content":[]}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		err := ValidateMessages(in)
		var got *MessagesError
		if err != nil && !errors.As(err, &got) {
			t.Fatalf("%q: %v is not a *MessagesError", in, err)
		}
		var v any
		if json.Unmarshal(in, &v) != nil {
			if got == nil || got.Code != MessagesNotArray {
				t.Fatalf("invalid JSON %q: got %+v", in, got)
			}
			return
		}
		code, i, j := shapeOracle(v)
		if code == "" {
			if got != nil {
				t.Fatalf("%s: got %+v, oracle says valid", in, got)
			}
			return
		}
		if got == nil || got.Code != code || got.Index != i || got.ToolCallIndex != j {
			t.Fatalf("%s: got %+v, oracle says %s %d %d", in, got, code, i, j)
		}
		if got.English() == "" || got.Chinese() == "" {
			t.Fatal("empty message")
		}
	})
}
