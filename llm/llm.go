package llm

import (
	"amsg/push"
	"amsg/push/tracing"

	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Defaults of Config.
const (
	DefaultLLMTimeout       = 300 * time.Second
	DefaultMaxResponseBytes = 16 << 20
)

// The error body of a failed call is read up to errorBodyLimit bytes; the
// provider's message is kept up to providerMessageLimit characters and its
// code up to providerCodeLimit (some relays echo the whole request back).
const (
	errorBodyLimit       = 16 << 10
	providerMessageLimit = 300
	providerCodeLimit    = 64
)

// Config configures a Client. The zero value is usable.
type Config struct {
	// HTTPClient sends the requests; nil means a client of its own. Its
	// Timeout, if any, applies on top of Timeout.
	HTTPClient *http.Client
	// Timeout bounds one call, reading a streamed answer included;
	// 0 means DefaultLLMTimeout. The context may end it sooner.
	Timeout time.Duration
	// MaxResponseBytes bounds the bytes read from one answer, streamed or
	// not; 0 means DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// Logger gets one debug line per call (endpoint host, model, status,
	// duration, tokens), never a key or a prompt. nil means slog.Default().
	Logger *slog.Logger
	// Observe, when set, is told of every call once it ends, for metrics.
	Observe func(CallStats)
	// Policy decides which request-given endpoints are called; the client
	// enforces it when it dials. It does not apply to Default.
	Policy URLPolicy
	// Default is the operator's model, called when a request names no
	// apiUrl, wherever it points.
	Default Model
}

// CallStats is what Config.Observe learns of one call.
type CallStats struct {
	Stream   bool
	Failed   bool
	Duration time.Duration
	Usage    Usage // zero for a failed call
}

// Model is an endpoint, its key and a model name.
type Model struct {
	APIURL string
	APIKey string
	Name   string
}

// Client calls OpenAI-compatible chat-completions endpoints. It is safe for
// concurrent use; the endpoint, key and model come with each Request, since
// in the standard every caller brings its own.
type Client struct {
	http    *http.Client // request-given endpoints, under the policy
	trusted *http.Client // the operator's default model
	def     Model
	policy  URLPolicy
	timeout time.Duration
	max     int64
	log     *slog.Logger
	observe func(CallStats)
}

// NewClient returns a Client for cfg.
func NewClient(cfg Config) *Client {
	c := &Client{http: cfg.HTTPClient, trusted: cfg.HTTPClient, def: cfg.Default, policy: cfg.Policy,
		timeout: cfg.Timeout, max: cfg.MaxResponseBytes, log: cfg.Logger, observe: cfg.Observe}
	if c.http == nil {
		c.http = newHTTPClient(cfg.Policy.dialControl())
		c.trusted = newHTTPClient(nil)
	}
	if c.timeout <= 0 {
		c.timeout = DefaultLLMTimeout
	}
	if c.max <= 0 {
		c.max = DefaultMaxResponseBytes
	}
	c.log = cmp.Or(c.log, slog.Default())
	return c
}

// newHTTPClient is an LLM client's HTTP client: no redirects (a redirect
// would take a request past the policy, its body and key with it), and
// control, when set, vetting every address dialled.
// Timeout bounds one call, streamed or not.
func (c *Client) Timeout() time.Duration { return c.timeout }

func newHTTPClient(control func(network, address string, c syscall.RawConn) error) *http.Client {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: control}
	transport.DialContext = dialer.DialContext
	transport.Proxy = nil // a proxy would dial in our place, unchecked
	return &http.Client{
		Transport:     transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Request is one chat-completions call, in the standard's terms.
type Request struct {
	APIURL string // normalised with NormalizeAPIURL; "" means the client's Default
	APIKey string // sent as Authorization: Bearer <APIKey>, unchanged
	Model  string // primaryModel

	// Messages, when a non-empty JSON array, is sent byte for byte as
	// "messages". Otherwise Prompt (completePrompt) is sent as the one user
	// message.
	Messages json.RawMessage
	Prompt   string

	// Temperature is sent when set; on the completePrompt path (Messages
	// not an array at all) it defaults to 0.8.
	Temperature *float64
	// MaxTokens is sent as max_tokens when positive; 0 means not set and a
	// negative value is an error.
	MaxTokens int
	// Tools is sent when it is a non-empty JSON array, and ToolChoice (any
	// JSON but null) along with it. Both are passed through untouched.
	Tools      json.RawMessage
	ToolChoice json.RawMessage
	// ExtraBody (llmExtraBody) is a JSON object whose keys are sent first;
	// the keys the client writes for this call replace same-named ones, the
	// others pass through. Anything but an object is ignored.
	ExtraBody json.RawMessage

	// RequireContent makes a blank content an error
	// (ErrMissingContent), as on the standard's single-shot paths. An agent
	// round leaves it off: an answer may be tool calls only.
	RequireContent bool
}

// Response is one answer.
type Response struct {
	// Message is the assistant message (choices[0].message) exactly as the
	// endpoint sent it, unknown fields included, ready to be appended to a
	// messages history. A streamed answer's message is assembled from its
	// deltas: role, content, reasoning_content, refusal, tool_calls. An
	// answer without a message gets {"role":"assistant","content":""}.
	Message json.RawMessage
	// Content, ReasoningContent and Refusal are the message's fields of
	// those names when they are strings, untrimmed; use Output for the
	// standard's reading.
	Content          string
	ReasoningContent string
	Refusal          string
	// ToolCalls is the message's tool_calls array in the OpenAI shape,
	// untouched; nil when there are none.
	ToolCalls    json.RawMessage
	FinishReason string
	Usage        Usage
}

// Output returns the reasoning and the text to show, as SeparateReasoning
// reads them.
func (r *Response) Output() (reasoning, text string) {
	return SeparateReasoning(r.ReasoningContent, r.Content)
}

// Calls decodes ToolCalls.
func (r *Response) Calls() ([]ToolCall, error) {
	if r.ToolCalls == nil {
		return nil, nil
	}
	var calls []ToolCall
	if err := json.Unmarshal(r.ToolCalls, &calls); err != nil {
		// An id or name that is not a string, say: the answer is not the
		// chat completion it claims to be, an *Error like every other.
		return nil, &Error{kind: ErrBadResponse, Status: 200, cause: err,
			msg: "AI API error: choices[0].message.tool_calls is not a list of function calls"}
	}
	return calls, nil
}

// ToolCall is one element of tool_calls in the OpenAI shape.
type ToolCall struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function ToolCallFunction `json:"function"`
}

// ToolCallFunction names the function and carries its JSON arguments as
// the model wrote them.
type ToolCallFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Usage is the token accounting of one answer: usage.prompt_tokens,
// prompt_tokens_details.cached_tokens, completion_tokens and
// completion_tokens_details.reasoning_tokens. Reported is false when the
// endpoint sent no usage.
type Usage struct {
	InputTokens       int64
	CachedInputTokens int64
	OutputTokens      int64
	ReasoningTokens   int64
	Reported          bool
}

// Complete makes one call and returns the answer. Every failure is an
// *Error; see the Err… kinds.
func (c *Client) Complete(ctx context.Context, req Request) (*Response, error) {
	return c.do(ctx, req, nil)
}

func (c *Client) do(ctx context.Context, req Request, onDelta func(Delta) error) (resp *Response, err error) {
	httpClient, operators := c.http, req.APIURL == "" && c.def.APIURL != ""
	if operators {
		req.APIURL, req.APIKey, req.Model = c.def.APIURL, c.def.APIKey, cmp.Or(req.Model, c.def.Name)
		httpClient = c.trusted
	}
	endpoint, err := NormalizeAPIURL(req.APIURL)
	if err != nil {
		return nil, err
	}
	stream := onDelta != nil
	body, err := requestBody(req, stream)
	if err != nil {
		return nil, err
	}
	ctx, span := tracing.Start(ctx, "llm.call")
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	rec := callRecord{endpoint: endpoint, model: req.Model, key: req.APIKey, stream: stream, start: time.Now(), span: span}
	defer func() { c.record(ctx, &rec, resp, err) }()
	if !operators && !c.policy.AllowPrivate {
		// A request-given endpoint: its caller learns the status class of
		// a failed answer and nothing of its content (docs/security.md).
		defer func() { err = statusClassOnly(err, endpoint) }()
	}

	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, &Error{kind: ErrInvalidAPIURL, msg: fmt.Sprintf("Invalid apiUrl: %q. Please provide a valid absolute URL.", displayURL(endpoint)), cause: err}
	}
	httpReq.Header.Set("Content-Type", "application/json")
	httpReq.Header.Set("Authorization", "Bearer "+req.APIKey)
	if stream {
		httpReq.Header.Set("Accept", "text/event-stream")
	}
	httpResp, err := httpClient.Do(httpReq)
	if err != nil {
		return nil, c.transportError(ctx, err, endpoint, req.APIKey)
	}
	defer httpResp.Body.Close()
	status := httpResp.StatusCode
	rec.status = status

	if status < 200 || status > 299 {
		return nil, statusError(httpResp, endpoint, req.APIKey)
	}
	resp, err = c.readAnswer(httpResp, onDelta, endpoint, req.APIKey)
	if err != nil {
		if ae := (*abortError)(nil); errors.As(err, &ae) {
			return nil, err
		}
		return nil, c.transportError(ctx, err, endpoint, req.APIKey)
	}
	if req.RequireContent && push.JSTrim(resp.Content) == "" {
		return nil, MissingContent(status)
	}
	return resp, nil
}

