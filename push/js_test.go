package push_test

import (
	"testing"

	"amsg/push"
)

func TestJavaScriptStrings(t *testing.T) {
	for _, c := range []struct {
		in      string
		trimmed string
		length  int
	}{
		{"", "", 0},
		{" \t\n\v\f\r", "", 6},
		{"\u00a0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000\ufeffx\ufeff", "x", 12},
		{"\u0085x", "\u0085x", 2},   // NEL is not JavaScript whitespace
		{"\u200bx", "\u200bx", 2},   // nor is a zero-width space
		{" 寿司🍣 ", "寿司🍣", 6},         // 🍣 is two UTF-16 code units
		{"a\u180eb", "a\u180eb", 3}, // U+180E stopped being a space in Unicode 6.3
	} {
		if got := push.JSTrim(c.in); got != c.trimmed {
			t.Errorf("JSTrim(%q) = %q, want %q", c.in, got, c.trimmed)
		}
		if got := push.IsJSBlank(c.in); got != (c.trimmed == "") {
			t.Errorf("IsJSBlank(%q) = %v", c.in, got)
		}
		if got := push.JSLength(c.in); got != c.length {
			t.Errorf("JSLength(%q) = %d, want %d", c.in, got, c.length)
		}
	}
}
