package loop

import (
	"strings"
	"unicode/utf16"
)

// isJSSpace reports whether r is WhiteSpace or LineTerminator in ECMAScript,
// the set String.prototype.trim removes. It differs from unicode.IsSpace:
// U+FEFF is included and U+0085 is not.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

// jsTrim is JavaScript's String.prototype.trim. The standard trims with it
// everywhere (segments, reasoning, content), so "blank" means what it means
// in JavaScript.
func jsTrim(s string) string { return strings.TrimFunc(s, isJSSpace) }

// jsLength is JavaScript's String.prototype.length: UTF-16 code units. The
// standard's length limits are written in it.
func jsLength(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}
