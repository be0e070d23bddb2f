package api

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"amsg/llm"
	"amsg/llm/llmtest"
	"amsg/loop"
	"amsg/push/courier"
	"amsg/push/pushtest"
	"amsg/scheduler"
	"amsg/store"
	"amsg/store/storetest"
)

// instantFixture is a server with the agent loop, a fake LLM and a fake push
// service, on a real loopback HTTP server for the streaming tests.
type instantFixture struct {
	s     *Server
	http  *httptest.Server
	store *store.Store
	llm   *llmtest.Server
	push  *pushtest.Server
}

func newInstantFixture(t testing.TB, cfg Config, agent loop.AgentConfig) *instantFixture {
	t.Helper()
	return newPolicyInstantFixture(t, cfg, agent, courier.PolicyUpstream)
}

// newPolicyInstantFixture is newInstantFixture with the courier under policy.
func newPolicyInstantFixture(t testing.TB, cfg Config, agent loop.AgentConfig, policy courier.Policy) *instantFixture {
	t.Helper()
	st := storetest.New(t)
	deliveries, fake := newTestCourier(t, st, policy)
	agent.Client = llm.NewClient(llm.Config{Policy: llm.URLPolicy{AllowPrivate: true}})
	agent.Transcripts = loop.NewTranscripts(st, nil)
	agent.Logger = testLogger(t)
	cfg.AllowPrivateEndpoints = true
	cfg.LLMPolicy = llm.URLPolicy{AllowPrivate: true}
	a := loop.NewAgent(agent)
	s := newTestServer(t, cfg, Deps{Store: st, Courier: deliveries,
		Instant: &Instant{Agent: a, Interrupts: scheduler.NewInterrupts(a, deliveries, scheduler.InterruptsConfig{Logger: agent.Logger}),
			KeepAlive: 20 * time.Millisecond}})
	h := httptest.NewServer(s)
	t.Cleanup(h.Close)
	return &instantFixture{s: s, http: h, store: st, llm: llmtest.NewServer(t), push: fake}
}

// body is a valid /instant body; extra members are merged in (nil deletes).
func (f *instantFixture) body(extra map[string]any) map[string]any {
	b := map[string]any{
		"contactName":  "Rei",
		"messages":     []any{map[string]any{"role": "user", "content": "what time is it?"}},
		"apiUrl":       f.llm.APIURL(),
		"apiKey":       "sk-test",
		"primaryModel": "m",
	}
	for k, v := range extra {
		if v == nil {
			delete(b, k)
		} else {
			b[k] = v
		}
	}
	return b
}

var getTimeTool = []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_time", "parameters": map[string]any{"type": "object"}}}}

func jsonBody(t testing.TB, v any) string {
	t.Helper()
	b, err := marshalJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(string(b), "\n")
}

// jsonHeaders ask for the JSON envelope.
var jsonHeaders = map[string]string{"Content-Type": "application/json", "Accept": "application/json"}

func withHeaders(base map[string]string, extra map[string]string) map[string]string {
	out := maps.Clone(base)
	maps.Copy(out, extra)
	return out
}

// pushSummary reduces a decrypted push to what the tests compare.
type pushSummary struct {
	Kind, ID, Session, Text string
	Index, Total            int
}

