package llm

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"amsg/llm/llmtest"
)

const testKey = "sk-test-0123456789"

func ptr[T any](v T) *T { return &v }

func TestCompleteSendsTheStandardRequest(t *testing.T) {
	llm := llmtest.NewServer(t)
	llm.Enqueue(llmtest.Reply{Content: "ok"})
	c := NewClient(Config{Policy: testPolicy})
	_, err := c.Complete(context.Background(), Request{
		APIURL: llm.URL + "/v1/", APIKey: testKey, Model: "gpt-x",
		Prompt: "<b>hi</b> & 你好", MaxTokens: 5,
	})
	if err != nil {
		t.Fatal(err)
	}
	req := llm.Requests()[0]
	if req.Method != http.MethodPost || req.Path != "/v1/chat/completions" {
		t.Errorf("%s %s", req.Method, req.Path)
	}
	if got := req.Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q", got)
	}
	if got := req.Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q", got)
	}
	want := `{"model":"gpt-x","messages":[{"role":"user","content":"<b>hi</b> & 你好"}],"stream":false,"temperature":0.8,"max_tokens":5}`
	if string(req.Raw) != want {
		t.Errorf("body\n got %s\nwant %s", req.Raw, want)
	}
}

func TestRequestBody(t *testing.T) {
	messages := `[ {"role":"system","content":"\u003cs\u003e"},
	{"role":"user","content":"hi","name":"u"} ]`
	tools := `[{"type":"function","function":{"name":"get_time","parameters":{}}}]`
	tests := []struct {
		name   string
		req    Request
		stream bool
		want   string
	}{
		{"messages untouched, no default temperature",
			Request{Model: "m", Messages: json.RawMessage(messages)}, false,
			`{"model":"m","messages":` + messages + `,"stream":false}`},
		{"given temperature on either path",
			Request{Model: "m", Messages: json.RawMessage(messages), Temperature: ptr(0.25)}, false,
			`{"model":"m","messages":` + messages + `,"stream":false,"temperature":0.25}`},
		{"prompt with temperature 0",
			Request{Model: "m", Prompt: "p", Temperature: ptr(0.0)}, false,
			`{"model":"m","messages":[{"role":"user","content":"p"}],"stream":false,"temperature":0}`},
		{"extra body first, core keys win, others pass",
			Request{Model: "m", Messages: json.RawMessage(`[{"role":"user","content":"x"}]`), MaxTokens: 7,
				ExtraBody: json.RawMessage(`{"temperature":0.1,"tools":` + tools + `,"model":"x","max_tokens":5,"reasoning_effort":"low","stream":true}`)}, false,
			`{"temperature":0.1,"tools":` + tools + `,"reasoning_effort":"low","model":"m","messages":[{"role":"user","content":"x"}],"stream":false,"max_tokens":7}`},
		{"repeated extra key keeps first place, last value",
			Request{Model: "m", Prompt: "p", ExtraBody: json.RawMessage(`{"a":1,"b":2,"a":3}`)}, false,
			`{"a":3,"b":2,"model":"m","messages":[{"role":"user","content":"p"}],"stream":false,"temperature":0.8}`},
		{"extra body that is not an object is ignored",
			Request{Model: "m", Prompt: "p", ExtraBody: json.RawMessage(`[1]`)}, false,
			`{"model":"m","messages":[{"role":"user","content":"p"}],"stream":false,"temperature":0.8}`},
		{"tools and tool_choice passed through",
			Request{Model: "m", Messages: json.RawMessage(`[{"role":"user","content":"x"}]`), Tools: json.RawMessage(tools), ToolChoice: json.RawMessage(`"auto"`)}, false,
			`{"model":"m","messages":[{"role":"user","content":"x"}],"stream":false,"tools":` + tools + `,"tool_choice":"auto"}`},
		{"tool_choice without tools, empty tools",
			Request{Model: "m", Prompt: "p", Tools: json.RawMessage(`[]`), ToolChoice: json.RawMessage(`"auto"`)}, false,
			`{"model":"m","messages":[{"role":"user","content":"p"}],"stream":false,"temperature":0.8}`},
		{"empty messages array: prompt path without default temperature",
			Request{Model: "m", Messages: json.RawMessage(`[]`), Prompt: "p"}, false,
			`{"model":"m","messages":[{"role":"user","content":"p"}],"stream":false}`},
		{"streaming asks for usage",
			Request{Model: "m", Prompt: "p"}, true,
			`{"model":"m","messages":[{"role":"user","content":"p"}],"stream":true,"stream_options":{"include_usage":true},"temperature":0.8}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := requestBody(tt.req, tt.stream)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestRequestBodyInvalid(t *testing.T) {
	tests := []struct {
		req  Request
		want string
	}{
		{Request{Prompt: "p", MaxTokens: -1}, "Invalid maxTokens: maxTokens must be a positive integer when provided."},
		{Request{}, "Invalid request: completePrompt or messages is required."},
		{Request{Messages: json.RawMessage(`[{`)}, "Invalid messages: not valid JSON."},
	}
	for _, tt := range tests {
		_, err := requestBody(tt.req, false)
		if err == nil || err.Error() != tt.want || !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("requestBody(%+v) = %v, want %q", tt.req, err, tt.want)
		}
	}
}

func TestCompleteReadsTheAnswer(t *testing.T) {
	llm := llmtest.NewServer(t)
	llm.Enqueue(llmtest.Reply{
		Content:          "  <think>ignored, the field wins</think>你好。今天好天气！ ",
		ReasoningContent: " plan ",
		ToolCalls:        []llmtest.ToolCall{{ID: "call_1", Name: "get_time", Arguments: `{"tz":"Asia/Tokyo"}`}},
		Usage:            &llmtest.Usage{PromptTokens: 30, CachedTokens: 10, CompletionTokens: 20, ReasoningTokens: 5},
	})
	resp, err := NewClient(Config{Policy: testPolicy}).Complete(context.Background(), Request{APIURL: llm.APIURL(), APIKey: testKey, Model: "m", Prompt: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Usage{InputTokens: 30, CachedInputTokens: 10, OutputTokens: 20, ReasoningTokens: 5, Reported: true}); resp.Usage != want {
		t.Errorf("Usage = %+v", resp.Usage)
	}
	reasoning, text := resp.Output()
	if reasoning != "plan" || text != "你好。今天好天气！" {
		t.Errorf("Output() = %q, %q", reasoning, text)
	}
	calls, err := resp.Calls()
	if err != nil || len(calls) != 1 || calls[0] != (ToolCall{ID: "call_1", Type: "function", Function: ToolCallFunction{Name: "get_time", Arguments: `{"tz":"Asia/Tokyo"}`}}) {
		t.Errorf("Calls() = %+v, %v", calls, err)
	}
	if resp.FinishReason != "tool_calls" {
		t.Errorf("FinishReason = %q", resp.FinishReason)
	}
}

func TestCompleteKeepsTheMessageVerbatim(t *testing.T) {
	message := `{"role":"assistant","content":null,"refusal":null,"annotations":[],"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\u0022a\u0022:1}"}}],"x_vendor":{"k":1}}`
	llm := llmtest.NewServer(t)
	llm.Enqueue(llmtest.Reply{Body: `{"choices":[{"index":0,"message":` + message + `,"finish_reason":"tool_calls"}]}`})
	resp, err := NewClient(Config{Policy: testPolicy}).Complete(context.Background(), Request{APIURL: llm.APIURL(), Model: "m", Prompt: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Message) != message {
		t.Errorf("Message = %s", resp.Message)
	}
	if string(resp.ToolCalls) != `[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\u0022a\u0022:1}"}}]` {
		t.Errorf("ToolCalls = %s", resp.ToolCalls)
	}
	if resp.Usage.Reported {
		t.Error("Usage.Reported without usage")
	}
	// The message can be appended to a history that passes the shape check.
	history := append([]byte(`[{"role":"user","content":"q"},`), append(resp.Message, ']')...)
	if e := ValidateMessages(history); e != nil {
		t.Errorf("history with the answer: %v", e)
	}
}