// readAnswer reads a 2xx answer: server-sent events when streaming and the
// endpoint streams, else one completion, which a streaming caller receives
// as a single delta (an endpoint may ignore "stream": true).
func (c *Client) readAnswer(httpResp *http.Response, onDelta func(Delta) error, endpoint, key string) (*Response, error) {
	mediaType, _, _ := mime.ParseMediaType(httpResp.Header.Get("Content-Type"))
	if onDelta != nil && mediaType == "text/event-stream" {
		return c.readStream(httpResp.Body, onDelta, endpoint, key)
	}
	resp, err := c.readCompletion(httpResp.Body, httpResp.StatusCode, endpoint, key)
	if err == nil && onDelta != nil {
		if derr := onDelta(Delta{Content: resp.Content, ReasoningContent: resp.ReasoningContent, Refusal: resp.Refusal}); derr != nil {
			return nil, &abortError{derr}
		}
	}
	return resp, err
}

// callRecord is what the log and the metrics learn of one call.
type callRecord struct {
	endpoint, model, key string
	stream               bool
	status               int // 0 until the endpoint answers
	start                time.Time
	span                 tracing.Span
}

// record reports a finished call to the metrics and the debug log.
func (c *Client) record(ctx context.Context, rec *callRecord, resp *Response, err error) {
	traceCall(rec, resp, err)
	attrs := []any{"host", hostOf(rec.endpoint), "model", rec.model, "stream", rec.stream, "status", rec.status, "duration", time.Since(rec.start)}
	if c.observe != nil {
		stats := CallStats{Stream: rec.stream, Failed: err != nil, Duration: time.Since(rec.start)}
		if err == nil {
			stats.Usage = resp.Usage
		}
		c.observe(stats)
	}
	if err != nil {
		// The kind only: an error's text holds the endpoint URL, whose
		// query may carry a key.
		if e := (*Error)(nil); errors.As(err, &e) && e.kind != nil && e.cause != nil {
			attrs = append(attrs, "cause", redact(rootCause(e.cause).Error(), rec.key))
		}
		c.log.DebugContext(ctx, "llm call failed", append(attrs, "error", errorKind(err))...)
		return
	}
	c.log.DebugContext(ctx, "llm call", append(attrs, "inputTokens", resp.Usage.InputTokens, "outputTokens", resp.Usage.OutputTokens)...)
}