func summarize(t testing.TB, raw []byte) pushSummary {
	t.Helper()
	var p struct {
		MessageKind      string          `json:"messageKind"`
		MessageID        string          `json:"messageId"`
		SessionID        string          `json:"sessionId"`
		Message          string          `json:"message"`
		ReasoningContent string          `json:"reasoningContent"`
		Code             string          `json:"code"`
		ToolCalls        json.RawMessage `json:"toolCalls"`
		MessageIndex     int             `json:"messageIndex"`
		TotalMessages    int             `json:"totalMessages"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatalf("push %s: %v", raw, err)
	}
	s := pushSummary{Kind: p.MessageKind, ID: p.MessageID, Session: p.SessionID, Index: p.MessageIndex, Total: p.TotalMessages}
	switch p.MessageKind {
	case "content":
		s.Text = p.Message
	case "reasoning":
		s.Text = p.ReasoningContent
	case "tool_request":
		s.Text = string(p.ToolCalls)
	case "error":
		s.Text = p.Code + ": " + p.Message
	}
	return s
}

// waitPushes waits for n decrypted pushes at the fake push service.
func (f *instantFixture) waitPushes(t *testing.T, n int) []pushSummary {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	pushes, err := f.push.WaitPushes(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	if errs := f.push.Errors(); len(errs) > 0 {
		t.Fatalf("the push service saw bad requests: %v", errs)
	}
	out := make([]pushSummary, len(pushes))
	for i, p := range pushes {
		out[i] = summarize(t, p.JSON)
	}
	return out
}

func kinds(pushes []pushSummary) []string {
	var out []string
	for _, p := range pushes {
		out = append(out, p.Kind)
	}
	return out
}

type transcriptJSON struct {
	SessionID string `json:"sessionId"`
	Usage     struct {
		Input  int64 `json:"inputTokens"`
		Output int64 `json:"outputTokens"`
		Total  int64 `json:"totalTokens"`
	} `json:"usage"`
	Messages []struct {
		ID        string   `json:"id"`
		Seq       int      `json:"seq"`
		Type      string   `json:"type"`
		Iteration int      `json:"iteration"`
		Text      string   `json:"text"`
		Pushes    []string `json:"pushes"`
		Usage     struct {
			Input     int64 `json:"inputTokens"`
			Cached    int64 `json:"cachedTokens"`
			Output    int64 `json:"outputTokens"`
			Reasoning int64 `json:"reasoningTokens"`
		} `json:"usage"`
	} `json:"messages"`
}

func (f *instantFixture) transcript(t *testing.T, userID, sessionID string) transcriptJSON {
	t.Helper()
	got := do(t, f.s, http.MethodGet, "/api/v1/sessions/"+sessionID, map[string]string{"X-User-Id": userID})
	if got.status != http.StatusOK {
		t.Fatalf("GET session = %d %s", got.status, got.body)
	}
	var tr transcriptJSON
	decrypted(t, userID, got, &tr)
	return tr
}

var toolReply = llmtest.Reply{ReasoningContent: "I should look at the clock.",
	ToolCalls: []llmtest.ToolCall{{ID: "call_1", Name: "get_time", Arguments: `{"timezone":"Asia/Shanghai"}`}},
	Usage:     &llmtest.Usage{PromptTokens: 40, CompletionTokens: 12, ReasoningTokens: 8}}

var answerReply = llmtest.Reply{ReasoningContent: "It is noon there.", Content: "现在是中午十二点。要吃午饭吗？",
	Usage: &llmtest.Usage{PromptTokens: 70, CachedTokens: 40, CompletionTokens: 15, ReasoningTokens: 5}}

const toolResult = `[{"role":"tool","tool_call_id":"call_1","content":"12:00"}]`

// TestInstantToolLoop is the loop of issue 4 over the JSON transport, with
// an encrypted body as amsg-client sends it: a reasoning push and a
// tool_request push, /continue with only the tool result, the content
// pushes, and the six messages of the transcript.
func TestInstantToolLoop(t *testing.T) {
	f := newInstantFixture(t, Config{}, loop.AgentConfig{})
	device := f.push.Subscribe()
	if _, err := f.store.PutSubscription(t.Context(), testUserID, json.RawMessage(jsonBody(t, device)), time.Time{}); err != nil {
		t.Fatal(err)
	}
	f.llm.Enqueue(toolReply, answerReply)

	req := encryptedRequest(t, http.MethodPost, "/api/v1/instant", testUserID, f.body(map[string]any{"tools": getTimeTool, "sessionId": "sess_tool"}))
	req.Header.Set("Accept", "application/json")
	got := serve(f.s, req)
	var res roundResult
	decodeData(t, got.body, &res)
	if got.status != 200 || res.Status != loop.StatusToolRequested || res.SessionID != "sess_tool" || res.Iteration != 0 || res.MessagesSent != 1 {
		t.Fatalf("/instant = %d %s", got.status, got.body)
	}
	pushes := f.waitPushes(t, 2)
	if !reflect.DeepEqual(kinds(pushes), []string{"reasoning", "tool_request"}) || pushes[0].Session != "sess_tool" || pushes[1].Session != "sess_tool" {
		t.Fatalf("pushes after /instant: %+v", pushes)
	}
	if pushes[1].Text != `[{"id":"call_1","type":"function","function":{"name":"get_time","arguments":"{\"timezone\":\"Asia/Shanghai\"}"}}]` {
		t.Errorf("toolCalls = %s, want the model's tool_calls untouched", pushes[1].Text)
	}
	if tools := string(f.llm.Requests()[0].Body["tools"]); !strings.Contains(tools, "get_time") {
		t.Errorf("the LLM did not get the tools: %s", tools)
	}

	req = encryptedRequest(t, http.MethodPost, "/api/v1/continue", testUserID, map[string]any{
		"sessionId": "sess_tool", "iteration": 1, "contactName": "Rei", "messages": json.RawMessage(toolResult),
		"apiUrl": f.llm.APIURL(), "apiKey": "sk-test", "primaryModel": "m",
	})
	req.Header.Set("Accept", "application/json")
	got = serve(f.s, req)
	decodeData(t, got.body, &res)
	if got.status != 200 || res.Status != loop.StatusFinished || res.Iteration != 1 || res.MessagesSent != 2 {
		t.Fatalf("/continue = %d %s", got.status, got.body)
	}
	pushes = f.waitPushes(t, 5)[2:]
	want := []pushSummary{
		{Kind: "reasoning", Session: "sess_tool", Text: "It is noon there."},
		{Kind: "content", Session: "sess_tool", Text: "现在是中午十二点。", Index: 1, Total: 2},
		{Kind: "content", Session: "sess_tool", Text: "要吃午饭吗？", Index: 2, Total: 2},
	}
	for i := range pushes {
		pushes[i].ID = ""
	}
	if !reflect.DeepEqual(pushes, want) {
		t.Errorf("pushes after /continue:\n%+v\nwant\n%+v", pushes, want)
	}
	var history []map[string]any
	_ = json.Unmarshal(f.llm.Requests()[1].Body["messages"], &history)
	if len(history) != 3 || history[1]["role"] != "assistant" || history[2]["content"] != "12:00" {
		t.Errorf("the second call's history: %s", f.llm.Requests()[1].Body["messages"])
	}
	checkToolLoopRecords(t, f)
}

// checkToolLoopRecords checks what TestInstantToolLoop's two rounds left
// behind: the transcript, and the outbox holding the pushes it names.
func checkToolLoopRecords(t *testing.T, f *instantFixture) {
	t.Helper()
	tr := f.transcript(t, testUserID, "sess_tool")
	var rows []string
	for _, m := range tr.Messages {
		rows = append(rows, fmt.Sprintf("%d %s it=%d pushes=%d in=%d cached=%d out=%d reasoning=%d",
			m.Seq, m.Type, m.Iteration, len(m.Pushes), m.Usage.Input, m.Usage.Cached, m.Usage.Output, m.Usage.Reasoning))
	}
	wantRows := []string{
		"1 input it=0 pushes=0 in=0 cached=0 out=0 reasoning=0",
		"2 reasoning it=0 pushes=1 in=0 cached=0 out=0 reasoning=0",
		"3 tool-calls it=0 pushes=1 in=40 cached=0 out=12 reasoning=8",
		"4 tool-results it=1 pushes=0 in=0 cached=0 out=0 reasoning=0",
		"5 reasoning it=1 pushes=1 in=0 cached=0 out=0 reasoning=0",
		"6 reply it=1 pushes=2 in=70 cached=40 out=15 reasoning=5",
	}
	if !reflect.DeepEqual(rows, wantRows) {
		t.Errorf("transcript:\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(wantRows, "\n"))
	}
	if tr.Usage.Total != 137 || tr.Messages[0].Text != "what time is it?" || tr.Messages[5].Text != "现在是中午十二点。要吃午饭吗？" {
		t.Errorf("transcript usage %+v, input %q, reply %q", tr.Usage, tr.Messages[0].Text, tr.Messages[5].Text)
	}
	// The pushes the transcript names are the pushes that went out.
	all := f.waitPushes(t, 5)
	var ids []string
	for _, m := range tr.Messages {
		ids = append(ids, m.Pushes...)
	}
	for i, p := range all {
		if ids[i] != p.ID {
			t.Errorf("transcript push %d = %s, delivered %s", i, ids[i], p.ID)
		}
	}
	// The user's pushes are in the outbox, delivered, for a page that missed one.
	page, err := f.store.UnackedOutbox(t.Context(), testUserID, 0, 100)
	if err != nil || len(page.Entries) != len(all) {
		t.Fatalf("outbox %+v, %v", page, err)
	}
	for i, e := range page.Entries {
		if e.MessageID != all[i].ID || e.SessionID != "sess_tool" || e.DeliveredAt.IsZero() {
			t.Errorf("outbox entry %d = %s delivered %v, want %s", i, e.MessageID, e.DeliveredAt, all[i].ID)
		}
	}
	for i := 1; i < len(tr.Messages); i++ {
		if tr.Messages[i].ID <= tr.Messages[i-1].ID {
			t.Errorf("ULIDs out of order: %s after %s", tr.Messages[i].ID, tr.Messages[i-1].ID)
		}
	}
}

// sseFrame is one frame of an event stream.
type sseFrame struct{ event, data string }

// sseReader reads frames as amsg-client does: CRLF tolerated, comments kept
// (as event ":") so tests can see keepalives.
type sseReader struct {
	r *bufio.Reader
}

func (s *sseReader) next() (sseFrame, error) {
	var f sseFrame
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return f, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if f.event != "" || f.data != "" {
				return f, nil
			}
		case strings.HasPrefix(line, ":"):
			return sseFrame{event: ":", data: strings.TrimSpace(line[1:])}, nil
		case strings.HasPrefix(line, "event:"):
			f.event = strings.TrimSpace(line[6:])
		case strings.HasPrefix(line, "data:"):
			f.data = strings.TrimSpace(line[5:])
		}
	}
}

// stream posts to the fixture's HTTP server with no Accept header, as
// amsg-client's stream does, and returns a frame reader.
func (f *instantFixture) stream(t *testing.T, ctx context.Context, path, body string) (*http.Response, *sseReader) {
	t.Helper()
	return f.streamWith(t, ctx, path, body, nil)
}

// streamWith is stream with more request headers.
func (f *instantFixture) streamWith(t *testing.T, ctx context.Context, path, body string, headers map[string]string) (*http.Response, *sseReader) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.http.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("Cache-Control") != "no-cache" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s = %d %v %s", path, resp.StatusCode, resp.Header, b)
	}
	return resp, &sseReader{bufio.NewReader(resp.Body)}
}

// payloads reads frames up to and including a done or error frame (or EOF),
// skipping keepalives.
func payloads(t *testing.T, r *sseReader) []sseFrame {
	t.Helper()
	var out []sseFrame
	for {
		fr, err := r.next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if fr.event == ":" {
			continue
		}
		out = append(out, fr)
		if fr.event == "done" || fr.event == "error" {
			return out
		}
	}
}

// TestInstantToolLoopOverSSE is the same loop over the event stream, with
// the request's own pushSubscription: frames in order, keepalives while the
// model is slow, and each payload's Web Push backup with the same bytes.
func TestInstantToolLoopOverSSE(t *testing.T) {
	f := newInstantFixture(t, Config{}, loop.AgentConfig{})
	sub := f.push.Subscribe()
	release := make(chan struct{})
	slow := toolReply
	slow.Release = release
	f.llm.Enqueue(slow, answerReply)

	resp, frames := f.stream(t, t.Context(), "/api/v1/instant", jsonBody(t, f.body(map[string]any{"tools": getTimeTool, "pushSubscription": sub, "sessionId": "sess_sse"})))
	// The first keepalive comes at once, before the model answers; more
	// follow while it is held.
	for i := range 3 {
		fr, err := frames.next()
		if err != nil || fr.event != ":" || fr.data != "keepalive" {
			t.Fatalf("frame %d while the model is slow = %+v, %v; want a keepalive", i, fr, err)
		}
	}
	f.llm.WaitRequests(1)
	close(release)
	got := payloads(t, frames)
	var streamed []pushSummary
	for _, fr := range got[:len(got)-1] {
		if fr.event != "payload" {
			t.Fatalf("frame %+v", fr)
		}
		streamed = append(streamed, summarize(t, []byte(fr.data)))
	}
	if last := got[len(got)-1]; last.event != "done" || last.data != "{}" {
		t.Fatalf("last frame %+v", last)
	}
	if !reflect.DeepEqual(kinds(streamed), []string{"reasoning", "tool_request"}) {
		t.Fatalf("frames %+v", streamed)
	}
	// The response ends once its backups have settled.
	if rest, err := io.ReadAll(resp.Body); err != nil || len(rest) != 0 {
		t.Fatalf("after done: %q, %v", rest, err)
	}
	backups := f.push.Pushes()
	if len(backups) != 2 {
		t.Fatalf("%d backups when the stream ended, want 2", len(backups))
	}
	for i, b := range backups {
		if string(b.JSON) != got[i].data || b.Endpoint != sub.Endpoint {
			t.Errorf("backup %d = %s, want the frame's bytes %s", i, b.JSON, got[i].data)
		}
	}

	resp, frames = f.stream(t, t.Context(), "/api/v1/continue", jsonBody(t, map[string]any{
		"sessionId": "sess_sse", "iteration": 1, "contactName": "Rei", "messages": json.RawMessage(toolResult),
		"apiUrl": f.llm.APIURL(), "apiKey": "sk-test", "primaryModel": "m", "pushSubscription": sub,
	}))
	got = payloads(t, frames)
	var texts []string
	for _, fr := range got {
		texts = append(texts, fr.event+" "+summarize(t, []byte(orEmpty(fr.data))).Text)
	}
	want := []string{"payload It is noon there.", "payload 现在是中午十二点。", "payload 要吃午饭吗？", "done "}
	if !reflect.DeepEqual(texts, want) {
		t.Errorf("continue frames %q, want %q", texts, want)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	backups = f.push.Pushes()[2:]
	if len(backups) != 3 {
		t.Fatalf("%d backups of /continue", len(backups))
	}
	for i, b := range backups {
		if string(b.JSON) != got[i].data {
			t.Errorf("backup %d = %s, frame %s", i, b.JSON, got[i].data)
		}
	}
}

func orEmpty(data string) string {
	if data == "{}" || data == "" {
		return `{"messageKind":""}`
	}
	return data
}

// TestSSEClientDisconnectStillDelivers: a client that goes away mid-stream
// stops the frames, not the round; every push still goes out.
func TestSSEClientDisconnectStillDelivers(t *testing.T) {
	f := newInstantFixture(t, Config{}, loop.AgentConfig{})
	sub := f.push.Subscribe()
	st := f.llm.Stream()
	ctx, cancel := context.WithCancel(t.Context())
	_, frames := f.stream(t, ctx, "/api/v1/instant", jsonBody(t, f.body(map[string]any{"pushSubscription": sub})))
	st.Content("第一句。第二")
	for {
		fr, err := frames.next()
		if err != nil {
			t.Fatal(err)
		}
		if fr.event == "payload" {
			break
		}
	}
	cancel() // the phone locks its screen
	st.Content("句。第三句。")
	st.Send(llmtest.Chunk{Usage: &llmtest.Usage{PromptTokens: 1, CompletionTokens: 1}})
	st.Done()
	pushes := f.waitPushes(t, 3)
	var texts []string
	for _, p := range pushes {
		texts = append(texts, fmt.Sprintf("%s %d/%d", p.Text, p.Index, p.Total))
	}
	if want := []string{"第一句。 1/2", "第二句。 2/3", "第三句。 3/3"}; !reflect.DeepEqual(texts, want) {
		t.Errorf("pushes %q, want %q", texts, want)
	}
}

// Under the visible push policy the reasoning of an SSE round is streamed
// and kept in the outbox but never sent by Web Push; the reply is, to the
// user's other device, and not to the streaming one (the request's
// pushSubscription), whose stream delivered it (issue 19).
func TestInstantVisiblePolicyStreamsReasoningWithoutPushingIt(t *testing.T) {
	f := newPolicyInstantFixture(t, Config{}, loop.AgentConfig{}, courier.PolicyVisible)
	sub, other := f.push.Subscribe(), f.push.Subscribe()
	for _, d := range []any{sub, other} {
		if _, err := f.store.PutSubscription(t.Context(), testUserID, json.RawMessage(jsonBody(t, d)), time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	f.llm.Enqueue(answerReply)
	resp, frames := f.streamWith(t, t.Context(), "/api/v1/instant", jsonBody(t, f.body(map[string]any{"pushSubscription": sub})),
		map[string]string{"X-User-Id": testUserID})
	got := payloads(t, frames)
	var streamed []pushSummary
	for _, fr := range got[:len(got)-1] {
		streamed = append(streamed, summarize(t, []byte(fr.data)))
	}
	if !reflect.DeepEqual(kinds(streamed), []string{"reasoning", "content", "content"}) {
		t.Fatalf("frames %+v", streamed)
	}
	if _, err := io.ReadAll(resp.Body); err != nil { // the response ends once the backups settled
		t.Fatal(err)
	}
	var pushed []string
	for _, p := range f.push.Pushes() {
		if p.Endpoint != other.Endpoint {
			t.Errorf("the streaming device got %s", p.JSON)
		}
		pushed = append(pushed, summarize(t, p.JSON).Kind)
	}
	if !reflect.DeepEqual(pushed, []string{"content", "content"}) {
		t.Errorf("pushed kinds %v, want the reply's two content pushes only", pushed)
	}
}

func TestInstantLLMFailure(t *testing.T) {
	for _, transport := range []string{"json", "sse"} {
		t.Run(transport, func(t *testing.T) {
			f := newInstantFixture(t, Config{}, loop.AgentConfig{})
			sub := f.push.Subscribe()
			f.llm.Enqueue(llmtest.Reply{Status: 500, Body: `{"error":{"message":"boom","code":"server_error"}}`})
			body := jsonBody(t, f.body(map[string]any{"pushSubscription": sub, "sessionId": "sess_fail"}))
			var streamed string
			if transport == "json" {
				got := post(f.s, "/api/v1/instant", body, jsonHeaders)
				want := `{"success":false,"error":{"code":"LLM_CALL_FAILED","message":"AI API error: 500 Internal Server Error. Request URL: ` + f.llm.URL +
					`/v1/chat/completions","llmStatus":500,"providerCode":"server_error"}}` + "\n"
				if got.status != http.StatusBadGateway || got.body != want {
					t.Fatalf("= %d %s\nwant %s", got.status, got.body, want)
				}
			} else {
				_, frames := f.stream(t, t.Context(), "/api/v1/instant", body)
				got := payloads(t, frames)
				if len(got) != 1 || got[0].event != "error" {
					t.Fatalf("frames %+v", got)
				}
				streamed = got[0].data
				p := summarize(t, []byte(streamed))
				if p.Text != "LLM_CALL_FAILED: AI API error: 500 Internal Server Error. Request URL: "+f.llm.URL+"/v1/chat/completions" ||
					p.Session != "sess_fail" || !strings.HasSuffix(p.ID, "_error") ||
					!strings.Contains(streamed, `"llmStatus":500,"providerCode":"server_error"`) {
					t.Errorf("error frame %s", streamed)
				}
			}
			// Both transports also send the error push by Web Push; over SSE
			// it is the error frame's push, same messageId, so the user's
			// other devices and a cut connection learn of it too.
			pushes := f.waitPushes(t, 1)
			if pushes[0].Kind != "error" || !strings.HasPrefix(pushes[0].Text, "LLM_CALL_FAILED: AI API error: 500") {
				t.Errorf("push %+v", pushes[0])
			}
			if transport == "sse" && pushes[0].ID != summarize(t, []byte(streamed)).ID {
				t.Errorf("error push %s, error frame %s: want one messageId", pushes[0].ID, summarize(t, []byte(streamed)).ID)
			}
		})
	}
}

