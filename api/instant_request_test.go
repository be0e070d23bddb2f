package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"amsg/builders"
	"amsg/llm"
	"amsg/loop"
)

// validationCase is one row of the standard's validation tables: a body
// (the valid base with members replaced; a nil value deletes one) and the
// error the standard answers.
type validationCase struct {
	name    string
	set     map[string]any
	raw     string // a whole body instead of set
	code    string
	message string
	details string // the JSON of details, "" for none
}

const (
	removedMessage = " is removed in 0.8.0; caller is responsible for splitting (return decision.pushPayloads with the exact pushes you want sent)"
	oneOf          = "exactly one of `completePrompt` or `messages` must be provided"
)

func rawJSON(s string) json.RawMessage { return json.RawMessage(s) }

var validSubscription = rawJSON(`{"endpoint":"http://127.0.0.1:1/push/x","keys":{"p256dh":"BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM","auth":"tBHItJI5svbpez7KI4CCXg"}}`)

// instantRows are §2.5's rows in order, each failing on its own rule.
var instantRows = []validationCase{
	{name: "1 not JSON", raw: `{"contactName":`, code: "INVALID_PAYLOAD_FORMAT", message: "请求体不是合法 JSON"},
	{name: "1 array", raw: `[1]`, code: "INVALID_PAYLOAD_FORMAT", message: "payload 必须是 JSON 对象"},
	{name: "1 null", raw: `null`, code: "INVALID_PAYLOAD_FORMAT", message: "payload 必须是 JSON 对象"},
	{name: "2 firstSendTime null", set: map[string]any{"firstSendTime": rawJSON("null")}, code: "INVALID_PAYLOAD_FORMAT",
		message: "amsg-instant 不接受 firstSendTime；该字段属于 amsg-server 的定时消息", details: `{"invalidFields":["firstSendTime"]}`},
	{name: "3 recurrenceType daily", set: map[string]any{"recurrenceType": "daily"}, code: "INVALID_PAYLOAD_FORMAT",
		message: `amsg-instant 不支持 recurrenceType（必须省略或为 "none"）`, details: `{"invalidFields":["recurrenceType"]}`},
	{name: "3 recurrenceType null", set: map[string]any{"recurrenceType": rawJSON("null")}, code: "INVALID_PAYLOAD_FORMAT",
		message: `amsg-instant 不支持 recurrenceType（必须省略或为 "none"）`, details: `{"invalidFields":["recurrenceType"]}`},
	{name: "4 messageType fixed", set: map[string]any{"messageType": "fixed"}, code: "INVALID_PAYLOAD_FORMAT",
		message: `amsg-instant 仅支持 messageType: "instant"（或省略）`, details: `{"invalidFields":["messageType"]}`},
	{name: "5 contactName blank", set: map[string]any{"contactName": " \u3000"}, code: "INVALID_PAYLOAD_FORMAT",
		message: "contactName 必填", details: `{"missingFields":["contactName"]}`},
	{name: "5 contactName missing", set: map[string]any{"contactName": nil}, code: "INVALID_PAYLOAD_FORMAT",
		message: "contactName 必填", details: `{"missingFields":["contactName"]}`},
	{name: "7 both", set: map[string]any{"completePrompt": "hi"}, code: "INVALID_PAYLOAD_FORMAT",
		message: oneOf + "（两者不能同时出现）", details: `{"invalidFields":["completePrompt","messages"]}`},
	{name: "8 neither", set: map[string]any{"messages": nil}, code: "INVALID_PAYLOAD_FORMAT",
		message: oneOf, details: `{"missingFields":["completePrompt","messages"]}`},
	{name: "9a completePrompt null", set: map[string]any{"messages": nil, "completePrompt": rawJSON("null")}, code: "INVALID_PAYLOAD_FORMAT",
		message: "completePrompt 必须是非空字符串", details: `{"invalidFields":["completePrompt"]}`},
	{name: "9b messages null", set: map[string]any{"messages": rawJSON("null")}, code: "INVALID_PAYLOAD_FORMAT",
		message: "messages 必须是长度 ≥ 1 的数组", details: `{"invalidFields":["messages"]}`},
	{name: "9b not an object", set: map[string]any{"messages": rawJSON(`[1]`)}, code: "INVALID_PAYLOAD_FORMAT",
		message: "messages[0] 必须是对象", details: `{"invalidFields":["messages"]}`},
	{name: "9b role", set: map[string]any{"messages": rawJSON(`[{"role":"bot","content":"x"}]`)}, code: "INVALID_PAYLOAD_FORMAT",
		message: "messages[0].role 必须是 system / user / assistant / tool 之一", details: `{"invalidFields":["messages"]}`},
	{name: "9b tool call", set: map[string]any{"messages": rawJSON(`[{"role":"assistant","tool_calls":[{"id":1}]}]`)}, code: "INVALID_PAYLOAD_FORMAT",
		message: "messages[0].tool_calls[0] 形状非法 (需要 { id, type:'function', function:{ name, arguments } })", details: `{"invalidFields":["messages"]}`},
	{name: "9b tool content", set: map[string]any{"messages": rawJSON(`[{"role":"tool","tool_call_id":"a","content":1}]`)}, code: "INVALID_PAYLOAD_FORMAT",
		message: "messages[0].content (tool) 必须是字符串或数组", details: `{"invalidFields":["messages"]}`},
	{name: "9b tool call id", set: map[string]any{"messages": rawJSON(`[{"role":"tool","content":""}]`)}, code: "INVALID_PAYLOAD_FORMAT",
		message: "messages[0].tool_call_id 必填 (tool 消息必须关联到一次 tool_call)", details: `{"invalidFields":["messages"]}`},
	{name: "9b empty string", set: map[string]any{"messages": rawJSON(`[{"role":"user","content":""}]`)}, code: "INVALID_PAYLOAD_FORMAT",
		message: "messages[0].content 不能是空字符串", details: `{"invalidFields":["messages"]}`},
	{name: "9b empty array", set: map[string]any{"messages": rawJSON(`[{"role":"user","content":[]}]`)}, code: "INVALID_PAYLOAD_FORMAT",
		message: "messages[0].content 数组不能为空", details: `{"invalidFields":["messages"]}`},
	{name: "9b content type", set: map[string]any{"messages": rawJSON(`[{"role":"user","content":7}]`)}, code: "INVALID_PAYLOAD_FORMAT",
		message: "messages[0].content 必须是非空字符串或长度 ≥ 1 的数组", details: `{"invalidFields":["messages"]}`},
	{name: "10 temperature string", set: map[string]any{"temperature": "0.5"}, code: "INVALID_PAYLOAD_FORMAT",
		message: "temperature 必须是有限数字", details: `{"invalidFields":["temperature"]}`},
	{name: "10 temperature infinite", set: map[string]any{"temperature": rawJSON("1e999")}, code: "INVALID_PAYLOAD_FORMAT",
		message: "temperature 必须是有限数字", details: `{"invalidFields":["temperature"]}`},
	{name: "11 apiUrl", set: map[string]any{"apiUrl": ""}, code: "INVALID_PAYLOAD_FORMAT",
		message: "apiUrl 必填", details: `{"missingFields":["apiUrl"]}`},
	{name: "11 apiKey", set: map[string]any{"apiKey": nil}, code: "INVALID_PAYLOAD_FORMAT",
		message: "apiKey 必填", details: `{"missingFields":["apiKey"]}`},
	{name: "11 primaryModel", set: map[string]any{"primaryModel": 5}, code: "INVALID_PAYLOAD_FORMAT",
		message: "primaryModel 必填", details: `{"missingFields":["primaryModel"]}`},
	{name: "12 maxTokens zero", set: map[string]any{"maxTokens": 0}, code: "INVALID_PAYLOAD_FORMAT",
		message: "maxTokens 必须是正整数", details: `{"invalidFields":["maxTokens"]}`},
	{name: "12 maxTokens fraction", set: map[string]any{"maxTokens": 1.5}, code: "INVALID_PAYLOAD_FORMAT",
		message: "maxTokens 必须是正整数", details: `{"invalidFields":["maxTokens"]}`},
	{name: "13 pushSubscription missing", set: map[string]any{"pushSubscription": nil}, code: "INVALID_PAYLOAD_FORMAT",
		message: "pushSubscription 必须是合法 Web Push 订阅对象", details: `{"missingFields":["pushSubscription.endpoint"]}`},
	{name: "13 endpoint not a string", set: map[string]any{"pushSubscription": rawJSON(`{"endpoint":1}`)}, code: "INVALID_PAYLOAD_FORMAT",
		message: "pushSubscription 必须是合法 Web Push 订阅对象", details: `{"missingFields":["pushSubscription.endpoint"]}`},
	{name: "13 array", set: map[string]any{"pushSubscription": rawJSON(`[]`)}, code: "INVALID_PAYLOAD_FORMAT",
		message: "pushSubscription 必须是合法 Web Push 订阅对象", details: `{"missingFields":["pushSubscription.endpoint"]}`},
	{name: "15 messageSubtype number", set: map[string]any{"messageSubtype": 5}, code: "INVALID_PAYLOAD_FORMAT",
		message: "messageSubtype 必须是字符串", details: `{"invalidFields":["messageSubtype"]}`},
	{name: "16 splitPattern", set: map[string]any{"splitPattern": rawJSON("null")}, code: "INVALID_PAYLOAD_FORMAT",
		message: "splitPattern" + removedMessage, details: `{"invalidFields":["splitPattern"]}`},
	{name: "16 reasoningSplitPattern", set: map[string]any{"reasoningSplitPattern": "x"}, code: "INVALID_PAYLOAD_FORMAT",
		message: "reasoningSplitPattern" + removedMessage, details: `{"invalidFields":["reasoningSplitPattern"]}`},
	{name: "16 errorSplitPattern", set: map[string]any{"errorSplitPattern": []any{}}, code: "INVALID_PAYLOAD_FORMAT",
		message: "errorSplitPattern" + removedMessage, details: `{"invalidFields":["errorSplitPattern"]}`},
	{name: "17 sessionId null", set: map[string]any{"sessionId": rawJSON("null")}, code: "INVALID_PAYLOAD_FORMAT",
		message: "sessionId 必须是非空字符串", details: `{"invalidFields":["sessionId"]}`},
	{name: "18 charId blank", set: map[string]any{"charId": " "}, code: "INVALID_PAYLOAD_FORMAT",
		message: "charId 必须是非空字符串", details: `{"invalidFields":["charId"]}`},
	{name: "19 iteration too high", set: map[string]any{"iteration": 10}, code: "INVALID_PAYLOAD_FORMAT",
		message: "iteration 必须是 0..9 范围内的整数", details: `{"invalidFields":["iteration"]}`},
	{name: "19 iteration null", set: map[string]any{"iteration": rawJSON("null")}, code: "INVALID_PAYLOAD_FORMAT",
		message: "iteration 必须是 0..9 范围内的整数", details: `{"invalidFields":["iteration"]}`},
	{name: "20 metadata array", set: map[string]any{"metadata": []any{}}, code: "INVALID_PAYLOAD_FORMAT",
		message: "metadata 必须是普通对象", details: `{"invalidFields":["metadata"]}`},
	// amsg's own fields, checked after the standard's.
	{name: "tools object", set: map[string]any{"tools": map[string]any{}}, code: "INVALID_PAYLOAD_FORMAT",
		message: "tools 必须是数组", details: `{"invalidFields":["tools"]}`},
	{name: "tokenBudget negative", set: map[string]any{"tokenBudget": -1}, code: "INVALID_PAYLOAD_FORMAT",
		message: "tokenBudget 必须是正整数", details: `{"invalidFields":["tokenBudget"]}`},
	{name: "keys unusable", set: map[string]any{"pushSubscription": rawJSON(`{"endpoint":"http://127.0.0.1:1/push/x","keys":{"p256dh":"abc","auth":"x"}}`)},
		code: "INVALID_PUSH_SUBSCRIPTION", message: "推送订阅无效：keys.p256dh is not a 65-byte uncompressed P-256 point (got 2 bytes)",
		details: `{"field":"pushSubscription.keys.p256dh","reason":"is not a 65-byte uncompressed P-256 point (got 2 bytes)"}`},
}

