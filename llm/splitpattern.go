package llm

import (
	"amsg/push"
	"amsg/push/errcode"

	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/dlclark/regexp2"
)

// StandardSplitPattern is the standard's sentence split: runs of 。！？!? end
// a sentence, the ASCII period never does. amsg's default is
// DefaultSplitPattern.
const StandardSplitPattern = "([。！？!?]+)"

// DefaultSplitPattern is amsg's sentence split when a request gives no
// splitPattern, a deviation from the standard's StandardSplitPattern so that
// Latin-script replies stream sentence by sentence too:
//   - a run starting with 。！？ ends a sentence wherever it is, as the
//     standard's pattern does for CJK text;
//   - a run starting with . ! ? … ends one only when whitespace, the end of
//     the text or a CJK character follows (closing quotes and brackets
//     stay with it), so decimals (3.14), URLs (example.com/a?b=1) and
//     dotted words (Node.js) never split;
//   - a period not after an abbreviation: a dotted one (e.g., U.S.), a title or
//     word from a short list (Dr., Mr., vs., et al.), a lone capital
//     initial (J. Smith, but not "I."), or a list number at a line's start
//     ("1. ", "12. ").
//
// Its matches are final once one character follows them, as Segmenter
// needs: the lookahead reads one character past the run and its closers.
const DefaultSplitPattern = `((?:[。！？]|` + latinSentenceEnd + `)[` + sentenceEnds + `]*[` + sentenceClosers + `]*)`

const (
	sentenceEnds    = `。！？.!?…`
	sentenceClosers = `"'”’)\]」』）`
	// sentenceCloserChars are sentenceClosers' characters, unescaped.
	sentenceCloserChars = `"'”’)]」』）`
	cjkChars            = `\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff01-\uff5e`
	abbreviations       = `Mr|Mrs|Ms|Dr|Prof|Sr|Jr|St|Mt|vs|al|cf|approx|Inc|Ltd|Corp|Fig|Vol|Gen|Col|Capt|Lt|Sgt|Rev|Hon|` +
		`Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec`
	// latinSentenceEnd is the first character of a Latin run that ends a
	// sentence: ! ? … or a period after no abbreviation.
	latinSentenceEnd = `(?:[!?…]|` +
		`(?<![A-Za-z]\.[A-Za-z])` + // e.g. i.e. U.S. p.m.
		`(?<!(?:^|[^A-Za-z])(?:` + abbreviations + `|[A-HJ-Z]))` +
		`(?<!(?:^|\n)[ \t]*\d{1,3})` + // a numbered list item
		`\.)(?=[` + sentenceEnds + `]*[` + sentenceClosers + `]*(?:\s|$|[` + cjkChars + `]))`
)

// splitPattern limits from the standard (a cascade of at most 10 patterns of
// at most 200 UTF-16 code units each).
const (
	MaxSplitPatterns      = 10
	MaxSplitPatternLength = 200
)

// Bounds that keep a hostile pattern from holding a goroutine: one regex
// match may run for splitMatchTimeout, all matching for one text for
// splitBudget, and a text may be at most MaxSplitInput bytes.
const (
	MaxSplitInput     = 1 << 20
	splitMatchTimeout = 250 * time.Millisecond
	splitBudget       = 2 * time.Second
)

var (
	// ErrInvalidSplitPattern marks a splitPattern the standard rejects; the
	// error's text is the standard's message.
	ErrInvalidSplitPattern = errors.New("invalid splitPattern")
	// ErrSplitTimeout means the patterns could not segment the text within
	// the time bounds; ErrSplitInputTooLarge that the text exceeds
	// MaxSplitInput. Callers send the text as one segment instead.
	ErrSplitTimeout       = errors.New("splitPattern matching timed out")
	ErrSplitInputTooLarge = errors.New("text too large to segment")
)

// A Splitter segments text the way the standard does with a splitPattern
// cascade: each pattern is an ECMAScript regular expression (no flags)
// applied with JavaScript String.prototype.split semantics, captured
// delimiters glued to the text before them. It is safe for concurrent use.
type Splitter struct {
	passes []*splitPass
}

// splitPass is one compiled pattern of a cascade.
type splitPass struct {
	re *regexp2.Regexp
	// groups lists the capture groups in JavaScript order (by position of
	// the opening parenthesis): a name, or "" for an unnamed group.
	// regexp2 numbers named groups after unnamed ones.
	groups []string
}

// defaultSplitter is compiled without the length limit of a request's
// patterns, which the default exceeds.
var defaultSplitter = func() *Splitter {
	pass, err := compileSplitPass(DefaultSplitPattern)
	if err != nil {
		panic(err)
	}
	return &Splitter{passes: []*splitPass{pass}}
}()

// DefaultSplitter returns the Splitter of DefaultSplitPattern.
func DefaultSplitter() *Splitter { return defaultSplitter }