func TestInstantStopsTheLoop(t *testing.T) {
	toolCall := llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c", Name: "get_time", Arguments: `{}`}}, Usage: &llmtest.Usage{PromptTokens: 90, CompletionTokens: 20}}
	for _, c := range []struct {
		name, code, message string
		status              loop.Status
		iteration           int
		agent               loop.AgentConfig
		extra               map[string]any
	}{
		{"loop exceeded", "LOOP_EXCEEDED", "Agentic loop exceeded 1 iterations", loop.StatusLoopExceeded, 1, loop.AgentConfig{MaxIterations: 1}, nil},
		{"budget", "BUDGET_EXHAUSTED", "Session token budget of 100 tokens exhausted (110 used)", loop.StatusBudgetExhausted, 0, loop.AgentConfig{}, map[string]any{"tokenBudget": 100}},
	} {
		for _, transport := range []string{"json", "sse"} {
			t.Run(c.name+"/"+transport, func(t *testing.T) {
				f := newInstantFixture(t, Config{}, c.agent)
				sub := f.push.Subscribe()
				f.llm.Enqueue(toolCall)
				extra := map[string]any{"pushSubscription": sub, "tools": getTimeTool}
				maps.Copy(extra, c.extra)
				body := jsonBody(t, f.body(extra))
				if transport == "json" {
					got := post(f.s, "/api/v1/instant", body, jsonHeaders)
					var res roundResult
					decodeData(t, got.body, &res)
					if got.status != 200 || res.Status != c.status || res.Iteration != c.iteration || res.MessagesSent != 0 {
						t.Errorf("= %d %s", got.status, got.body)
					}
				} else {
					_, frames := f.stream(t, t.Context(), "/api/v1/instant", body)
					got := payloads(t, frames)
					if len(got) != 2 || got[0].event != "payload" || got[1].event != "done" {
						t.Fatalf("frames %+v", got)
					}
				}
				pushes := f.waitPushes(t, 1)
				if len(pushes) != 1 || pushes[0].Text != c.code+": "+c.message {
					t.Errorf("pushes %+v", pushes)
				}
			})
		}
	}
}