// continueRows are §2.6's rows in order.
var continueRows = []validationCase{
	{name: "1 array", raw: `[]`, code: "INVALID_PAYLOAD_FORMAT", message: "payload 必须是 JSON 对象"},
	{name: "2 sessionId missing", set: map[string]any{"sessionId": nil, "completePrompt": "x"}, code: "INVALID_PAYLOAD_FORMAT",
		message: "sessionId 必填且为非空字符串", details: `{"missingFields":["sessionId"]}`},
	{name: "3 completePrompt", set: map[string]any{"completePrompt": rawJSON("null"), "contactName": nil}, code: "COMPLETE_PROMPT_NOT_SUPPORTED_ON_HOOK_PATH",
		message: "completePrompt is not accepted on /continue; pass a `messages` array directly", details: `{"invalidFields":["completePrompt"]}`},
	{name: "4 messages missing", set: map[string]any{"messages": nil, "contactName": nil}, code: "INVALID_PAYLOAD_FORMAT",
		message: "`messages` is required on /continue", details: `{"missingFields":["messages"]}`},
	{name: "5 messages shape", set: map[string]any{"messages": []any{}, "contactName": nil}, code: "INVALID_PAYLOAD_FORMAT",
		message: "messages 必须是长度 ≥ 1 的数组", details: `{"invalidFields":["messages"]}`},
	{name: "6 contactName", set: map[string]any{"contactName": nil, "apiUrl": nil}, code: "INVALID_PAYLOAD_FORMAT",
		message: "contactName 必填", details: `{"missingFields":["contactName"]}`},
	{name: "7 apiUrl", set: map[string]any{"apiUrl": nil, "maxTokens": 0}, code: "INVALID_PAYLOAD_FORMAT",
		message: "apiUrl 必填", details: `{"missingFields":["apiUrl"]}`},
	{name: "8 maxTokens before temperature", set: map[string]any{"maxTokens": 0, "temperature": "x"}, code: "INVALID_PAYLOAD_FORMAT",
		message: "maxTokens 必须是正整数", details: `{"invalidFields":["maxTokens"]}`},
	{name: "9 temperature", set: map[string]any{"temperature": "x", "pushSubscription": nil}, code: "INVALID_PAYLOAD_FORMAT",
		message: "temperature 必须是有限数字", details: `{"invalidFields":["temperature"]}`},
	{name: "10 pushSubscription", set: map[string]any{"pushSubscription": nil, "splitPattern": "x"}, code: "INVALID_PAYLOAD_FORMAT",
		message: "pushSubscription 必须是合法 Web Push 订阅对象", details: `{"missingFields":["pushSubscription.endpoint"]}`},
	{name: "12 splitPattern", set: map[string]any{"splitPattern": "x", "iteration": -1}, code: "INVALID_PAYLOAD_FORMAT",
		message: "splitPattern" + removedMessage, details: `{"invalidFields":["splitPattern"]}`},
	{name: "13 iteration", set: map[string]any{"iteration": -1}, code: "INVALID_PAYLOAD_FORMAT",
		message: "iteration 必须是 0..9 范围内的整数", details: `{"invalidFields":["iteration"]}`},
	{name: "13 charId", set: map[string]any{"charId": rawJSON("null")}, code: "INVALID_PAYLOAD_FORMAT",
		message: "charId 必须是非空字符串", details: `{"invalidFields":["charId"]}`},
	{name: "13 metadata", set: map[string]any{"metadata": "x"}, code: "INVALID_PAYLOAD_FORMAT",
		message: "metadata 必须是普通对象", details: `{"invalidFields":["metadata"]}`},
}

