package llm

import (
	"strings"
	"testing"
)

func TestExtractReasoning(t *testing.T) {
	tests := []struct{ name, reasoningContent, content, want string }{
		{"field wins, trimmed", "  plan \n", "<think>other</think>hi", "plan"},
		{"blank field falls back to tags", " \t", "<think> idea </think>hi", "idea"},
		{"thinking tag", "", "<thinking>a</thinking>b", "a"},
		{"thought tag", "", "x<thought>\nmulti\nline\n</thought>", "multi\nline"},
		{"case-insensitive, same name", "", "<THINKING>a</thinking>", "a"},
		{"mixed names do not close", "", "<think>a</thought>", ""},
		{"unclosed never matches", "", "<think>a", ""},
		{"empty span is none", "", "<think></think>你好", ""},
		{"first span only", "", "<think> </think>x<think>late</think>", ""},
		{"lazy close", "", "<think>a</think>b</think>", "a"},
		{"first opening tag that closes", "", "<think>a<thought>b</thought>", "b"},
		{"tag with attributes is not a tag", "", "<think x>a</think>", ""},
		{"non-ASCII case variant is not a tag", "", "<thın\u212a>a</think>", ""},
		{"none", "", "hello", ""},
	}
	for _, tt := range tests {
		if got := ExtractReasoning(tt.reasoningContent, tt.content); got != tt.want {
			t.Errorf("%s: ExtractReasoning(%q, %q) = %q, want %q", tt.name, tt.reasoningContent, tt.content, got, tt.want)
		}
	}
}

func TestStripReasoningTags(t *testing.T) {
	tests := []struct{ in, want string }{
		{"x<think>a</think>y<think>unclosed", "xy<think>unclosed"},
		{"<think>plan</think>\n\n你好。", "你好。"},
		{"<Thought>a</THOUGHT> b <thinking>c</thinking>", "b"},
		{"  no tags  ", "  no tags  "}, // no '<': unchanged
		{" a < b ", "a < b"},
	}
	for _, tt := range tests {
		if got := StripReasoningTags(tt.in); got != tt.want {
			t.Errorf("StripReasoningTags(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSeparateReasoning(t *testing.T) {
	tests := []struct{ name, reasoningContent, content, reasoning, text string }{
		{"tags stripped when reasoning found", "", " <think>plan</think>你好。 ", "plan", "你好。"},
		{"empty span ships raw", "", "<think></think>你好", "", "<think></think>你好"},
		{"field reasoning also strips tags", "r", "<think></think>你好", "r", "你好"},
		{"plain", "", "  hi  ", "", "hi"},
	}
	for _, tt := range tests {
		r, text := SeparateReasoning(tt.reasoningContent, tt.content)
		if r != tt.reasoning || text != tt.text {
			t.Errorf("%s: SeparateReasoning = (%q, %q), want (%q, %q)", tt.name, r, text, tt.reasoning, tt.text)
		}
	}
}

func TestThinkFilterHoldsOnlyPossibleSpans(t *testing.T) {
	var f ThinkFilter
	steps := []struct{ in, out string }{
		{"<thi", ""},         // could be an opening tag
		{"nk>plan", ""},      // inside a span
		{"</think>你好", "你好"}, // span closed and removed
		{"。a <b", "。a <b"},   // '<b' cannot open a span
		{" <", " "},
		{"thought>x</THOUGHT>y", "y"},
	}
	for _, s := range steps {
		if got := f.Write(s.in); got != s.out {
			t.Fatalf("Write(%q) = %q, want %q", s.in, got, s.out)
		}
	}
	if got := f.Flush(); got != "" {
		t.Fatalf("Flush() = %q", got)
	}
	if f.Reasoning() != "plan" {
		t.Fatalf("Reasoning() = %q", f.Reasoning())
	}
}

func TestThinkFilterUnclosedReleasedAtFlush(t *testing.T) {
	var f ThinkFilter
	if got := f.Write("a<think>b<thought>c</thought>d"); got != "a" {
		t.Fatalf("Write = %q", got)
	}
	if got := f.Flush(); got != "<think>bd" {
		t.Fatalf("Flush = %q", got)
	}
	if f.Reasoning() != "c" {
		t.Fatalf("Reasoning() = %q", f.Reasoning())
	}
}

// cuts splits s at byte offsets derived from seed, so a fuzz input decides
// how text arrives in pieces. Cuts may fall inside a UTF-8 sequence.
func cuts(s string, seed []byte) []string {
	var parts []string
	for _, b := range seed {
		if s == "" {
			break
		}
		n := int(b)%8 + 1
		n = min(n, len(s))
		parts = append(parts, s[:n])
		s = s[n:]
	}
	if s != "" {
		parts = append(parts, s)
	}
	return parts
}

func FuzzThinkFilter(f *testing.F) {
	f.Add("<think>plan</think>你好。今天", []byte{1, 2, 3})
	f.Add("x<THINK>a</think>y<thought>b</thought>z<thinking>unclosed", []byte{7, 0, 5, 1})
	f.Add("<think><thought>a</thought></think>", []byte{3, 3, 3, 3})
	f.Add("<<think>>a</think>><", []byte{0, 1, 0, 1})
	f.Fuzz(func(t *testing.T, content string, seed []byte) {
		var fl ThinkFilter
		var out strings.Builder
		for _, p := range cuts(content, seed) {
			out.WriteString(fl.Write(p))
		}
		out.WriteString(fl.Flush())
		if want := removeThinkSpans(content, nil); out.String() != want {
			t.Fatalf("streamed %q, batch %q", out.String(), want)
		}
		if want := ExtractReasoning("", content); fl.Reasoning() != want {
			t.Fatalf("Reasoning() = %q, want %q", fl.Reasoning(), want)
		}
	})
}