// TestContinueRace: two /continue for the same iteration at once; exactly
// one proceeds and the other gets 409 CONCURRENT_CONTINUE before any call.
func TestContinueRace(t *testing.T) {
	f := newInstantFixture(t, Config{}, loop.AgentConfig{})
	sub := f.push.Subscribe()
	f.llm.Enqueue(toolReply, answerReply)
	if got := post(f.s, "/api/v1/instant", jsonBody(t, f.body(map[string]any{"tools": getTimeTool, "pushSubscription": sub, "sessionId": "race"})), jsonHeaders); got.status != 200 {
		t.Fatalf("/instant = %d %s", got.status, got.body)
	}
	body := jsonBody(t, map[string]any{"sessionId": "race", "iteration": 1, "contactName": "Rei", "messages": json.RawMessage(toolResult),
		"apiUrl": f.llm.APIURL(), "apiKey": "sk-test", "primaryModel": "m", "pushSubscription": sub})
	var wg sync.WaitGroup
	results := make([]response, 2)
	for i := range results {
		wg.Go(func() { results[i] = post(f.s, "/api/v1/continue", body, jsonHeaders) })
	}
	wg.Wait()
	statuses := []int{results[0].status, results[1].status}
	slices.Sort(statuses)
	if !reflect.DeepEqual(statuses, []int{200, 409}) {
		t.Fatalf("statuses %v: %s / %s", statuses, results[0].body, results[1].body)
	}
	for _, r := range results {
		if r.status == 409 && !strings.Contains(r.body, `"code":"CONCURRENT_CONTINUE"`) {
			t.Errorf("409 body %s", r.body)
		}
	}
	if n := len(f.llm.Requests()); n != 2 {
		t.Errorf("%d LLM calls, want 2 (the loser makes none)", n)
	}
	// A late duplicate is refused the same way.
	if got := post(f.s, "/api/v1/continue", body, jsonHeaders); got.status != 409 {
		t.Errorf("late duplicate = %d %s", got.status, got.body)
	}
}