func validationBody(t *testing.T, base map[string]any, c validationCase) string {
	if c.raw != "" {
		return c.raw
	}
	b := map[string]any{}
	for k, v := range base {
		b[k] = v
	}
	for k, v := range c.set {
		if v == nil {
			delete(b, k)
		} else {
			b[k] = v
		}
	}
	return jsonBody(t, b)
}

func runValidationRows(t *testing.T, path string, base map[string]any, rows []validationCase) {
	s := newTestServer(t, Config{AllowPrivateEndpoints: true, LLMPolicy: llm.URLPolicy{AllowPrivate: true}}, Deps{Instant: &Instant{Agent: loop.NewAgent(loop.AgentConfig{})}})
	for _, c := range rows {
		t.Run(c.name, func(t *testing.T) {
			got := post(s, path, validationBody(t, base, c), jsonHeaders)
			want := `{"success":false,"error":{"code":"` + c.code + `","message":` + jsonBody(t, c.message)
			if c.details != "" {
				want += `,"details":` + c.details
			}
			want += "}}\n"
			if got.status != http.StatusBadRequest || got.body != want {
				t.Errorf("= %d %s\nwant 400 %s", got.status, got.body, want)
			}
		})
	}
}

func TestInstantValidation(t *testing.T) {
	runValidationRows(t, "/api/v1/instant", map[string]any{
		"contactName": "Rei", "messages": []any{map[string]any{"role": "user", "content": "hi"}},
		"apiUrl": "http://127.0.0.1:1/v1", "apiKey": "k", "primaryModel": "m", "pushSubscription": validSubscription,
	}, instantRows)
}

