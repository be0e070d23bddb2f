package llm

import (
	"amsg/push"
	"cmp"

	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Delta is what one streamed chunk added to the answer.
type Delta struct {
	Content          string
	ReasoningContent string
	Refusal          string
	ToolCalls        []ToolCallDelta
}

// ToolCallDelta is a piece of one tool call: the first piece of a call
// usually carries its ID and Name, later pieces more Arguments text.
type ToolCallDelta struct {
	Index     int
	ID        string
	Type      string
	Name      string
	Arguments string
}

func (d Delta) empty() bool {
	return d.Content == "" && d.ReasoningContent == "" && d.Refusal == "" && len(d.ToolCalls) == 0
}

// Stream makes one call with "stream": true and calls onDelta for every
// chunk that adds something, as it arrives, so the caller can act on text
// before the model has finished. It returns the same Response as Complete:
// content, reasoning and refusal concatenated, tool calls assembled by index
// (arguments concatenated), usage from the final chunk (the request asks
// for it with stream_options.include_usage). An endpoint that answers with a
// plain JSON completion instead is accepted, with one onDelta call.
//
// If onDelta returns an error the call stops and Stream returns that error
// unchanged; every other failure is an *Error.
func (c *Client) Stream(ctx context.Context, req Request, onDelta func(Delta) error) (*Response, error) {
	if onDelta == nil {
		onDelta = func(Delta) error { return nil }
	}
	resp, err := c.do(ctx, req, onDelta)
	var ae *abortError
	if errors.As(err, &ae) {
		return nil, ae.err
	}
	return resp, err
}

// abortError carries an onDelta error through the client unchanged.
type abortError struct{ err error }

func (e *abortError) Error() string { return e.err.Error() }

// readStream reads server-sent events of chat-completion chunks until
// data: [DONE] or the end of the body.
func (c *Client) readStream(body io.Reader, onDelta func(Delta) error, endpoint, key string) (*Response, error) {
	events := newEventReader(io.LimitReader(body, c.max+1), c.max)
	acc := streamAccumulator{key: key}
	for {
		data, err := events.next()
		if errors.Is(err, errEventTooLarge) || events.read > c.max {
			return nil, &Error{kind: ErrResponseTooLarge, Status: 200,
				msg: fmt.Sprintf("AI API error: response exceeds %d bytes. Request URL: %s", c.max, displayURL(endpoint))}
		}
		if errors.Is(err, io.EOF) {
			break // a missing [DONE] is tolerated
		}
		if err != nil {
			return nil, err // a transport error; the caller describes it
		}
		if data == "[DONE]" {
			break
		}
		delta, err := acc.add([]byte(data))
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				e.msg += ". Request URL: " + endpoint
				return nil, e
			}
			return nil, &Error{kind: ErrBadResponse, Status: 200, cause: err,
				msg: fmt.Sprintf("AI API error: stream chunk is not valid JSON. Request URL: %s", displayURL(endpoint))}
		}
		if !delta.empty() {
			if err := onDelta(delta); err != nil {
				return nil, &abortError{err}
			}
		}
	}
	return acc.response(), nil
}

