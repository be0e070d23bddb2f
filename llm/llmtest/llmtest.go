// Package llmtest is a scripted fake of an OpenAI-compatible
// chat-completions endpoint on loopback, in the spirit of net/http/httptest.
// A test queues the answers, lets the code under test call the server's
// APIURL, and asserts on the recorded requests.
//
//	llm := llmtest.NewServer(t)
//	llm.Enqueue(llmtest.Reply{Content: "你好。", Usage: &llmtest.Usage{PromptTokens: 3, CompletionTokens: 2}})
//	// … call llm.APIURL() with any API key …
//	req := llm.Requests()[0] // method, path, headers, body
//
// A Reply answers a streaming request ("stream": true) with server-sent
// chunks and a plain request with one JSON completion, so one script serves
// both. Timing is controlled without sleeping: Reply.Release holds an answer
// until the test closes the channel, and Server.Stream returns a handle that
// sends one chunk per call.
package llmtest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// Usage is the usage object of an answer.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	CachedTokens     int // prompt_tokens_details.cached_tokens
	ReasoningTokens  int // completion_tokens_details.reasoning_tokens
}

// ToolCall is one tool call of an answer.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Reply is one scripted answer.
type Reply struct {
	// Status is the HTTP status; 0 means 200. With a status of 300 or more
	// the answer is Body (default {"error":{"message":"llmtest error"}}).
	Status int
	// Body, when set, is sent verbatim as the whole answer (a malformed
	// completion, an error body); with a streaming request it is sent as
	// the event stream.
	Body string

	Content          string
	ReasoningContent string
	ToolCalls        []ToolCall
	Usage            *Usage
	FinishReason     string // default "tool_calls" with ToolCalls, else "stop"

	// IgnoreStream answers a streaming request with a plain JSON
	// completion, as some endpoints do.
	IgnoreStream bool
	// ChunkRunes is how many runes of content and reasoning go in one
	// streamed chunk; 0 means 4.
	ChunkRunes int
	// Release, when set, holds the answer until it is closed or the client
	// goes away (so a test can see a slow model, or a timeout).
	Release <-chan struct{}
	// Aborted, when set with Release, is closed when the client goes away
	// while the answer is held: the test sees the caller cancel its call.
	Aborted chan<- struct{}
}

// Request is one recorded request.
type Request struct {
	Method string
	Path   string
	Header http.Header
	// Body is the request body's top-level object, each value as the
	// client sent it; Raw the whole body.
	Body map[string]json.RawMessage
	Raw  []byte
}

// Stream reports whether the request asked for a streamed answer.
func (r Request) Stream() bool { return bytes.Equal(r.Body["stream"], []byte("true")) }

// ToolResult is the content of the last role "tool" message answering
// callID in the request's messages, and whether there is one.
func (r Request) ToolResult(callID string) (string, bool) {
	var msgs []struct {
		Role       string `json:"role"`
		ToolCallID string `json:"tool_call_id"`
		Content    string `json:"content"`
	}
	_ = json.Unmarshal(r.Body["messages"], &msgs) // not an array: no result
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "tool" && msgs[i].ToolCallID == callID {
			return msgs[i].Content, true
		}
	}
	return "", false
}

// Server is the fake endpoint.
type Server struct {
	// URL is the base URL, http://127.0.0.1:port.
	URL string

	t        testing.TB
	srv      *httptest.Server
	mu       sync.Mutex
	queue    []answer
	requests []Request
	arrived  chan struct{} // closed and replaced when a request arrives
}

// answer is a queued Reply or a hand-driven Stream.
type answer struct {
	reply  *Reply
	stream *Stream
}

// NewServer starts a fake endpoint that is closed when the test ends. A
// request with no answer queued fails the test and gets a 500.
func NewServer(t testing.TB) *Server {
	s := &Server{t: t, arrived: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.Close)
	return s
}

// APIURL is the apiUrl to give a client: URL + "/v1", which the standard
// normalises to URL + "/v1/chat/completions".
func (s *Server) APIURL() string { return s.URL + "/v1" }