func TestContinueValidation(t *testing.T) {
	runValidationRows(t, "/api/v1/continue", map[string]any{
		"sessionId": "s", "contactName": "Rei", "messages": rawJSON(toolResult),
		"apiUrl": "http://127.0.0.1:1/v1", "apiKey": "k", "primaryModel": "m", "pushSubscription": validSubscription,
	}, continueRows)
}

// TestDecodeAcceptsWhatUpstreamAccepts covers values the standard lets
// through: nulls where allowed, 1.0 as an integer, avatarUrl soft-cleared,
// completePrompt with tools, the members /continue does not check.
func TestDecodeAcceptsWhatUpstreamAccepts(t *testing.T) {
	var warnings []builders.Warning
	warn := func(w builders.Warning) { warnings = append(warnings, w) }
	f, err := bodyFields([]byte(`{"contactName":"Rei","completePrompt":"hi","apiUrl":"u","apiKey":"k","primaryModel":"m",
		"pushSubscription":{"endpoint":""},"maxTokens":5.0,"temperature":null,"metadata":null,"messageSubtype":null,
		"avatarUrl":"data:image/png;base64,AA","iteration":2,"recurrenceType":"none","messageType":"instant",
		"tools":[{"type":"function"}],"toolChoice":"auto","llmExtraBody":[1],"tokenBudget":1e3}`))
	if err != nil {
		t.Fatal(err)
	}
	q, err := decodeInstant(f, false, 10, false, warn)
	if err != nil {
		t.Fatal(err)
	}
	if q.completePrompt != "hi" || q.maxTokens != 5 || q.temperature != nil || q.metadata != nil || q.iteration != 2 ||
		string(q.avatarURL) != "null" || len(warnings) != 1 || string(q.toolChoice) != `"auto"` || q.tokenBudget != 1000 ||
		q.subscription == nil || q.subscription.Endpoint != "" || string(q.llmExtraBody) != "[1]" {
		t.Errorf("decoded %+v, warnings %v", q, warnings)
	}

	f, _ = bodyFields([]byte(`{"sessionId":"s","contactName":"Rei","messages":[{"role":"tool","tool_call_id":"a","content":""}],
		"apiUrl":"u","apiKey":"k","primaryModel":"m","firstSendTime":"x","messageType":"fixed","messageSubtype":5}`))
	q, err = decodeContinue(f, true, 10, false, warn)
	if err != nil || q.iteration != -1 || q.messageSubtype != "" || q.subscription != nil {
		t.Errorf("continue decoded %+v, %v", q, err)
	}
}