func TestContinueErrors(t *testing.T) {
	f := newInstantFixture(t, Config{}, loop.AgentConfig{})
	sub := f.push.Subscribe()
	f.llm.Enqueue(toolReply)
	if got := post(f.s, "/api/v1/instant", jsonBody(t, f.body(map[string]any{"tools": getTimeTool, "pushSubscription": sub, "sessionId": "s"})), jsonHeaders); got.status != 200 {
		t.Fatal(got.body)
	}
	base := func(extra map[string]any) string {
		b := map[string]any{"sessionId": "s", "contactName": "Rei", "messages": json.RawMessage(toolResult),
			"apiUrl": f.llm.APIURL(), "apiKey": "sk-test", "primaryModel": "m", "pushSubscription": sub}
		for k, v := range extra {
			b[k] = v
		}
		return jsonBody(t, b)
	}
	other := f.push.Subscribe()
	for _, c := range []struct {
		name, body string
		status     int
		code       string
	}{
		{"unknown session", base(map[string]any{"sessionId": "nope"}), 404, "SESSION_NOT_FOUND"},
		{"another owner's session", base(map[string]any{"pushSubscription": other}), 404, "SESSION_NOT_FOUND"},
		{"wrong iteration", base(map[string]any{"iteration": 3}), 409, "CONCURRENT_CONTINUE"},
		{"result for another call", base(map[string]any{"messages": json.RawMessage(`[{"role":"tool","tool_call_id":"call_9","content":"x"}]`)}), 400, "INVALID_PAYLOAD_FORMAT"},
	} {
		got := post(f.s, "/api/v1/continue", c.body, jsonHeaders)
		if got.status != c.status || !strings.Contains(got.body, `"code":"`+c.code+`"`) {
			t.Errorf("%s: %d %s", c.name, got.status, got.body)
		}
	}
	if n := len(f.llm.Requests()); n != 1 {
		t.Errorf("%d LLM calls; refused requests must make none", n)
	}
}

