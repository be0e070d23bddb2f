package push_test

import (
	"math"
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

func TestJSNumber(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"", 0, true}, {" \t\u00a0\ufeff", 0, true}, {"12", 12, true}, {"+12", 12, true}, {"-12", -12, true},
		{"1.", 1, true}, {".5", 0.5, true}, {"1e3", 1000, true}, {"1E-2", 0.01, true}, {"1e400", math.Inf(1), true},
		{"-1e400", math.Inf(-1), true}, {"1e-400", 0, true}, {"Infinity", math.Inf(1), true}, {"-Infinity", math.Inf(-1), true},
		{"0x1F", 31, true}, {"0o17", 15, true}, {"0B101", 5, true}, {"007", 7, true},
		{"-0x10", 0, false}, {"0x", 0, false}, {"0xg", 0, false}, {"0b2", 0, false}, {"infinity", 0, false}, {"inf", 0, false},
		{"NaN", 0, false}, {"1_000", 0, false}, {"1e", 0, false}, {".", 0, false}, {"+-1", 0, false}, {"0x1p3", 0, false}, {"١٢", 0, false},
	} {
		got, ok := push.JSNumber(c.in)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("JSNumber(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}