// fuzzRequestPipeline sends arbitrary bodies to the request pipeline of
// path (gzipped when gz): every answer is a success or one of the
// standard's 4xx errors, never a 500 or a panic. user sends X-User-Id.
func fuzzRequestPipeline(f *testing.F, path string, decode decodeFunc, gz bool, seeds []validationCase, valid string) {
	for _, c := range seeds {
		body := c.raw
		if body == "" {
			b, _ := json.Marshal(c.set)
			body = string(b)
		}
		f.Add([]byte(body), false)
	}
	f.Add([]byte(valid), false)
	f.Add([]byte(valid), true)
	s := newTestServer(f, Config{AllowPrivateEndpoints: true, MaxBodyBytes: 64 << 10}, Deps{Instant: &Instant{Agent: loop.NewAgent(loop.AgentConfig{})}})
	f.Fuzz(func(t *testing.T, body []byte, user bool) {
		req := newRequest(http.MethodPost, path, string(body), nil)
		if gz {
			req.Header.Set("X-Amsg-Request-Encoding", "gzip")
		}
		if user {
			req.Header.Set("X-User-Id", testUserID)
		}
		_, err := s.readInstantCall(httptest.NewRecorder(), req, decode)
		if err == nil {
			return
		}
		apiErr, ok := err.(*Error)
		if !ok || apiErr.Status < 400 || apiErr.Status >= 500 || apiErr.Code == "" || strings.TrimSpace(apiErr.Message) == "" {
			t.Fatalf("%q: %v", body, err)
		}
	})
}

