package llm

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"amsg/llm/llmtest"
)

// typicalReply is a companion-app answer: a few sentences, mixed scripts.
const typicalReply = "早上好！今天的天气不错，适合出去走走。你昨天说想去公园，还记得吗？" +
	"I found a quiet café near the lake, open from 8 am. Want me to remind you at noon? " +
	"记得带伞哦，傍晚可能会下雨。"

// longReply is about 20 KB: a long story of many paragraphs.
var longReply = strings.Repeat("第一段的第一句。第二句有点长，讲了很多事情！还有第三句吗？\n\n"+
	"A second paragraph in English. It has sentences too! Does it end? Yes.\n\n", 100)

func BenchmarkSplitTypical(b *testing.B) {
	benchSplit(b, DefaultSplitter(), typicalReply)
}

func BenchmarkSplitLong(b *testing.B) {
	benchSplit(b, DefaultSplitter(), longReply)
}

func BenchmarkSplitLongCascade(b *testing.B) {
	benchSplit(b, mustSplitter("(\n\n+)", StandardSplitPattern), longReply)
}

func benchSplit(b *testing.B, sp *Splitter, text string) {
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := sp.Split(text); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSegmenterLong feeds the long reply in the 4-rune deltas a
// streaming model produces.
func BenchmarkSegmenterLong(b *testing.B) {
	pieces := runeCuts(longReply, []byte(strings.Repeat("\x03", len(longReply))))
	b.SetBytes(int64(len(longReply)))
	b.ReportAllocs()
	for b.Loop() {
		g := DefaultSplitter().NewSegmenter()
		for _, p := range pieces {
			if _, err := g.Write(p); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := g.Flush(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamParser measures reading a streamed answer: the long reply
// as 4-rune content chunks in OpenAI's chunk format.
func BenchmarkStreamParser(b *testing.B) {
	var body strings.Builder
	for _, p := range runeCuts(longReply, []byte(strings.Repeat("\x03", len(longReply)))) {
		chunk, _ := json.Marshal(map[string]any{
			"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1700000000, "model": "m",
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": p}, "finish_reason": nil}},
		})
		body.WriteString("data: " + string(chunk) + "\n\n")
	}
	body.WriteString("data: [DONE]\n\n")
	stream := body.String()
	c := NewClient(Config{Policy: testPolicy})
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		resp, err := c.readStream(strings.NewReader(stream), func(Delta) error { return nil }, "http://x", "k")
		if err != nil || len(resp.Content) != len(longReply) {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompleteLoopback is the client's cost per call against a
// zero-latency fake endpoint on loopback (HTTP included).
func BenchmarkCompleteLoopback(b *testing.B) {
	llm := llmtest.NewServer(b)
	c := NewClient(Config{Policy: testPolicy})
	req := Request{APIURL: llm.APIURL(), APIKey: testKey, Model: "m", Messages: json.RawMessage(`[{"role":"user","content":"hi"}]`)}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		llm.Enqueue(llmtest.Reply{Content: typicalReply, Usage: &llmtest.Usage{PromptTokens: 10, CompletionTokens: 40}})
		b.StartTimer()
		if _, err := c.Complete(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}
