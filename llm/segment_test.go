package llm

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func TestSplitDefault(t *testing.T) {
	// The verified examples of the instant (§2.11) and server (§4.4) paths.
	tests := []struct {
		in   string
		want []string
	}{
		{"你好。今天好天气！", []string{"你好。", "今天好天气！"}},
		{"Hello there. How are you? Fine!  Ok...", []string{"Hello there.", "How are you?", "Fine!", "Ok..."}},
		{"one。two", []string{"one。", "two"}},
		{"!!!", []string{"!!!"}},
		{"第一句。第二句。第三句。第四句。", []string{"第一句。", "第二句。", "第三句。", "第四句。"}},
		{"你好。世界！再见？", []string{"你好。", "世界！", "再见？"}},
		{"Hi!! How are you?? fine", []string{"Hi!!", "How are you??", "fine"}},
		{"   ", []string{"   "}},
		{"", []string{""}},
		// A blank element drops the delimiter after it.
		{"你好。 ！再见", []string{"你好。", "再见"}},
		{"  前面有空格。  ", []string{"前面有空格。"}},
	}
	for _, tt := range tests {
		got, err := DefaultSplitter().Split(tt.in)
		if err != nil {
			t.Fatalf("Split(%q): %v", tt.in, err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Split(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestSplitDefaultLatin covers amsg's default beyond the standard's: Latin
// sentence ends, and what must not split.
func TestSplitDefaultLatin(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"periods", "It works. Try it.", []string{"It works.", "Try it."}},
		{"line end", "First line.\nSecond line", []string{"First line.", "Second line"}},
		{"abbreviations", "Ask Dr. Lee, e.g. today. Mr. Smith vs. Ms. Jones et al. agree.",
			[]string{"Ask Dr. Lee, e.g. today.", "Mr. Smith vs. Ms. Jones et al. agree."}},
		{"dotted abbreviation mid and end", "The U.S. team won at 5 p.m. Then we left.",
			[]string{"The U.S. team won at 5 p.m. Then we left."}},
		{"initials", "J. R. R. Tolkien wrote it. I did. So did I.", []string{"J. R. R. Tolkien wrote it.", "I did.", "So did I."}},
		{"decimals", "Pi is 3.14 and e is 2.718. Next.", []string{"Pi is 3.14 and e is 2.718.", "Next."}},
		{"a number ends a sentence", "It was 1990. Then 2000.", []string{"It was 1990.", "Then 2000."}},
		{"numbered list", "Steps:\n1. Install Go.\n2. Run it.", []string{"Steps:\n1. Install Go.", "2. Run it."}},
		{"URLs", "See https://example.com/a?b=1&c=2.html or example.org. Done!",
			[]string{"See https://example.com/a?b=1&c=2.html or example.org.", "Done!"}},
		{"dotted words", "Use Node.js and file.txt today. Ok", []string{"Use Node.js and file.txt today.", "Ok"}},
		{"ellipses", "Well… I think so... Maybe…", []string{"Well…", "I think so...", "Maybe…"}},
		{"ellipsis inside a word run", "wait...what", []string{"wait...what"}},
		{"runs and closers", "Really?! \"Yes.\" (Sure.) Fine", []string{"Really?!", "\"Yes.\"", "(Sure.)", "Fine"}},
		{"question in a URL query", "GET /search?q=go now? yes", []string{"GET /search?q=go now?", "yes"}},
		{"mixed CJK and Latin", "我用 Go.然后呢？OK. 好的。Bye!", []string{"我用 Go.", "然后呢？", "OK.", "好的。", "Bye!"}},
		{"CJK runs split anywhere", "好。ok！no", []string{"好。", "ok！", "no"}},
		{"mixed run after CJK", "真的吗?!好", []string{"真的吗?!", "好"}},
		{"no split before a Latin letter", "Hi!How are you", []string{"Hi!How are you"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DefaultSplitter().Split(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Split(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestStandardSplitPattern keeps the standard's pattern, which requests may
// still give, splitting as upstream does.
func TestStandardSplitPattern(t *testing.T) {
	got, err := mustSplitter(StandardSplitPattern).Split("Hello there. How are you? Fine!  Ok...")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Hello there. How are you?", "Fine!", "Ok..."}; !reflect.DeepEqual(got, want) {
		t.Errorf("Split = %q, want %q", got, want)
	}
}

// TestBegunMeansAnotherSegment checks Begun against Split: whenever Begun
// says a segment has begun after those Write returned, the whole text has
// more segments than that, for any cut of the text.
func TestBegunMeansAnotherSegment(t *testing.T) {
	alphabet := []string{"a", "好", " ", "\n", "\u3000", "。", "！", "？", "!", "?", ".", "…", "\"", ")", "Dr", "3", "x"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		text := b.String()
		cut := rng.IntN(len(text) + 1)
		g := DefaultSplitter().NewSegmenter()
		first, _ := g.Write(text[:cut])
		second, _ := g.Write(text[cut:])
		returned := len(first) + len(second)
		whole, err := DefaultSplitter().Split(text)
		if err != nil {
			t.Fatal(err)
		}
		if g.Begun() && len(whole) <= returned {
			t.Fatalf("%q: Begun after %d segments, Split gives %q", text, returned, whole)
		}
	}
}

func mustSplitter(patterns ...string) *Splitter {
	s, err := NewSplitter(patterns...)
	if err != nil {
		panic(err)
	}
	return s
}

func TestSplitPatterns(t *testing.T) {
	tests := []struct {
		name     string
		patterns []string
		in       string
		want     []string
	}{
		{"newline runs", []string{`([\n]+)`}, "行一\n行二\n行三", []string{"行一\n", "行二\n", "行三"}},
		{"cascade paragraph then sentence", []string{"(\n\n+)", "([。！？!?]+)"}, "段一句一。段一句二。\n\n段二句一。", []string{"段一句一。", "段一句二。", "段二句一。"}},
		{"non-capturing glues segments", []string{`\n+`}, "a\nb\nc", []string{"ab", "c"}},
		{"whitespace-only content", []string{`([\n]+)`}, "   ", []string{"   "}},
		{"empty content", []string{`(x)`}, "", []string{""}},
		{"missing group is empty text", []string{`(\d)|(x)`}, "a1b", []string{"a1"}},
		{"missing group, more", []string{`(\d)|(x)`}, "a1bxc", []string{"a1", "c"}},
		// JavaScript numbers groups left to right, named or not; regexp2
		// numbers named ones last. "a。b！c" splits to
		// ["a","。",undefined,"b",undefined,"！","c"].
		{"named groups in JavaScript order", []string{`(?<p>。)|(！)`}, "a。b！c", []string{"a。", "c"}},
		{"^ only at the start", []string{`(^x)`}, "xax", []string{"ax"}},
		{"lookbehind sees split text", []string{`(?<=。)`}, "a。b。c", []string{"a。b。", "c"}},
		{"empty matches", []string{`(x*)`}, "abc", []string{"a", "b", "c"}},
		{"identity escape \\A is a letter", []string{`(\A)`}, "xAy", []string{"xA", "y"}},
		{"dot excludes U+2028", []string{`(a.b)`}, "1a\u2028b2", []string{"1a\u2028b2"}},
		{"dot", []string{`(a.b)`}, "1axb2", []string{"1axb", "2"}},
		{"astral characters", []string{`(😀)`}, "a😀b", []string{"a😀", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sp, err := NewSplitter(tt.patterns...)
			if err != nil {
				t.Fatal(err)
			}
			got, err := sp.Split(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Split(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestValidateSplitPattern(t *testing.T) {
	long := strings.Repeat("a", 200)
	tests := []struct{ raw, want string }{
		{``, ""},
		{`null`, ""},
		{`[]`, ""},
		{`"([。！？!?]+)"`, ""},
		{`["(\n\n+)","([。！？!?]+)"]`, ""},
		{`"` + long + `"`, ""},
		{`"(?<=a)b\\k<x>(?<x>y)"`, ""},
		{`"a{,2}]{"`, ""}, // Annex B literals
		{`"` + long + `a"`, "splitPattern 不能超过 200 字符"},
		{`"` + strings.Repeat("😀", 101) + `"`, "splitPattern 不能超过 200 字符"}, // 202 UTF-16 units
		{`"("`, "splitPattern 不是有效正则表达式"},
		{`"a**"`, "splitPattern 不是有效正则表达式"},
		{`"(?i)a"`, "splitPattern 不是有效正则表达式"},
		{`"(?<n>a)(?<n>b)"`, "splitPattern 不是有效正则表达式"},
		{`"^*"`, "splitPattern 不是有效正则表达式"},
		{`"\\b{2}"`, "splitPattern 不是有效正则表达式"},
		{`5`, "splitPattern 必须是字符串"},
		{`{}`, "splitPattern 必须是字符串"},
		{`[1]`, "splitPattern[0] 必须是字符串"},
		{`["("]`, "splitPattern[0] 不是有效正则表达式"},
		{`["a","("]`, "splitPattern[1] 不是有效正则表达式"},
		{`["(",5]`, "splitPattern[0] 不是有效正则表达式"},
		{`["a",null]`, "splitPattern[1] 必须是字符串"},
		{`["a","` + long + `a"]`, "splitPattern[1] 不能超过 200 字符"},
		{`["a","a","a","a","a","a","a","a","a","a","a"]`, "splitPattern 数组最多 10 项"},
		{`[1,1,1,1,1,1,1,1,1,1,1]`, "splitPattern 数组最多 10 项"},
	}
	for _, tt := range tests {
		err := ValidateSplitPattern(json.RawMessage(tt.raw))
		if tt.want == "" {
			if err != nil {
				t.Errorf("ValidateSplitPattern(%s) = %v, want valid", tt.raw, err)
			}
			continue
		}
		if err == nil || err.Error() != tt.want || !errors.Is(err, ErrInvalidSplitPattern) {
			t.Errorf("ValidateSplitPattern(%s) = %v, want %q", tt.raw, err, tt.want)
		}
	}
}

func TestSplitBounds(t *testing.T) {
	sp, err := NewSplitter(`((a+)+$)`)
	if err != nil {
		t.Fatal(err)
	}
	// Catastrophic backtracking: 2^40 paths. The match timeout ends it.
	if _, err := sp.Split(strings.Repeat("a", 40) + "!"); !errors.Is(err, ErrSplitTimeout) {
		t.Fatalf("hostile pattern: err = %v, want ErrSplitTimeout", err)
	}
	if _, err := DefaultSplitter().Split(strings.Repeat("a", MaxSplitInput+1)); !errors.Is(err, ErrSplitInputTooLarge) {
		t.Fatalf("oversized input: err = %v, want ErrSplitInputTooLarge", err)
	}
}

func TestSegmenterSteps(t *testing.T) {
	type step struct {
		in   string
		want []string
	}
	tests := []struct {
		name     string
		patterns []string // none: the default
		steps    []step
		flush    []string
	}{
		{
			"default: a sentence comes once its delimiter run has ended",
			nil,
			[]step{
				{"你好", nil},
				{"。", nil}, // the run of delimiters may continue
				{"！今天", []string{"你好。！"}},
				{"好天气！明天见", []string{"今天好天气！"}},
				{"", nil},
			},
			[]string{"明天见"},
		},
		{
			"without a capture group a segment waits for the next match",
			[]string{`\n+`},
			[]step{{"a\nb", nil}, {"\nc", []string{"ab"}}},
			[]string{"c"},
		},
		{
			"cascade: sentences of a paragraph come when it ends",
			[]string{"(\n\n+)", "([。！？!?]+)"},
			[]step{{"段一句一。段一句二。", nil}, {"\n\n段二", []string{"段一句一。", "段一句二。"}}},
			[]string{"段二"},
		},
		{
			// Documented limit: an earlier alternative that needs more text
			// loses to a later one that is complete.
			"an earlier match needing more text is not awaited",
			[]string{`(ab+c|b)`},
			[]step{{"abb", []string{"ab"}}, {"c", nil}},
			[]string{"c"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sp, err := NewSplitter(tt.patterns...)
			if err != nil {
				t.Fatal(err)
			}
			g := sp.NewSegmenter()
			for _, s := range tt.steps {
				got, err := g.Write(s.in)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, s.want) {
					t.Fatalf("Write(%q) = %q, want %q", s.in, got, s.want)
				}
			}
			got, err := g.Flush()
			if err != nil || !reflect.DeepEqual(got, tt.flush) {
				t.Fatalf("Flush() = %q, %v; want %q", got, err, tt.flush)
			}
		})
	}
	// The last case differs from the batch split, as documented.
	batch, _ := mustSplitter(`(ab+c|b)`).Split("abbc")
	if !reflect.DeepEqual(batch, []string{"abbc"}) {
		t.Fatalf("batch = %q", batch)
	}
}

func TestSegmenterReusableAfterFlush(t *testing.T) {
	g := DefaultSplitter().NewSegmenter()
	for _, text := range []string{"你好。再", "见！"} {
		if _, err := g.Write(text); err != nil {
			t.Fatal(err)
		}
		if _, err := g.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := g.Write("再见！明"); !reflect.DeepEqual(got, []string{"再见！"}) {
		t.Fatalf("Write = %q", got)
	}
	if got, _ := g.Flush(); !reflect.DeepEqual(got, []string{"明"}) {
		t.Fatalf("Flush = %q", got)
	}
}

// Splitters for which streaming must equal batch for every cut.
var exactSplitters = []*Splitter{
	DefaultSplitter(),
	mustSplitter(`([\n]+)`),
	mustSplitter(`\n+`),
	mustSplitter(`([。！？!?\n]+)`),
	mustSplitter("(\n\n+)", `([。！？!?]+)`),
}

func FuzzSegmenter(f *testing.F) {
	f.Add("你好。今天好天气！", []byte{1, 2, 3})
	f.Add("Hello there. How are you? Fine!  Ok...", []byte{0, 7, 7, 1})
	f.Add("!!!", []byte{0})
	f.Add("Dr. Lee, e.g. at 3.14 p.m. said: \"Go!\" 1. Ok… 好。Fine", []byte{0, 3, 1, 5, 2})
	f.Add("段一句一。段一句二。\n\n段二句一。", []byte{5, 4, 3, 2, 1})
	f.Add("a\nb\nc", []byte{0, 0})
	f.Add("  \n\n 。！ x", []byte{1, 1, 1, 1})
	// No sentence end: the default splitter's shortcut.
	f.Add("Reminder 1: time for a glass of water", []byte{3, 9})
	f.Add(" \u00a0 drink water\n", []byte{2})
	f.Add("\u3000\ufeff", []byte{1})
	f.Add("bad \xff byte", []byte{4})
	f.Fuzz(func(t *testing.T, text string, seed []byte) {
		for i, sp := range exactSplitters {
			want, err := sp.Split(text)
			if err != nil {
				t.Fatal(err)
			}
			g := sp.NewSegmenter()
			var got []string
			for _, piece := range cuts(text, seed) {
				segs, err := g.Write(piece)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, segs...)
			}
			rest, err := g.Flush()
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, rest...)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("splitter %d: streamed %q, batch %q", i, got, want)
			}
		}
	})
}