const (
	validInstantBody  = `{"contactName":"Rei","messages":[{"role":"user","content":"hi"}],"apiUrl":"u","apiKey":"k","primaryModel":"m","pushSubscription":{"endpoint":"http://127.0.0.1:1/p"}}`
	validContinueBody = `{"sessionId":"s","contactName":"Rei","messages":[{"role":"tool","tool_call_id":"a","content":""}],"apiUrl":"u","apiKey":"k","primaryModel":"m"}`
)

func FuzzInstantBody(f *testing.F) {
	fuzzRequestPipeline(f, "/api/v1/instant", decodeInstant, false, instantRows, validInstantBody)
}

func FuzzContinueBody(f *testing.F) {
	fuzzRequestPipeline(f, "/api/v1/continue", decodeContinue, false, continueRows, validContinueBody)
}

// FuzzGzipBody feeds arbitrary bytes as a gzipped /instant body: bombs,
// truncations and garbage included.
func FuzzGzipBody(f *testing.F) {
	f.Add([]byte(gzipped(f, validInstantBody)), false)
	f.Add([]byte(gzipped(f, validContinueBody)), true)
	f.Add([]byte(gzipped(f, strings.Repeat(" ", 1<<20))), false)
	f.Add([]byte(gzipped(f, validInstantBody)+gzipped(f, "{}")), false)
	f.Add([]byte("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"), false)
	fuzzRequestPipeline(f, "/api/v1/instant", decodeInstant, true, nil, "")
}
