package llm

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzStreamParser(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: [DONE]\n\n"), "你好。今天", []byte{1, 2}, uint8(0))
	f.Add([]byte(": c\r\n\r\ndata: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"x\"}}]}}]}\r\n\r\n"), "a\nb", []byte{0}, uint8(1))
	f.Add([]byte("data: {\"error\":{\"message\":\"x\"}}\r\rdata"), "", []byte{}, uint8(2))
	f.Add([]byte("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1e400}}\n\n"), "💬\"\\", []byte{3}, uint8(3))
	f.Fuzz(func(t *testing.T, body []byte, content string, seed []byte, style uint8) {
		c := NewClient(Config{Policy: testPolicy, MaxResponseBytes: 1 << 16})

		// Any body: an answer or an *Error, never a panic.
		resp, err := c.readStream(strings.NewReader(string(body)), func(Delta) error { return nil }, "http://x", "k")
		var e *Error
		if err != nil && !errors.As(err, &e) {
			t.Fatalf("error of type %T: %v", err, err)
		}
		if err == nil && !json.Valid(resp.Message) {
			t.Fatalf("invalid assembled message %s", resp.Message)
		}

		// A well-formed stream of the content, cut anywhere, with any line
		// ending and comments in between, gives the content back.
		if !utf8.ValidString(content) {
			return
		}
		eol := []string{"\n", "\r\n", "\r"}[style%3]
		var stream strings.Builder
		for i, piece := range runeCuts(content, seed) {
			if style&4 != 0 {
				stream.WriteString(": comment" + eol)
			}
			chunk, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"delta": map[string]any{"content": piece, "tool_calls": []any{map[string]any{"index": i % 2, "function": map[string]any{"arguments": piece}}}}}}})
			stream.WriteString("data: " + string(chunk) + eol + eol)
		}
		if style&8 != 0 {
			stream.WriteString("data: [DONE]" + eol + eol)
		}
		var seen strings.Builder
		resp, err = c.readStream(strings.NewReader(stream.String()), func(d Delta) error { seen.WriteString(d.Content); return nil }, "http://x", "k")
		if err != nil {
			t.Fatal(err)
		}
		if resp.Content != content || seen.String() != content {
			t.Fatalf("content %q, deltas %q, want %q", resp.Content, seen.String(), content)
		}
		calls, err := resp.Calls()
		if err != nil {
			t.Fatal(err)
		}
		var args strings.Builder
		for _, call := range calls {
			args.WriteString(call.Function.Arguments)
		}
		if len(args.String()) != len(content) {
			t.Fatalf("tool call arguments %q for content %q", args.String(), content)
		}
	})
}

// runeCuts splits s into pieces at rune boundaries decided by seed.
func runeCuts(s string, seed []byte) []string {
	rs := []rune(s)
	var out []string
	for _, b := range seed {
		if len(rs) == 0 {
			break
		}
		n := min(int(b)%5+1, len(rs))
		out = append(out, string(rs[:n]))
		rs = rs[n:]
	}
	if len(rs) > 0 {
		out = append(out, string(rs))
	}
	return out
}