// chunkJSON is one streamed chat-completion chunk.
type chunkJSON struct {
	Choices []struct {
		Delta struct {
			Content          json.RawMessage `json:"content"`
			ReasoningContent json.RawMessage `json:"reasoning_content"`
			Refusal          json.RawMessage `json:"refusal"`
			ToolCalls        []struct {
				Index    *int            `json:"index"`
				ID       json.RawMessage `json:"id"`
				Type     json.RawMessage `json:"type"`
				Function struct {
					Name      json.RawMessage `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason json.RawMessage `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// streamAccumulator assembles a Response from chunks.
type streamAccumulator struct {
	key                         string // the API key, redacted from what the provider says
	content, reasoning, refusal strings.Builder
	calls                       map[int]*toolCallBuilder
	finishReason                string
	usage                       Usage
}

type toolCallBuilder struct {
	id, typ, name string
	args          strings.Builder
}

// add folds one chunk into the answer and returns what it added.
func (a *streamAccumulator) add(data []byte) (Delta, error) {
	var ch chunkJSON
	if err := json.Unmarshal(data, &ch); err != nil {
		return Delta{}, err
	}
	if k := push.JSONKind(ch.Error); k != 0 && k != 'n' {
		e := &Error{kind: ErrBadResponse, Status: 200, msg: "AI API error: the stream reported an error"}
		e.ProviderMessage, e.ProviderCode = providerDetail(data, a.key)
		return Delta{}, e
	}
	if push.JSONKind(ch.Usage) == '{' {
		a.usage = parseUsage(ch.Usage)
	}
	if len(ch.Choices) == 0 {
		return Delta{}, nil
	}
	c := ch.Choices[0]
	if fr, ok := push.JSONString(c.FinishReason); ok {
		a.finishReason = fr
	}
	var d Delta
	d.Content, _ = push.JSONString(c.Delta.Content)
	d.ReasoningContent, _ = push.JSONString(c.Delta.ReasoningContent)
	d.Refusal, _ = push.JSONString(c.Delta.Refusal)
	a.content.WriteString(d.Content)
	a.reasoning.WriteString(d.ReasoningContent)
	a.refusal.WriteString(d.Refusal)
	for pos, tc := range c.Delta.ToolCalls {
		td := ToolCallDelta{Index: pos} // some relays omit index: use the position
		if tc.Index != nil {
			td.Index = *tc.Index
		}
		td.ID, _ = push.JSONString(tc.ID)
		td.Type, _ = push.JSONString(tc.Type)
		td.Name, _ = push.JSONString(tc.Function.Name)
		td.Arguments, _ = push.JSONString(tc.Function.Arguments)
		if a.calls == nil {
			a.calls = map[int]*toolCallBuilder{}
		}
		b := a.calls[td.Index]
		if b == nil {
			b = &toolCallBuilder{}
			a.calls[td.Index] = b
		}
		if td.ID != "" {
			b.id = td.ID
		}
		if td.Type != "" {
			b.typ = td.Type
		}
		b.name += td.Name
		b.args.WriteString(td.Arguments)
		d.ToolCalls = append(d.ToolCalls, td)
	}
	return d, nil
}

// response builds the final answer; its Message has the shape of a
// non-streamed assistant message.
func (a *streamAccumulator) response() *Response {
	r := &Response{
		Content:          a.content.String(),
		ReasoningContent: a.reasoning.String(),
		Refusal:          a.refusal.String(),
		FinishReason:     a.finishReason,
		Usage:            a.usage,
	}
	if len(a.calls) > 0 {
		indexes := make([]int, 0, len(a.calls))
		for i := range a.calls {
			indexes = append(indexes, i)
		}
		sort.Ints(indexes)
		calls := make([]ToolCall, len(indexes))
		for n, i := range indexes {
			b := a.calls[i]
			calls[n] = ToolCall{ID: b.id, Type: cmp.Or(b.typ, "function"), Function: ToolCallFunction{Name: b.name, Arguments: b.args.String()}}
		}
		r.ToolCalls = push.MustMarshalNoEscape(calls)
	}

	var m bytes.Buffer
	m.WriteString(`{"role":"assistant","content":`)
	if r.Content == "" && r.ToolCalls != nil {
		m.WriteString("null")
	} else {
		m.Write(push.MustMarshalNoEscape(r.Content))
	}
	if r.ReasoningContent != "" {
		m.WriteString(`,"reasoning_content":`)
		m.Write(push.MustMarshalNoEscape(r.ReasoningContent))
	}
	if r.Refusal != "" {
		m.WriteString(`,"refusal":`)
		m.Write(push.MustMarshalNoEscape(r.Refusal))
	}
	if r.ToolCalls != nil {
		m.WriteString(`,"tool_calls":`)
		m.Write(r.ToolCalls)
	}
	m.WriteByte('}')
	r.Message = m.Bytes()
	return r
}

var errEventTooLarge = errors.New("server-sent event too large")

// eventReader splits a server-sent event stream into the data of its
// events (several data lines joined by "\n"). Lines may end in LF, CRLF or
// CR; comment lines and other fields are skipped. An event still open at
// the end of the stream is returned too.
type eventReader struct {
	r      *bufio.Reader
	max    int64
	read   int64
	lastCR bool   // the previous line ended in CR: a following LF belongs to it
	buf    []byte // reused for each line
}

func newEventReader(r io.Reader, max int64) *eventReader {
	return &eventReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the data of the next event that has data, or io.EOF.
func (e *eventReader) next() (string, error) {
	var data strings.Builder
	hasData := false
	for {
		line, err := e.line()
		if err != nil {
			if errors.Is(err, io.EOF) && hasData {
				return data.String(), nil
			}
			return "", err
		}
		if line == "" {
			if hasData {
				return data.String(), nil
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		if field != "data" {
			continue
		}
		value = strings.TrimPrefix(value, " ")
		if hasData {
			data.WriteByte('\n')
		}
		data.WriteString(value)
		hasData = true
		if int64(data.Len()) > e.max {
			return "", errEventTooLarge
		}
	}
}

// line reads one line without its terminator; io.EOF when none is left.
func (e *eventReader) line() (string, error) {
	b := e.buf[:0]
	defer func() { e.buf = b }()
	for {
		c, err := e.r.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) && len(b) > 0 {
				return string(b), nil
			}
			return "", err
		}
		e.read++
		if e.lastCR {
			e.lastCR = false
			if c == '\n' {
				continue
			}
		}
		switch c {
		case '\n':
			return string(b), nil
		case '\r':
			e.lastCR = true
			return string(b), nil
		}
		b = append(b, c)
		if int64(len(b)) > e.max {
			return "", errEventTooLarge
		}
	}
}