// Close stops the server, releasing any answer still held.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Enqueue queues answers for the next requests, in order.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range replies {
		s.queue = append(s.queue, answer{reply: &replies[i]})
	}
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// WaitRequests blocks until at least n requests have arrived and returns
// them. It fails the test if they have not arrived within 30 seconds, so call
// it from the test's goroutine.
func (s *Server) WaitRequests(n int) []Request {
	s.t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		s.mu.Lock()
		if len(s.requests) >= n {
			defer s.mu.Unlock()
			return append([]Request(nil), s.requests...)
		}
		arrived := s.arrived
		s.mu.Unlock()
		select {
		case <-arrived:
		case <-timeout:
			s.t.Fatalf("llmtest: %d requests arrived, waited for %d", len(s.Requests()), n)
		}
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw}
	_ = json.Unmarshal(raw, &req.Body)

	s.mu.Lock()
	s.requests = append(s.requests, req)
	close(s.arrived)
	s.arrived = make(chan struct{})
	var next answer
	if len(s.queue) > 0 {
		next, s.queue = s.queue[0], s.queue[1:]
	}
	s.mu.Unlock()

	switch {
	case next.stream != nil:
		next.stream.serve(w, r)
	case next.reply != nil:
		next.reply.serve(w, r, req.Stream())
	default:
		s.t.Errorf("llmtest: a request to %s with no answer queued", r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"error":{"message":"llmtest: no answer queued"}}`)
	}
}

func (rp *Reply) serve(w http.ResponseWriter, r *http.Request, stream bool) {
	if rp.Release != nil {
		select {
		case <-rp.Release:
		case <-r.Context().Done():
			if rp.Aborted != nil {
				close(rp.Aborted)
			}
			return
		}
	}
	status := cmp.Or(rp.Status, http.StatusOK)
	switch {
	case status >= 300:
		body := cmp.Or(rp.Body, `{"error":{"message":"llmtest error"}}`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	case rp.Body != "":
		if stream {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, rp.Body)
	case stream && !rp.IgnoreStream:
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(status)
		for _, c := range rp.chunks() {
			_, _ = io.WriteString(w, eventOf(c))
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(rp.completion())
	}
}

func (rp *Reply) finishReason() string {
	switch {
	case rp.FinishReason != "":
		return rp.FinishReason
	case len(rp.ToolCalls) > 0:
		return "tool_calls"
	}
	return "stop"
}

// completion is the non-streamed answer.
func (rp *Reply) completion() map[string]any {
	msg := map[string]any{"role": "assistant", "content": rp.Content}
	if rp.Content == "" && len(rp.ToolCalls) > 0 {
		msg["content"] = nil
	}
	if rp.ReasoningContent != "" {
		msg["reasoning_content"] = rp.ReasoningContent
	}
	if len(rp.ToolCalls) > 0 {
		calls := make([]map[string]any, len(rp.ToolCalls))
		for i, tc := range rp.ToolCalls {
			calls[i] = map[string]any{"id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": tc.Arguments}}
		}
		msg["tool_calls"] = calls
	}
	out := map[string]any{
		"id": "chatcmpl-llmtest", "object": "chat.completion", "created": 0, "model": "llmtest",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": rp.finishReason()}},
	}
	if rp.Usage != nil {
		out["usage"] = rp.Usage.json()
	}
	return out
}

// chunks is the streamed answer: reasoning, content, tool calls (name, then
// arguments in two halves), the finish reason, then usage.
func (rp *Reply) chunks() []Chunk {
	n := rp.ChunkRunes
	if n <= 0 {
		n = 4
	}
	out := []Chunk{{Role: "assistant"}}
	for _, piece := range runeChunks(rp.ReasoningContent, n) {
		out = append(out, Chunk{ReasoningContent: piece})
	}
	for _, piece := range runeChunks(rp.Content, n) {
		out = append(out, Chunk{Content: piece})
	}
	for i, tc := range rp.ToolCalls {
		half := len(tc.Arguments) / 2
		out = append(out,
			Chunk{ToolCall: &ToolCallChunk{Index: i, ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments[:half]}},
			Chunk{ToolCall: &ToolCallChunk{Index: i, Arguments: tc.Arguments[half:]}})
	}
	out = append(out, Chunk{FinishReason: rp.finishReason()})
	if rp.Usage != nil {
		out = append(out, Chunk{Usage: rp.Usage})
	}
	return out
}

func runeChunks(s string, n int) []string {
	var out []string
	for s != "" {
		i, count := 0, 0
		for i < len(s) && count < n {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			count++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

func (u *Usage) json() map[string]any {
	return map[string]any{
		"prompt_tokens":             u.PromptTokens,
		"completion_tokens":         u.CompletionTokens,
		"total_tokens":              u.PromptTokens + u.CompletionTokens,
		"prompt_tokens_details":     map[string]any{"cached_tokens": u.CachedTokens},
		"completion_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens},
	}
}

// Chunk is one streamed chunk. Set one field (or several).
type Chunk struct {
	Role             string
	Content          string
	ReasoningContent string
	ToolCall         *ToolCallChunk
	FinishReason     string
	Usage            *Usage // sent as a final chunk with no choices, as OpenAI does
}

// ToolCallChunk is a piece of a tool call in a chunk.
type ToolCallChunk struct {
	Index     int
	ID        string // set on the first piece
	Name      string // set on the first piece
	Arguments string
}

func (c Chunk) json() map[string]any {
	out := map[string]any{"id": "chatcmpl-llmtest", "object": "chat.completion.chunk", "created": 0, "model": "llmtest"}
	if c.Usage != nil {
		out["choices"] = []any{}
		out["usage"] = c.Usage.json()
		return out
	}
	delta := map[string]any{}
	if c.Role != "" {
		delta["role"] = c.Role
		delta["content"] = ""
	}
	if c.Content != "" {
		delta["content"] = c.Content
	}
	if c.ReasoningContent != "" {
		delta["reasoning_content"] = c.ReasoningContent
	}
	if tc := c.ToolCall; tc != nil {
		call := map[string]any{"index": tc.Index, "function": map[string]any{"arguments": tc.Arguments}}
		if tc.ID != "" {
			call["id"] = tc.ID
			call["type"] = "function"
			call["function"].(map[string]any)["name"] = tc.Name
		}
		delta["tool_calls"] = []any{call}
	}
	var finish any
	if c.FinishReason != "" {
		finish = c.FinishReason
	}
	out["choices"] = []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}
	out["usage"] = nil
	return out
}

func eventOf(c Chunk) string {
	b, _ := json.Marshal(c.json()) // plain maps of strings and numbers
	return fmt.Sprintf("data: %s\n\n", b)
}