func TestInstantRecipients(t *testing.T) {
	f := newInstantFixture(t, Config{}, loop.AgentConfig{})
	phone, laptop, extra := f.push.Subscribe(), f.push.Subscribe(), f.push.Subscribe()
	for _, d := range []any{phone, laptop} {
		if _, err := f.store.PutSubscription(t.Context(), testUserID, json.RawMessage(jsonBody(t, d)), time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	f.llm.Enqueue(llmtest.Reply{Content: "好。"}, llmtest.Reply{Content: "好。"})
	// Every device of the user, and the request's subscription once even
	// when it is one of them.
	headers := withHeaders(jsonHeaders, map[string]string{"X-User-Id": testUserID})
	if got := post(f.s, "/api/v1/instant", jsonBody(t, f.body(map[string]any{"pushSubscription": laptop})), headers); got.status != 200 {
		t.Fatalf("%d %s", got.status, got.body)
	}
	if got := post(f.s, "/api/v1/instant", jsonBody(t, f.body(map[string]any{"pushSubscription": extra})), headers); got.status != 200 {
		t.Fatalf("%d %s", got.status, got.body)
	}
	counts := map[string]int{}
	for _, p := range f.waitPushes(t, 5) {
		counts[p.ID]++
	}
	var endpoints []string
	for _, m := range f.push.Messages() {
		endpoints = append(endpoints, m.Endpoint)
	}
	slices.Sort(endpoints)
	want := []string{phone.Endpoint, phone.Endpoint, laptop.Endpoint, laptop.Endpoint, extra.Endpoint}
	slices.Sort(want)
	if !reflect.DeepEqual(endpoints, want) {
		t.Errorf("delivered to %q, want %q", endpoints, want)
	}

	// A user with no device and no subscription in the request.
	got := post(f.s, "/api/v1/instant", jsonBody(t, f.body(nil)), withHeaders(jsonHeaders, map[string]string{"X-User-Id": "123e4567-e89b-42d3-a456-426614174000"}))
	if got.status != http.StatusConflict || !strings.Contains(got.body, "PUSH_SUBSCRIPTION_MISSING") {
		t.Errorf("no recipient: %d %s", got.status, got.body)
	}
	// A subscription into a private network, when that is not allowed.
	strict := newTestServer(t, Config{}, Deps{Instant: f.s.deps.Instant})
	got = post(strict, "/api/v1/instant", jsonBody(t, f.body(map[string]any{"pushSubscription": phone})), jsonHeaders)
	if got.status != http.StatusBadRequest || !strings.Contains(got.body, `"code":"INVALID_PUSH_SUBSCRIPTION"`) || !strings.Contains(got.body, `"field":"pushSubscription.endpoint"`) {
		t.Errorf("private endpoint: %d %s", got.status, got.body)
	}
}

func TestInstantPushFailure(t *testing.T) {
	f := newInstantFixture(t, Config{}, loop.AgentConfig{})
	sub := f.push.Subscribe()
	f.push.Unsubscribe(sub) // 410 Gone from now on
	f.llm.Enqueue(llmtest.Reply{Content: "一。二。"})
	got := post(f.s, "/api/v1/instant", jsonBody(t, f.body(map[string]any{"pushSubscription": sub})), jsonHeaders)
	want := `{"success":false,"error":{"code":"PUSH_SEND_FAILED","message":"Web Push delivery failed: 410 Gone","details":{"messageIndex":1,"statusCode":410},"pushStatus":410}}` + "\n"
	if got.status != http.StatusBadGateway || got.body != want {
		t.Errorf("= %d %s\nwant %s", got.status, got.body, want)
	}
}

func gzipped(t testing.TB, s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(s))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestInstantGzipBodies(t *testing.T) {
	f := newInstantFixture(t, Config{MaxBodyBytes: 64 << 10}, loop.AgentConfig{})
	sub := f.push.Subscribe()
	f.llm.Enqueue(llmtest.Reply{Content: "收到。"})
	gz := withHeaders(jsonHeaders, map[string]string{"X-Amsg-Request-Encoding": " GZIP "})
	long := strings.Repeat("很长的历史。", 3000) // over the client's 16 KB threshold
	body := jsonBody(t, f.body(map[string]any{"pushSubscription": sub, "messages": []any{map[string]any{"role": "user", "content": long}}}))
	if got := post(f.s, "/api/v1/instant", gzipped(t, body), gz); got.status != 200 {
		t.Fatalf("gzipped body: %d %s", got.status, got.body)
	}
	if got := string(f.llm.Requests()[0].Body["messages"]); !strings.Contains(got, long) {
		t.Error("the LLM did not get the decompressed history")
	}

	bomb := gzipped(t, `{"contactName":"`+strings.Repeat("A", 64<<20)+`"}`) // 64 MiB from about 65 KB
	for _, c := range []struct {
		name, body string
		status     int
		message    string
	}{
		{"bomb", bomb[:min(len(bomb), 60<<10)], 413, "请求体超过 65536 字节上限"},
		{"not gzip", body, 400, "请求体不是有效的 gzip 数据"},
		{"truncated", gzipped(t, body)[:100], 400, "请求体不是有效的 gzip 数据"},
		{"trailing garbage", gzipped(t, body) + "garbage", 400, "请求体不是有效的 gzip 数据"},
		{"endless empty members", strings.Repeat(gzipped(t, ""), 4000), 413, "请求体超过 65536 字节上限"},
	} {
		got := post(f.s, "/api/v1/instant", c.body, gz)
		if got.status != c.status || !strings.Contains(got.body, c.message) {
			t.Errorf("%s: %d %s", c.name, got.status, got.body)
		}
	}
}

func TestInstantAuthAndCORS(t *testing.T) {
	f := newInstantFixture(t, Config{TokenSigningKey: "k", ClientToken: "ct", CORSOrigin: "https://app.example"}, loop.AgentConfig{})
	sub := f.push.Subscribe()
	body := jsonBody(t, f.body(map[string]any{"pushSubscription": sub}))
	token := signBearer("k", fmt.Sprintf(`{"v":1,"exp":%d}`, time.Now().Add(time.Hour).Unix()))
	for _, c := range []struct {
		name    string
		headers map[string]string
		status  int
		code    string
	}{
		{"nothing", nil, 401, "UNAUTHORIZED"},
		{"bearer only", map[string]string{"Authorization": "Bearer " + token}, 401, "INVALID_CLIENT_TOKEN"},
		{"wrong client token", map[string]string{"Authorization": "Bearer " + token, "X-Client-Token": "x"}, 401, "INVALID_CLIENT_TOKEN"},
		{"expired", map[string]string{"Authorization": "Bearer " + signBearer("k", `{"v":1,"exp":1}`), "X-Client-Token": "ct"}, 401, "UNAUTHORIZED"},
		{"both, bad body", map[string]string{"Authorization": "Bearer " + token, "X-Client-Token": " ct "}, 400, "INVALID_PAYLOAD_FORMAT"},
		// An encrypted body stands in for the token only for a user who
		// proved the token (TestRotatedClientToken).
		{"encrypted without token, token never proved", withHeaders(encryptedHeaders(testUserID),
			map[string]string{"Authorization": "Bearer " + token}), 401, "INVALID_CLIENT_TOKEN"},
	} {
		b := body
		if c.status == 400 {
			b = "{"
		}
		got := post(f.s, "/api/v1/instant", b, withHeaders(jsonHeaders, c.headers))
		if got.status != c.status || !strings.Contains(got.body, `"code":"`+c.code+`"`) || got.header.Get("Access-Control-Allow-Origin") != "https://app.example" {
			t.Errorf("%s: %d %s %v", c.name, got.status, got.body, got.header)
		}
	}

	// amsg-client's encrypted instant mode: no X-Client-Token, a body sealed
	// with the user key, from a user who proved the token.
	proveClientToken(t, f.s, testUserID, "ct")
	got := post(f.s, "/api/v1/instant", "{", withHeaders(withHeaders(jsonHeaders, encryptedHeaders(testUserID)),
		map[string]string{"Authorization": "Bearer " + token}))
	if got.status != http.StatusBadRequest || !strings.Contains(got.body, `"code":"INVALID_ENCRYPTED_PAYLOAD"`) {
		t.Errorf("encrypted without token, not sealed with the user key: %d %s", got.status, got.body)
	}
	f.llm.Enqueue(llmtest.Reply{Content: "好。"})
	sealed := browserEncrypt(t, browserUserKey(testUserID), f.body(map[string]any{"pushSubscription": sub}))
	got = post(f.s, "/api/v1/instant", sealed, withHeaders(withHeaders(jsonHeaders, encryptedHeaders(testUserID)),
		map[string]string{"Authorization": "Bearer " + token}))
	if got.status != http.StatusOK || !strings.Contains(got.body, `"messagesSent":1`) {
		t.Errorf("encrypted without a client token: %d %s", got.status, got.body)
	}
}

func TestInstantOnlyPost(t *testing.T) {
	f := newInstantFixture(t, Config{}, loop.AgentConfig{})
	for _, path := range []string{"/api/v1/instant", "/api/v1/continue", "/instant/"} {
		got := do(t, f.s, http.MethodGet, path, nil)
		if got.status != http.StatusMethodNotAllowed || got.body != `{"success":false,"error":{"code":"METHOD_NOT_ALLOWED","message":"Only POST is supported"}}`+"\n" {
			t.Errorf("GET %s = %d %s", path, got.status, got.body)
		}
	}
}

func TestAcceptsOnlyJSON(t *testing.T) {
	for accept, want := range map[string]bool{
		"application/json":                true,
		"application/json; charset=utf-8": true,
		"APPLICATION/JSON":                true,
		"application/json, */*":           false,
		"*/*":                             false,
		"text/event-stream":               false,
		"":                                false,
		"application/json,":               false,
	} {
		if got := acceptsOnlyJSON(accept); got != want {
			t.Errorf("acceptsOnlyJSON(%q) = %v", accept, got)
		}
	}
}