func TestCompleteErrors(t *testing.T) {
	tests := []struct {
		name         string
		reply        llmtest.Reply
		req          Request
		kind         error
		want         string // with <url> for the endpoint
		status       int
		providerMsg  string
		providerCode string
	}{
		{"405 hint", llmtest.Reply{Status: 405}, Request{}, ErrStatus,
			"AI API error: 405 Method Not Allowed. apiUrl must point to a full chat endpoint (for example: /chat/completions). Received: <url>", 405, "llmtest error", ""},
		{"status with provider detail", llmtest.Reply{Status: 401, Body: `{"error":{"message":"Incorrect API key provided: ` + testKey + `","type":"invalid_request_error","code":"invalid_api_key"}}`}, Request{}, ErrStatus,
			"AI API error: 401 Unauthorized. Request URL: <url>", 401, "Incorrect API key provided: [redacted]", "invalid_api_key"},
		{"status with plain-text body", llmtest.Reply{Status: 502, Body: "<html>bad gateway</html>"}, Request{}, ErrStatus,
			"AI API error: 502 Bad Gateway. Request URL: <url>", 502, "<html>bad gateway</html>", ""},
		{"unknown status text", llmtest.Reply{Status: 599, Body: `{"msg":"relay down","code":"E1"}`}, Request{}, ErrStatus,
			"AI API error: 599 status code 599. Request URL: <url>", 599, "relay down", "E1"},
		{"missing content", llmtest.Reply{Content: "  "}, Request{RequireContent: true}, ErrMissingContent,
			"AI API error: response missing choices[0].message.content", 200, "", ""},
		{"tool calls only are fine without RequireContent but not with it",
			llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "a", Name: "f", Arguments: "{}"}}}, Request{RequireContent: true}, ErrMissingContent,
			"AI API error: response missing choices[0].message.content", 200, "", ""},
		{"not JSON", llmtest.Reply{Body: "<html>"}, Request{}, ErrBadResponse,
			"AI API error: HTTP 200 but body is not valid JSON. Request URL: <url>", 200, "", ""},
		{"error in a 200", llmtest.Reply{Body: `{"error":{"message":"quota","code":"insufficient_quota"}}`}, Request{}, ErrBadResponse,
			"AI API error: HTTP 200 but body is not a chat completion (no choices). Request URL: <url>", 200, "quota", "insufficient_quota"},
		{"key echoed in a 200 error", llmtest.Reply{Body: `{"error":{"message":"bad key ` + testKey + `","code":"` + testKey + `"}}`}, Request{}, ErrBadResponse,
			"AI API error: HTTP 200 but body is not a chat completion (no choices). Request URL: <url>", 200, "bad key [redacted]", "[redacted]"},
		{"choices not an array", llmtest.Reply{Body: `{"choices":"x"}`}, Request{}, ErrBadResponse,
			"AI API error: HTTP 200 but body is not a chat completion (no choices). Request URL: <url>", 200, `{"choices":"x"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			llm := llmtest.NewServer(t)
			llm.Enqueue(tt.reply)
			req := tt.req
			req.APIURL, req.APIKey, req.Model, req.Prompt = llm.APIURL(), testKey, "m", "p"
			_, err := NewClient(Config{Policy: testPolicy}).Complete(context.Background(), req)
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, tt.kind) {
				t.Fatalf("err = %v, want an *Error of kind %v", err, tt.kind)
			}
			if want := strings.ReplaceAll(tt.want, "<url>", llm.URL+"/v1/chat/completions"); e.Error() != want {
				t.Errorf("Error() = %q\nwant %q", e.Error(), want)
			}
			if e.Status != tt.status || e.ProviderMessage != tt.providerMsg || e.ProviderCode != tt.providerCode {
				t.Errorf("Status %d, ProviderMessage %q, ProviderCode %q", e.Status, e.ProviderMessage, e.ProviderCode)
			}
			if strings.Contains(e.Error()+e.ProviderMessage+e.ProviderCode, testKey) {
				t.Error("the API key leaked into the error")
			}
		})
	}
}

func TestReasonPhrase(t *testing.T) {
	for status, want := range map[string]string{"404 Not Found": "Not Found", "599": "Unknown Error", "200 ": "Unknown Error", "418 I'm a teapot": "I'm a teapot"} {
		code, _ := strconv.Atoi(strings.Fields(status)[0])
		if got := reasonPhrase(&http.Response{Status: status, StatusCode: code}); got != want {
			t.Errorf("reasonPhrase(%q) = %q, want %q", status, got, want)
		}
	}
}

func TestCompleteBounds(t *testing.T) {
	llm := llmtest.NewServer(t)
	hold := make(chan struct{}) // never released
	llm.Enqueue(llmtest.Reply{Content: "late", Release: hold}, llmtest.Reply{Content: "late", Release: hold},
		llmtest.Reply{Content: strings.Repeat("x", 200)})
	req := Request{APIURL: llm.APIURL(), APIKey: testKey, Model: "m", Prompt: "p"}

	_, err := NewClient(Config{Policy: testPolicy, Timeout: 20 * time.Millisecond}).Complete(context.Background(), req)
	if !errors.Is(err, ErrTransport) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("timeout: err = %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := NewClient(Config{Policy: testPolicy}).Complete(ctx, req)
		done <- err
	}()
	llm.WaitRequests(2)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) || err.Error() != "AI API error: request canceled. Request URL: "+llm.URL+"/v1/chat/completions" {
		t.Errorf("cancel: err = %v", err)
	}

	_, err = NewClient(Config{Policy: testPolicy, MaxResponseBytes: 100}).Complete(context.Background(), req)
	if !errors.Is(err, ErrResponseTooLarge) {
		t.Errorf("size: err = %v", err)
	}

	_, err = NewClient(Config{Policy: testPolicy}).Complete(context.Background(), Request{APIURL: "not a url", Prompt: "p"})
	if !errors.Is(err, ErrInvalidAPIURL) || err.Error() != `Invalid apiUrl: "not a url". Please provide a valid absolute URL.` {
		t.Errorf("bad url: err = %v", err)
	}
	if n := len(llm.Requests()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

func TestStreamAssemblesTheSameResponse(t *testing.T) {
	reply := llmtest.Reply{
		Content:          "你好。今天好天气！",
		ReasoningContent: "先想一想",
		ToolCalls: []llmtest.ToolCall{
			{ID: "call_1", Name: "get_time", Arguments: `{"tz":"Asia/Tokyo"}`},
			{ID: "call_2", Name: "get_weather", Arguments: `{"city":"東京"}`},
		},
		Usage:      &llmtest.Usage{PromptTokens: 9, CachedTokens: 2, CompletionTokens: 7, ReasoningTokens: 3},
		ChunkRunes: 2,
	}
	llm := llmtest.NewServer(t)
	llm.Enqueue(reply, reply)
	c := NewClient(Config{Policy: testPolicy})
	req := Request{APIURL: llm.APIURL(), APIKey: testKey, Model: "m", Messages: json.RawMessage(`[{"role":"user","content":"q"}]`)}

	var deltas []Delta
	streamed, err := c.Stream(context.Background(), req, func(d Delta) error {
		deltas = append(deltas, d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if streamed.Content != plain.Content || streamed.ReasoningContent != plain.ReasoningContent ||
		streamed.FinishReason != plain.FinishReason || streamed.Usage != plain.Usage {
		t.Errorf("streamed %+v\n   plain %+v", streamed, plain)
	}
	sc, _ := streamed.Calls()
	pc, _ := plain.Calls()
	if !reflect.DeepEqual(sc, pc) || len(sc) != 2 {
		t.Errorf("calls: streamed %+v, plain %+v", sc, pc)
	}
	wantMessage := `{"role":"assistant","content":"你好。今天好天气！","reasoning_content":"先想一想","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_time","arguments":"{\"tz\":\"Asia/Tokyo\"}"}},{"id":"call_2","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"東京\"}"}}]}`
	if string(streamed.Message) != wantMessage {
		t.Errorf("Message = %s", streamed.Message)
	}
	var content strings.Builder
	for _, d := range deltas {
		content.WriteString(d.Content)
	}
	if content.String() != reply.Content || len(deltas) < 5 {
		t.Errorf("%d deltas with content %q", len(deltas), content.String())
	}
	body := llm.Requests()[0].Body
	if string(body["stream"]) != "true" || string(body["stream_options"]) != `{"include_usage":true}` {
		t.Errorf("stream body: %s", llm.Requests()[0].Raw)
	}
	if llm.Requests()[0].Header.Get("Accept") != "text/event-stream" {
		t.Error("Accept header")
	}
}

func TestStreamFirstSentenceBeforeTheModelFinishes(t *testing.T) {
	llm := llmtest.NewServer(t)
	st := llm.Stream()
	sentences := make(chan string, 10)
	seg := DefaultSplitter().NewSegmenter()
	result := make(chan *Response, 1)
	go func() {
		resp, err := NewClient(Config{Policy: testPolicy}).Stream(context.Background(),
			Request{APIURL: llm.APIURL(), APIKey: testKey, Model: "m", Prompt: "p"},
			func(d Delta) error {
				done, err := seg.Write(d.Content)
				for _, s := range done {
					sentences <- s
				}
				return err
			})
		if err != nil {
			t.Error(err)
		}
		result <- resp
	}()

	st.Reasoning("想")
	st.Content("你好")
	st.Content("。今")
	if got := <-sentences; got != "你好。" {
		t.Fatalf("first sentence = %q", got)
	}
	// The model is still generating: nothing else arrived, no result yet.
	select {
	case s := <-sentences:
		t.Fatalf("unexpected sentence %q", s)
	case <-result:
		t.Fatal("the call ended early")
	default:
	}
	st.Content("天好天气！明天")
	if got := <-sentences; got != "今天好天气！" {
		t.Fatalf("second sentence = %q", got)
	}
	st.Send(llmtest.Chunk{FinishReason: "stop"})
	st.Send(llmtest.Chunk{Usage: &llmtest.Usage{PromptTokens: 4, CompletionTokens: 6}})
	st.Done()
	resp := <-result
	if resp.Content != "你好。今天好天气！明天" || resp.ReasoningContent != "想" || resp.Usage.OutputTokens != 6 || resp.FinishReason != "stop" {
		t.Fatalf("response %+v", resp)
	}
	rest, _ := seg.Flush()
	if !reflect.DeepEqual(rest, []string{"明天"}) {
		t.Fatalf("Flush = %q", rest)
	}
}

func TestStreamTolerance(t *testing.T) {
	llm := llmtest.NewServer(t)
	st := llm.Stream()
	result := make(chan *Response, 1)
	go func() {
		resp, err := NewClient(Config{Policy: testPolicy}).Stream(context.Background(), Request{APIURL: llm.APIURL(), Model: "m", Prompt: "p"}, nil)
		if err != nil {
			t.Error(err)
		}
		result <- resp
	}()
	st.Raw(": keepalive\r\n\r\n")
	st.Raw("event: message\r\nid: 1\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\r\n\r\n")
	st.Raw("retry: 10\rdata:{\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\r\r")
	st.Raw("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"x\",\"function\":{\"name\":\"f\",\"arguments\":\"{\"}}]}}]}\n\n")
	st.Raw("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\"}\"}}]}}]}\n\n")
	st.Raw("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":\"bad\",\"completion_tokens\":2}}\n\n")
	st.End() // no [DONE]
	resp := <-result
	if resp.Content != "ab" || string(resp.ToolCalls) != `[{"id":"x","type":"function","function":{"name":"f","arguments":"{}"}}]` {
		t.Errorf("Content %q, ToolCalls %s", resp.Content, resp.ToolCalls)
	}
	if resp.Usage != (Usage{OutputTokens: 2, Reported: true}) {
		t.Errorf("Usage %+v", resp.Usage)
	}
}

func TestStreamFailures(t *testing.T) {
	llm := llmtest.NewServer(t)
	req := Request{APIURL: llm.APIURL(), APIKey: testKey, Model: "m", Prompt: "p"}
	c := NewClient(Config{Policy: testPolicy})

	// An error event in the middle of the stream.
	llm.Enqueue(llmtest.Reply{Body: "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"error\":{\"message\":\"overloaded\",\"code\":\"busy\"}}\n\n"})
	_, err := c.Stream(context.Background(), req, nil)
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrBadResponse) || e.ProviderMessage != "overloaded" || e.ProviderCode != "busy" ||
		e.Error() != "AI API error: the stream reported an error. Request URL: "+llm.URL+"/v1/chat/completions" {
		t.Errorf("error event: %v (%+v)", err, e)
	}

	// A broken chunk.
	llm.Enqueue(llmtest.Reply{Body: "data: {\"choices\":\n\n"})
	if _, err := c.Stream(context.Background(), req, nil); !errors.Is(err, ErrBadResponse) {
		t.Errorf("broken chunk: %v", err)
	}

	// An error status is reported as for Complete.
	llm.Enqueue(llmtest.Reply{Status: 429, Body: `{"error":{"message":"slow down"}}`})
	if _, err := c.Stream(context.Background(), req, nil); !errors.As(err, &e) || e.Status != 429 || e.ProviderMessage != "slow down" {
		t.Errorf("status: %v", err)
	}

	// The callback's error stops the call and comes back unchanged.
	stop := errors.New("client went away")
	llm.Enqueue(llmtest.Reply{Content: "abcdefgh"})
	calls := 0
	_, err = c.Stream(context.Background(), req, func(Delta) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Errorf("callback error: %v after %d calls", err, calls)
	}

	// An endpoint that ignores "stream": true.
	llm.Enqueue(llmtest.Reply{Content: "whole", IgnoreStream: true})
	var got []Delta
	resp, err := c.Stream(context.Background(), req, func(d Delta) error { got = append(got, d); return nil })
	if err != nil || resp.Content != "whole" || len(got) != 1 || got[0].Content != "whole" {
		t.Errorf("plain answer: %v, %+v, %+v", err, resp, got)
	}

	// Too large.
	llm.Enqueue(llmtest.Reply{Content: strings.Repeat("x", 400)})
	if _, err := NewClient(Config{Policy: testPolicy, MaxResponseBytes: 300}).Stream(context.Background(), req, nil); !errors.Is(err, ErrResponseTooLarge) {
		t.Errorf("too large: %v", err)
	}

	// A held stream times out.
	llm.Stream() // never sends
	if _, err := NewClient(Config{Policy: testPolicy, Timeout: 20 * time.Millisecond}).Stream(context.Background(), req, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("timeout: %v", err)
	}
}

func TestLogsNeverCarrySecrets(t *testing.T) {
	llm := llmtest.NewServer(t)
	llm.Enqueue(llmtest.Reply{Content: "ok", Usage: &llmtest.Usage{PromptTokens: 1, CompletionTokens: 2}},
		llmtest.Reply{Status: 401, Body: `{"error":{"message":"bad key ` + testKey + `"}}`})
	var logs strings.Builder
	c := NewClient(Config{Policy: testPolicy, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	req := Request{APIURL: llm.APIURL() + "?key=query-secret", APIKey: testKey, Model: "m", Prompt: "prompt-text"}
	if _, err := c.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(context.Background(), req); !errors.Is(err, ErrStatus) {
		t.Fatal(err)
	}
	out := logs.String()
	for _, secret := range []string{testKey, "query-secret", "prompt-text"} {
		if strings.Contains(out, secret) {
			t.Errorf("log contains %q:\n%s", secret, out)
		}
	}
	if !strings.Contains(out, "outputTokens=2") || !strings.Contains(out, `error="LLM endpoint answered with an error status"`) || !strings.Contains(out, "status=401") {
		t.Errorf("log lacks the call facts:\n%s", out)
	}
}

// FuzzReadCompletion feeds arbitrary bodies to the non-streamed answer
// reader: an answer whose message is valid JSON and whose output and tool
// calls can be read, or an *Error, never a panic.
func FuzzReadCompletion(f *testing.F) {
	for _, seed := range []string{
		`{"choices":[{"message":{"role":"assistant","content":"<think>a</think>b。c"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`,
		`{"choices":[{"message":{"content":null,"reasoning_content":"r","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`,
		`{"choices":[{"message":{"content":[{"type":"text","text":"x"}],"tool_calls":{}}}],"usage":{"prompt_tokens":1e400}}`,
		`{"choices":[]}`, `{"error":{"message":"quota","code":"insufficient_quota"}}`, `{"choices":[null]}`, `[]`, `nope`,
		// Issue 22: a tool call id that is an object gave an untyped error.
		`{"choices":[{"message":{"tool_calls":[{"id":{},"type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`,
	} {
		f.Add(seed)
	}
	c := NewClient(Config{Policy: testPolicy, MaxResponseBytes: 1 << 16})
	f.Fuzz(func(t *testing.T, body string) {
		resp, err := c.readCompletion(strings.NewReader(body), 200, "http://x", "k")
		var e *Error
		switch {
		case err != nil:
			if !errors.As(err, &e) {
				t.Fatalf("error of type %T: %v", err, err)
			}
		case !json.Valid(resp.Message):
			t.Fatalf("invalid message %s from %s", resp.Message, body)
		default:
			resp.Output()
			if _, err := resp.Calls(); err != nil && !errors.As(err, &e) {
				t.Fatalf("calls error of type %T: %v", err, err)
			}
		}
	})
}