// transportError describes a call that got no (complete) answer.
func (c *Client) transportError(ctx context.Context, err error, endpoint, key string) error {
	switch ctxErr := ctx.Err(); {
	case errors.Is(ctxErr, context.DeadlineExceeded):
		return &Error{kind: ErrTransport, cause: context.DeadlineExceeded,
			msg: fmt.Sprintf("AI API error: request timed out. Request URL: %s", displayURL(endpoint))}
	case ctxErr != nil:
		return &Error{kind: ErrTransport, cause: ctxErr,
			msg: fmt.Sprintf("AI API error: request canceled. Request URL: %s", displayURL(endpoint))}
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	// The cause is logged, not told: "connection refused" against "timed
	// out" would map which ports of a host are open.
	return &Error{kind: ErrTransport, cause: err,
		msg: fmt.Sprintf("AI API error: request failed. Request URL: %s", displayURL(endpoint))}
}

// statusClassOnly rewrites the error of an answer that was not a usable
// completion to say only the class of its status: the status line and body
// of whatever a caller pointed the server at are not told back.
func statusClassOnly(err error, endpoint string) error {
	var e *Error
	if !errors.As(err, &e) || e.Status == 0 {
		return err
	}
	var msg string
	switch e.kind {
	case ErrStatus:
		msg = "AI API error: the endpoint answered with an error status (%dxx). Request URL: %s"
	case ErrBadResponse:
		msg = "AI API error: the answer (%dxx) is not a chat completion. Request URL: %s"
	default:
		return err
	}
	return &Error{kind: e.kind, Status: e.Status, cause: e.cause, msg: fmt.Sprintf(msg, e.Status/100, displayURL(endpoint))}
}

// rootCause drops net/http's `Post "<url>":` wrapping, which repeats the URL.
func rootCause(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// statusError builds the standard's error for a non-2xx answer and keeps
// what the provider said about it.
func statusError(resp *http.Response, endpoint, key string) error {
	e := &Error{kind: ErrStatus, Status: resp.StatusCode}
	if resp.StatusCode == http.StatusMethodNotAllowed {
		e.msg = "AI API error: 405 Method Not Allowed. apiUrl must point to a full chat endpoint (for example: /chat/completions). Received: " + displayURL(endpoint)
	} else {
		e.msg = fmt.Sprintf("AI API error: %d %s. Request URL: %s", resp.StatusCode, reasonPhrase(resp), displayURL(endpoint))
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyLimit))
	e.ProviderMessage, e.ProviderCode = providerDetail(raw, key)
	return e
}

// reasonPhrase is the status line's text, as fetch's statusText, or
// "Unknown Error" when there is none (HTTP/2 has none).
func reasonPhrase(resp *http.Response) string {
	if reason := strings.TrimSpace(strings.TrimPrefix(resp.Status, strconv.Itoa(resp.StatusCode))); reason != "" {
		return reason
	}
	return "Unknown Error"
}

// providerDetail finds the human message and the machine code in an error
// body, with the API key redacted (providers echo it back): {"error":{"message","code"|"status"|"type"}} (OpenAI, Gemini,
// Anthropic), {"error":"…"}, {"message"|"msg"|"detail":…, "code":…}, or the
// raw text of a body that is not JSON.
func providerDetail(raw []byte, key string) (message, code string) {
	message, code = providerText(raw)
	return redact(message, key), redact(code, key)
}

func providerText(raw []byte) (message, code string) {
	text := strings.TrimSpace(string(bytes.ToValidUTF8(raw, []byte("\uFFFD"))))
	if text == "" {
		return "", ""
	}
	var body map[string]json.RawMessage
	if json.Unmarshal(raw, &body) != nil {
		return truncateRunes(text, providerMessageLimit), ""
	}
	var inner map[string]json.RawMessage
	_ = json.Unmarshal(body["error"], &inner)
	message = cmp.Or(firstString(inner["message"], body["error"], body["message"], body["msg"], body["detail"]), text)
	code = firstString(inner["code"], inner["status"], inner["type"], body["code"])
	return truncateRunes(message, providerMessageLimit), truncateRunes(code, providerCodeLimit)
}

func firstString(values ...json.RawMessage) string {
	for _, v := range values {
		if s, ok := push.JSONString(v); ok && strings.TrimSpace(s) != "" {
			return strings.TrimSpace(s)
		}
	}
	return ""
}

func truncateRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j] + "…"
		}
		i++
	}
	return s
}

