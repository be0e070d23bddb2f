package llm

import (
	"strings"

	"amsg/push"
)

// The tags whose closed spans carry reasoning inside content, matched
// case-insensitively (ASCII only, as JavaScript's non-Unicode /i does), the
// closing tag having the same name as the opening one.
var thinkTags = [...]string{"think", "thinking", "thought"}

// thinkSpan locates one closed span: s[start:end] is the whole span,
// s[innerStart:innerEnd] what is between the tags.
type thinkSpan struct{ start, innerStart, innerEnd, end int }

// openTagAt returns the tag name when s[i:] starts with <think>, <thinking>
// or <thought>.
func openTagAt(s string, i int) string {
	for _, name := range thinkTags {
		if hasPrefixFold(s[i:], "<"+name+">") {
			return name
		}
	}
	return ""
}

// nextThinkSpan finds the leftmost closed span starting at or after from, as
// the upstream regex /<(think|thinking|thought)>([\s\S]*?)<\/\1>/i does:
// the first opening tag that has a closing tag of the same name after it,
// closed by the nearest such tag.
func nextThinkSpan(s string, from int) (thinkSpan, bool) {
	for i := from; i < len(s); i++ {
		j := strings.IndexByte(s[i:], '<')
		if j < 0 {
			break
		}
		i += j
		name := openTagAt(s, i)
		if name == "" {
			continue
		}
		inner := i + len(name) + 2
		if k := indexFold(s[inner:], "</"+name+">"); k >= 0 {
			return thinkSpan{i, inner, inner + k, inner + k + len(name) + 3}, true
		}
	}
	return thinkSpan{}, false
}

// ExtractReasoning returns the reasoning of one LLM answer, as the standard
// reads it: reasoning_content when it is not blank, else the inner text of
// the first closed <think>, <thinking> or <thought> span in content when that
// is not blank (later spans are not consulted), else "". The result is
// trimmed.
func ExtractReasoning(reasoningContent, content string) string {
	if r := push.JSTrim(reasoningContent); r != "" {
		return r
	}
	if sp, ok := nextThinkSpan(content, 0); ok {
		return push.JSTrim(content[sp.innerStart:sp.innerEnd])
	}
	return ""
}

// StripReasoningTags removes every closed think span from content and trims
// the result. Unclosed tags stay. Content without '<' is returned unchanged.
func StripReasoningTags(content string) string {
	if !strings.Contains(content, "<") {
		return content
	}
	return push.JSTrim(removeThinkSpans(content, nil))
}

// removeThinkSpans removes every closed span and reports each span's inner
// text to inner when it is not nil.
func removeThinkSpans(s string, inner func(string)) string {
	var b strings.Builder
	from := 0
	for {
		sp, ok := nextThinkSpan(s, from)
		if !ok {
			break
		}
		b.WriteString(s[from:sp.start])
		if inner != nil {
			inner(s[sp.innerStart:sp.innerEnd])
		}
		from = sp.end
	}
	b.WriteString(s[from:])
	return b.String()
}

// SeparateReasoning splits one LLM answer into its reasoning and the text to
// show, the way the standard's single-shot path does: content is trimmed and,
// only when reasoning was found (in reasoning_content or a think span), every
// closed think span is removed from it. So "<think></think>hi" keeps its
// tags, as upstream does.
func SeparateReasoning(reasoningContent, content string) (reasoning, text string) {
	reasoning = ExtractReasoning(reasoningContent, content)
	text = push.JSTrim(content)
	if reasoning != "" {
		text = StripReasoningTags(text)
	}
	return reasoning, text
}

// ThinkFilter removes closed think spans from content that arrives in
// pieces, so a streamed answer can be segmented and pushed while it is being
// generated without pushing the model's thinking. Text is held back only
// while it could still be the start of a span: from a '<' that may begin an
// opening tag until that tag is closed or the stream ends.
//
// The concatenated output of Write and Flush equals the content with every
// closed span removed (no trimming), however the content is cut. Unlike
// SeparateReasoning it removes spans even when none holds reasoning (an empty
// <think></think>, which some models emit when thinking is off): text that
// has been pushed cannot be taken back, and empty tags are never meant for
// the reader.
type ThinkFilter struct {
	pending    string // held text, starting at a possible span start
	closeFrom  int    // pending[:closeFrom] holds no start of the closing tag we wait for
	spans      int
	firstInner string
}

// Write adds a piece of content and returns the text now known to lie
// outside every span.
func (f *ThinkFilter) Write(delta string) string {
	f.pending += delta
	var out strings.Builder
	for f.pending != "" {
		p := possibleSpanStart(f.pending)
		if p < 0 {
			out.WriteString(f.pending)
			f.pending, f.closeFrom = "", 0
			break
		}
		if p > 0 {
			out.WriteString(f.pending[:p])
			f.pending, f.closeFrom = f.pending[p:], 0
		}
		name := openTagAt(f.pending, 0)
		if name == "" {
			break // a partial opening tag: wait for more
		}
		inner := len(name) + 2
		closing := "</" + name + ">"
		from := max(inner, f.closeFrom)
		k := indexFold(f.pending[from:], closing)
		if k < 0 {
			f.closeFrom = max(inner, len(f.pending)-len(closing)+1)
			break
		}
		f.record(f.pending[inner : from+k])
		f.pending, f.closeFrom = f.pending[from+k+len(closing):], 0
	}
	return out.String()
}

// Flush ends the content and returns what was held back, with closed spans
// inside it removed and unclosed tags kept.
func (f *ThinkFilter) Flush() string {
	out := removeThinkSpans(f.pending, f.record)
	f.pending, f.closeFrom = "", 0
	return out
}

// Reasoning is the trimmed inner text of the first closed span seen so far,
// "" when there was none or it was blank: what ExtractReasoning reads from
// content.
func (f *ThinkFilter) Reasoning() string { return push.JSTrim(f.firstInner) }

func (f *ThinkFilter) record(inner string) {
	if f.spans == 0 {
		f.firstInner = inner
	}
	f.spans++
}

// possibleSpanStart returns the index of the first '<' in s that is an
// opening tag or a prefix of one at the end of s, or -1.
func possibleSpanStart(s string) int {
	for i := 0; i < len(s); i++ {
		j := strings.IndexByte(s[i:], '<')
		if j < 0 {
			return -1
		}
		i += j
		for _, name := range thinkTags {
			tag := "<" + name + ">"
			if hasPrefixFold(s[i:], tag) || (len(s)-i < len(tag) && hasPrefixFold(tag, s[i:])) {
				return i
			}
		}
	}
	return -1
}

// hasPrefixFold reports whether s starts with prefix, ignoring ASCII case.
func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		if lowerASCII(s[i]) != lowerASCII(prefix[i]) {
			return false
		}
	}
	return true
}

// indexFold is strings.Index ignoring ASCII case.
func indexFold(s, substr string) int {
	for i := 0; i+len(substr) <= len(s); i++ {
		if hasPrefixFold(s[i:], substr) {
			return i
		}
	}
	return -1
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
