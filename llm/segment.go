package llm

import (
	"amsg/push"

	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// Split segments a whole text as the standard does, for example
// DefaultSplitter().Split("你好。今天好天气！") = ["你好。", "今天好天气！"].
//
// One pass of a pattern splits a chunk with JavaScript's
// chunk.split(pattern), so captured delimiters appear in the result, then
// walks it in pairs: every element at an even index whose trim is not empty
// becomes trim(element) + the element after it (or ""). A pass that yields
// nothing returns the chunk unchanged; a cascade applies each pattern to
// every chunk of the one before. Split never returns an empty list.
func (s *Splitter) Split(text string) ([]string, error) {
	if s == defaultSplitter && len(text) <= MaxSplitInput && utf8.ValidString(text) && !strings.ContainsAny(text, sentenceEnds) {
		// Every match of DefaultSplitPattern starts with one of
		// sentenceEnds, so such a text is one segment, as the pass below
		// would find it without running the regex (a fixed task's text,
		// split on every fire: issue 24).
		if t := push.JSTrim(text); t != "" {
			return []string{t}, nil
		}
		return []string{text}, nil
	}
	g := s.NewSegmenter()
	segs, err := g.Write(text)
	if err != nil {
		return nil, err
	}
	rest, err := g.Flush()
	if err != nil {
		return nil, err
	}
	return append(segs, rest...), nil
}

// NewSegmenter returns a Segmenter that splits text arriving in pieces.
func (s *Splitter) NewSegmenter() *Segmenter {
	g := &Segmenter{}
	for _, p := range s.passes {
		g.levels = append(g.levels, &level{pass: p, seg: g})
	}
	return g
}

// A Segmenter segments a streamed text: Write takes each piece as it
// arrives and returns the segments completed by it, Flush ends the text and
// returns the rest. Concatenating everything they return gives what Split
// returns for the whole text, whenever the first pattern's delimiters are
// recognisable as complete once one more character follows them.
//
// That is what "complete" means here: a match of the first pattern is final
// once at least one character follows it, and a segment is final once the
// match that ends it is final (for a pattern with one capture group, the
// match right after its text; for one without, the next match, since the
// walk glues the following element on). This is exact for patterns whose
// matches are runs of delimiter characters, like the default ([。！？!?]+),
// (\n+) or ([。！？!?\n]+): the character after a run cannot extend it. It may
// differ from Split for patterns whose match depends on more than one
// character after it (a longer lookahead) or where an earlier match needs
// more text (in (ab+c|b) on "abb", the lone "b" wins until "c" arrives).
// Later patterns of a cascade see a chunk of the first one only once that
// chunk is complete, so a cascade paragraph → sentence emits a paragraph's
// sentences when the paragraph ends.
//
// Pieces may be cut anywhere, even inside a UTF-8 sequence. A Segmenter is
// not safe for concurrent use. After an error every call returns it.
type Segmenter struct {
	levels  []*level
	partial []byte // an incomplete UTF-8 sequence at the end of the last piece
	size    int
	spent   time.Duration
	err     error
}

// Write adds a piece of text and returns the segments it completed.
func (g *Segmenter) Write(piece string) ([]string, error) {
	if g.err != nil {
		return nil, g.err
	}
	g.size += len(piece)
	if g.size > MaxSplitInput {
		g.err = fmt.Errorf("%w: more than %d bytes", ErrSplitInputTooLarge, MaxSplitInput)
		return nil, g.err
	}
	text := string(g.partial) + piece
	g.partial = g.partial[:0]
	if cut := incompleteSuffix(text); cut > 0 {
		g.partial = append(g.partial, text[len(text)-cut:]...)
		text = text[:len(text)-cut]
	}
	chunks, err := g.levels[0].feed(text, false)
	return g.finish(chunks, err)
}

// Flush ends the text and returns its remaining segments. The Segmenter is
// then ready for a new text.
func (g *Segmenter) Flush() ([]string, error) {
	if g.err != nil {
		return nil, g.err
	}
	text := string(g.partial) // an incomplete sequence at the very end stays as U+FFFD
	g.partial = g.partial[:0]
	chunks, err := g.levels[0].feed(text, true)
	g.size, g.spent = 0, 0
	return g.finish(chunks, err)
}

// Begun reports whether the text after the segments returned so far holds
// a character that is neither whitespace nor one that ends or closes a
// sentence in DefaultSplitPattern (。！？.!?… and closing quotes and
// brackets). With the default pattern such a character always ends up in a
// segment of its own, so a next segment has begun: the agent loop pushes a
// sentence as "more follow" only then.
func (g *Segmenter) Begun() bool {
	l := g.levels[0]
	for _, e := range l.elems {
		if startsSegment(e) {
			return true
		}
	}
	return startsSegment(string(l.text[l.p:])) || startsSegment(string(g.partial))
}

// startsSegment reports whether text holds a character that is neither
// whitespace nor a sentence end or closer.
func startsSegment(text string) bool {
	return strings.ContainsFunc(text, func(c rune) bool {
		return !push.IsJSSpace(c) && !strings.ContainsRune(sentenceEnds+sentenceCloserChars, c)
	})
}

// finish runs the first pattern's completed chunks through the rest of the
// cascade.
func (g *Segmenter) finish(chunks []string, err error) ([]string, error) {
	for _, l := range g.levels[1:] {
		if err != nil {
			break
		}
		var next []string
		for _, c := range chunks {
			var out []string
			if out, err = l.feed(c, true); err != nil {
				break
			}
			next = append(next, out...)
		}
		chunks = next
	}
	if err != nil {
		g.err = err
		return nil, err
	}
	return chunks, nil
}

// find runs one regex search within the time bounds.
func (g *Segmenter) find(p *splitPass, text []rune, from int) (*regexp2.Match, error) {
	if g.spent > splitBudget {
		return nil, fmt.Errorf("%w: over %v in total", ErrSplitTimeout, splitBudget)
	}
	start := time.Now()
	m, err := p.re.FindRunesMatchStartingAt(text, from)
	g.spent += time.Since(start)
	if err != nil {
		return nil, errors.Join(ErrSplitTimeout, err)
	}
	return m, nil
}

// level applies one pattern of the cascade to one chunk at a time.
type level struct {
	pass *splitPass
	seg  *Segmenter

	text    []rune   // the chunk so far, whole: ^ and lookbehind see all of it
	p       int      // start of the element after the last split
	q       int      // where the next search starts
	scanned int      // len(text) at the last search
	elems   []string // elements of the JavaScript split array not yet walked; elems[0] has an even index
	emitted bool     // the chunk has produced a segment
}

// feed adds text to the chunk and returns the chunks of this pass that are
// complete. With end set the chunk is complete and the level is reset.
func (l *level) feed(text string, end bool) ([]string, error) {
	l.text = append(l.text, []rune(text)...)
	// Searching restarts at q, so scanning after every tiny piece of a long
	// element would cost O(n²); wait until the element has grown by 1/16.
	grown := len(l.text) - l.scanned
	if end || grown*16 >= len(l.text)-l.p {
		if err := l.scan(end); err != nil {
			return nil, err
		}
	}
	if !end {
		return l.walk(), nil
	}
	l.elems = append(l.elems, string(l.text[l.p:]))
	out := l.walk()
	if len(l.elems) == 1 { // a last element at an even index has no partner
		if t := push.JSTrim(l.elems[0]); t != "" {
			out = append(out, t)
		}
	}
	if len(out) == 0 && !l.emitted {
		out = []string{string(l.text)}
	}
	*l = level{pass: l.pass, seg: l.seg, text: l.text[:0]}
	return out, nil
}

// scan performs JavaScript's split loop from q, turning every final match
// into elements: the text before it and its captures.
func (l *level) scan(end bool) error {
	l.scanned = len(l.text)
	for l.q < len(l.text) { // JavaScript never tries a match at the very end
		m, err := l.seg.find(l.pass, l.text, l.q)
		if err != nil {
			return err
		}
		if m == nil {
			return nil
		}
		start, stop := m.Index, m.Index+m.Length
		if start >= len(l.text) || (!end && stop >= len(l.text)) {
			return nil // none, or one that more text could still change
		}
		if stop == l.p { // an empty match where the element starts: no split
			l.q = start + 1
			continue
		}
		l.elems = append(l.elems, string(l.text[l.p:start]))
		l.elems = append(l.elems, l.pass.captures(m)...)
		l.p, l.q = stop, stop
	}
	return nil
}

// walk turns pairs of elements into chunks: trim(even) + odd, skipping pairs
// whose even element is blank.
func (l *level) walk() []string {
	var out []string
	for len(l.elems) >= 2 {
		if t := push.JSTrim(l.elems[0]); t != "" {
			out = append(out, t+l.elems[1])
		}
		l.elems = l.elems[2:]
	}
	if len(out) > 0 {
		l.emitted = true
	}
	return out
}

// incompleteSuffix returns the length of an incomplete UTF-8 sequence at the
// end of s, 0 when there is none.
func incompleteSuffix(s string) int {
	for n := 1; n < utf8.UTFMax && n <= len(s); n++ {
		c := s[len(s)-n]
		if c < utf8.RuneSelf {
			return 0
		}
		if utf8.RuneStart(c) {
			if utf8.FullRuneInString(s[len(s)-n:]) {
				return 0
			}
			return n
		}
	}
	return 0
}