func hostOf(endpoint string) string {
	if u, err := url.Parse(endpoint); err == nil {
		return u.Host
	}
	return ""
}

// completionJSON is the part of a chat completion the client reads.
type completionJSON struct {
	Choices []struct {
		Message      json.RawMessage `json:"message"`
		FinishReason json.RawMessage `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
}

// readCompletion reads a non-streamed answer.
func (c *Client) readCompletion(body io.Reader, status int, endpoint, key string) (*Response, error) {
	raw, err := io.ReadAll(io.LimitReader(body, c.max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(raw)) > c.max {
		return nil, &Error{kind: ErrResponseTooLarge, Status: status,
			msg: fmt.Sprintf("AI API error: response exceeds %d bytes. Request URL: %s", c.max, displayURL(endpoint))}
	}
	var cj completionJSON
	if err := json.Unmarshal(raw, &cj); err != nil {
		if !json.Valid(raw) {
			return nil, &Error{kind: ErrBadResponse, Status: status, cause: err,
				msg: fmt.Sprintf("AI API error: HTTP %d but body is not valid JSON. Request URL: %s", status, displayURL(endpoint))}
		}
		cj.Choices = nil
	}
	if len(cj.Choices) == 0 {
		e := &Error{kind: ErrBadResponse, Status: status,
			msg: fmt.Sprintf("AI API error: HTTP %d but body is not a chat completion (no choices). Request URL: %s", status, displayURL(endpoint))}
		e.ProviderMessage, e.ProviderCode = providerDetail(raw, key)
		return nil, e
	}
	resp := &Response{Usage: parseUsage(cj.Usage)}
	resp.FinishReason, _ = push.JSONString(cj.Choices[0].FinishReason)
	resp.setMessage(cj.Choices[0].Message)
	return resp, nil
}

// setMessage keeps the assistant message verbatim and reads its fields.
func (r *Response) setMessage(raw json.RawMessage) {
	var m map[string]json.RawMessage
	if push.JSONKind(raw) != '{' || json.Unmarshal(raw, &m) != nil {
		raw, m = json.RawMessage(`{"role":"assistant","content":""}`), nil
	}
	r.Message = raw
	r.Content, _ = push.JSONString(m["content"])
	r.ReasoningContent, _ = push.JSONString(m["reasoning_content"])
	r.Refusal, _ = push.JSONString(m["refusal"])
	if tc := m["tool_calls"]; push.JSONKind(tc) == '[' && !bytes.Equal(push.CompactJSON(tc), []byte("[]")) {
		r.ToolCalls = tc
	}
}

// parseUsage reads the usage object leniently: a field of the wrong type
// counts as 0 rather than failing the answer.
func parseUsage(raw json.RawMessage) Usage {
	var u map[string]json.RawMessage
	if push.JSONKind(raw) != '{' || json.Unmarshal(raw, &u) != nil {
		return Usage{}
	}
	var promptDetails, completionDetails map[string]json.RawMessage
	_ = json.Unmarshal(u["prompt_tokens_details"], &promptDetails)
	_ = json.Unmarshal(u["completion_tokens_details"], &completionDetails)
	return Usage{
		InputTokens:       jsonInt(u["prompt_tokens"]),
		CachedInputTokens: jsonInt(promptDetails["cached_tokens"]),
		OutputTokens:      jsonInt(u["completion_tokens"]),
		ReasoningTokens:   jsonInt(completionDetails["reasoning_tokens"]),
		Reported:          true,
	}
}

func jsonInt(raw json.RawMessage) int64 {
	var f float64
	if json.Unmarshal(raw, &f) != nil || f < 0 || f > 1<<53 {
		return 0
	}
	return int64(f)
}