// NewSplitter compiles a cascade of patterns; none means DefaultSplitPattern.
// The limits of ValidateSplitPattern apply.
func NewSplitter(patterns ...string) (*Splitter, error) {
	if len(patterns) == 0 {
		return DefaultSplitter(), nil
	}
	if len(patterns) > MaxSplitPatterns {
		return nil, splitPatternError(errcode.SplitPatternTooMany.With(MaxSplitPatterns))
	}
	s := &Splitter{passes: make([]*splitPass, len(patterns))}
	for i, p := range patterns {
		label := "splitPattern"
		if len(patterns) > 1 {
			label = fmt.Sprintf("splitPattern[%d]", i)
		}
		var err error
		if s.passes[i], err = compileSplitItem(label, p); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// ParseSplitPattern reads a splitPattern request field (raw JSON: absent,
// null, a string or an array of strings) and compiles it. Absent, null and []
// mean the default. Items are checked in order, each for type, length and
// syntax, and errors carry the standard's messages.
func ParseSplitPattern(raw json.RawMessage) (*Splitter, error) {
	switch push.JSONKind(raw) {
	case 0, 'n':
		return DefaultSplitter(), nil
	case '"':
		s, _ := push.JSONString(raw)
		return NewSplitter(s)
	case '[':
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, splitPatternError(errcode.SplitPatternNotString.With("splitPattern"))
		}
		if len(items) == 0 {
			return DefaultSplitter(), nil
		}
		if len(items) > MaxSplitPatterns {
			return nil, splitPatternError(errcode.SplitPatternTooMany.With(MaxSplitPatterns))
		}
		s := &Splitter{passes: make([]*splitPass, len(items))}
		for i, item := range items {
			label := fmt.Sprintf("splitPattern[%d]", i)
			p, ok := push.JSONString(item)
			if !ok {
				return nil, splitPatternError(errcode.SplitPatternNotString.With(label))
			}
			var err error
			if s.passes[i], err = compileSplitItem(label, p); err != nil {
				return nil, err
			}
		}
		return s, nil
	default:
		return nil, splitPatternError(errcode.SplitPatternNotString.With("splitPattern"))
	}
}

// ValidateSplitPattern checks a splitPattern request field with the
// standard's rules (amsg-server validateSplitPattern): absent, null and []
// are valid; otherwise a string or an array of at most 10 strings, each at
// most 200 characters and a valid ECMAScript regular expression. The error's
// text is the standard's message (e.g. "splitPattern[1] 不是有效正则表达式").
func ValidateSplitPattern(raw json.RawMessage) error {
	_, err := ParseSplitPattern(raw)
	return err
}

func compileSplitItem(label, pattern string) (*splitPass, error) {
	if push.JSLength(pattern) > MaxSplitPatternLength {
		return nil, splitPatternError(errcode.SplitPatternTooLong.With(label, MaxSplitPatternLength))
	}
	pass, err := compileSplitPass(pattern)
	if err != nil {
		return nil, &splitError{msg: errcode.SplitPatternNotRegexp.With(label).Chinese(), cause: err}
	}
	return pass, nil
}

type splitError struct {
	msg   string
	cause error
}

func (e *splitError) Error() string { return e.msg }

func (e *splitError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrInvalidSplitPattern}
	}
	return []error{ErrInvalidSplitPattern, e.cause}
}

// splitPatternError is m as an error whose text is the standard's Chinese.
func splitPatternError(m *errcode.Message) error { return &splitError{msg: m.Chinese()} }

func compileSplitPass(pattern string) (*splitPass, error) {
	translated, groups, err := translateJSPattern(pattern)
	if err != nil {
		return nil, err
	}
	re, err := regexp2.Compile(translated, regexp2.ECMAScript)
	if err != nil {
		return nil, err
	}
	if len(re.GetGroupNumbers())-1 != len(groups) {
		return nil, fmt.Errorf("pattern %q: cannot map capture groups", pattern)
	}
	re.MatchTimeout = splitMatchTimeout
	return &splitPass{re: re, groups: groups}, nil
}

// captures returns the texts of m's capture groups in JavaScript order. A
// group that did not participate is "": JavaScript yields undefined there and
// upstream then crashes on it.
func (p *splitPass) captures(m *regexp2.Match) []string {
	out := make([]string, len(p.groups))
	unnamed := 0
	for i, name := range p.groups {
		var g *regexp2.Group
		if name == "" {
			unnamed++
			g = m.GroupByNumber(unnamed)
		} else {
			g = m.GroupByName(name)
		}
		if g != nil && len(g.Captures) > 0 {
			out[i] = g.String()
		}
	}
	return out
}

