package loop

import (
	"encoding/json"
	"io"

	"amsg/push"
)

// TimbalContentType is the media type of WriteTimbal's output.
const TimbalContentType = "application/x-ndjson"

// timbalFrame is a Timbal set frame: a complete value with its id and time.
type timbalFrame struct {
	I string `json:"i"`
	T string `json:"t"`
	V any    `json:"v"`
}

type timbalText struct {
	Type    string `json:"type"`
	Content string `json:"content"`
	Code    string `json:"code,omitempty"`
}

type timbalToolCall struct {
	Type       string          `json:"type"`
	ToolCallID string          `json:"toolCallId"`
	Name       string          `json:"name"`
	Arguments  json.RawMessage `json:"arguments"`
}

type timbalToolResult struct {
	Type       string          `json:"type"`
	ToolCallID string          `json:"toolCallId"`
	Status     string          `json:"status"`
	Output     json.RawMessage `json:"output"`
}

// WriteTimbal writes the transcript as Timbal Messages/1.0 set frames, one
// JSON object per line (NDJSON), in transcript order: an input becomes a
// user message, reasoning thinking, a reply an agent message, a tool-calls
// round its narration (as agent) and one tool_call per call, a
// tool-results message one tool_result per result, an error an error
// message with its code. Every frame is complete; nothing is streamed.
func (t *Transcript) WriteTimbal(w io.Writer) error {
	for _, m := range t.Messages {
		at := push.FormatTimestamp(m.Timestamp)
		var frames []timbalFrame
		text := func(typ string) {
			frames = append(frames, timbalFrame{m.ID, at, timbalText{Type: typ, Content: m.Text, Code: m.Code}})
		}
		switch m.Type {
		case MessageInput:
			text("user")
		case MessageReasoning:
			text("thinking")
		case MessageReply:
			text("agent")
		case MessageError:
			text("error")
		case MessageToolCalls:
			if m.Text != "" {
				text("agent")
			}
			for _, c := range m.Calls {
				args := c.Args
				if args == nil {
					args = json.RawMessage("{}")
				}
				frames = append(frames, timbalFrame{c.EntryID, at, timbalToolCall{"tool_call", c.ID, c.Name, args}})
			}
		case MessageToolResults:
			for _, r := range m.Results {
				frames = append(frames, timbalFrame{r.EntryID, at, timbalToolResult{"tool_result", r.CallID, "success", r.Output}})
			}
		}
		for _, f := range frames {
			line, err := push.MarshalNoEscape(f)
			if err != nil {
				return err
			}
			if _, err := w.Write(append(line, '\n')); err != nil {
				return err
			}
		}
	}
	return nil
}