// translateJSPattern prepares an ECMAScript (non-Unicode, Annex B) pattern
// for regexp2's ECMAScript mode, which accepts a few .NET constructs that
// JavaScript does not and reads a few escapes differently:
//   - groups other than (…), (?:…), (?=…), (?!…), (?<=…), (?<!…) and
//     (?<name>…) are syntax errors, as are duplicate group names and a
//     quantifier after ^, $, \b or \B;
//   - \a \e \A \Z \z \G \p \P, and \x without two hex digits, are identity
//     escapes (the letter itself), inside classes too;
//   - . excludes U+2028 and U+2029 as well as \n and \r.
//
// It returns the translated pattern and the capture groups in order.
func translateJSPattern(p string) (string, []string, error) {
	t := &jsTranslator{rs: []rune(p), seen: map[string]bool{}}
	afterAssertion := false
	for i := 0; i < len(t.rs); {
		c := t.rs[i]
		if afterAssertion && isQuantifierAt(t.rs, i) {
			return "", nil, errors.New("nothing to repeat")
		}
		afterAssertion = false
		switch c {
		case '\\':
			afterAssertion = i+1 < len(t.rs) && (t.rs[i+1] == 'b' || t.rs[i+1] == 'B')
			i = t.escape(i)
		case '[':
			i = t.class(i)
		case '(':
			if err := t.group(i); err != nil {
				return "", nil, err
			}
			i++
		case '.':
			t.b.WriteString(`[^\n\r\u2028\u2029]`)
			i++
		case '^', '$':
			afterAssertion = true
			t.b.WriteRune(c)
			i++
		default:
			t.b.WriteRune(c)
			i++
		}
	}
	return t.b.String(), t.groups, nil
}

// jsTranslator is translateJSPattern's state: the pattern, the output and
// the capture groups met so far.
type jsTranslator struct {
	rs     []rune
	b      strings.Builder
	groups []string
	seen   map[string]bool // group names
}

func (t *jsTranslator) isHex(i int) bool {
	return i < len(t.rs) && unicode.Is(unicode.ASCII_Hex_Digit, t.rs[i])
}

// escape writes the escape sequence at rs[i] ('\\') and returns the index
// after it.
func (t *jsTranslator) escape(i int) int {
	if i+1 >= len(t.rs) {
		t.b.WriteRune('\\')
		return i + 1
	}
	c := t.rs[i+1]
	switch {
	case strings.ContainsRune("aeAZzGpP", c):
		t.b.WriteRune(c)
	case c == 'x' && !(t.isHex(i+2) && t.isHex(i+3)):
		t.b.WriteRune('x')
	default:
		t.b.WriteRune('\\')
		t.b.WriteRune(c)
	}
	return i + 2
}

// class writes the character class at rs[i] ('[') and returns the index
// after it. A class ends at the first unescaped ']', even right after '['
// or '[^' ("[]" matches nothing, "[^]" anything).
func (t *jsTranslator) class(i int) int {
	t.b.WriteRune('[')
	i++
	if i < len(t.rs) && t.rs[i] == '^' {
		t.b.WriteRune('^')
		i++
	}
	for i < len(t.rs) && t.rs[i] != ']' {
		if t.rs[i] == '\\' {
			i = t.escape(i)
			continue
		}
		t.b.WriteRune(t.rs[i])
		i++
	}
	if i < len(t.rs) {
		t.b.WriteRune(']')
		i++
	}
	return i
}

// group checks the group opening at rs[i] ('('), records a capture, and
// writes the '('.
func (t *jsTranslator) group(i int) error {
	rest := string(t.rs[i+1:])
	switch {
	case !strings.HasPrefix(rest, "?"):
		t.groups = append(t.groups, "")
	case strings.HasPrefix(rest, "?:"), strings.HasPrefix(rest, "?="), strings.HasPrefix(rest, "?!"),
		strings.HasPrefix(rest, "?<="), strings.HasPrefix(rest, "?<!"):
	case strings.HasPrefix(rest, "?<"):
		end := strings.IndexByte(rest, '>')
		if end < 0 {
			return errors.New("invalid group name")
		}
		name := rest[2:end]
		if !isJSIdentifier(name) || t.seen[name] {
			return fmt.Errorf("invalid or duplicate group name %q", name)
		}
		t.seen[name] = true
		t.groups = append(t.groups, name)
	default:
		return errors.New("invalid group")
	}
	t.b.WriteRune('(')
	return nil
}

// isQuantifierAt reports whether rs[i:] starts with a quantifier: * + ? or a
// well-formed {n}, {n,} or {n,m} (anything else with '{' is a literal in
// Annex B syntax).
func isQuantifierAt(rs []rune, i int) bool {
	switch rs[i] {
	case '*', '+', '?':
		return true
	case '{':
		j, digits := i+1, 0
		for ; j < len(rs) && rs[j] >= '0' && rs[j] <= '9'; j++ {
			digits++
		}
		if digits == 0 || j >= len(rs) {
			return false
		}
		if rs[j] == ',' {
			for j++; j < len(rs) && rs[j] >= '0' && rs[j] <= '9'; j++ {
			}
		}
		return j < len(rs) && rs[j] == '}'
	}
	return false
}

func isJSIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		ok := r == '$' || r == '_' || unicode.IsLetter(r) || unicode.Is(unicode.Nl, r)
		if i > 0 {
			ok = ok || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r) ||
				unicode.Is(unicode.Pc, r) || r == 0x200C || r == 0x200D
		}
		if !ok {
			return false
		}
	}
	return true
}
