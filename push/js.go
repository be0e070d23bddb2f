package push

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"
)

// The standard is written in JavaScript: "blank" means empty after
// String.prototype.trim, length limits count String.prototype.length, a
// check of a member is often its truthiness, and query values go through
// Number() or parseInt(). These give them their JavaScript meaning for every
// package; nothing else in amsg restates them.

// IsJSSpace reports whether r is WhiteSpace or LineTerminator in ECMAScript,
// the set String.prototype.trim removes and Number() ignores. It differs
// from unicode.IsSpace: U+FEFF is included and U+0085 is not.
func IsJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

// JSTrim is JavaScript's String.prototype.trim.
func JSTrim(s string) string { return strings.TrimFunc(s, IsJSSpace) }

// IsJSBlank reports whether s is empty after JSTrim: the standard's test of
// a required string.
func IsJSBlank(s string) bool { return JSTrim(s) == "" }

// JSLength is JavaScript's String.prototype.length: UTF-16 code units.
func JSLength(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// JSONKind returns the first byte of a JSON value: '{', '[', '"', 't', 'f',
// 'n', a digit or '-'; 0 for an absent (empty) value. It tells the JSON
// types apart the way the standard's typeof checks do, without validating.
func JSONKind(raw json.RawMessage) byte {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}

// MarshalNoEscape encodes v as JSON without HTML escaping and without a
// trailing newline, as JSON.stringify does: < > & stay as they are and cost
// the bytes a JavaScript producer would spend.
func MarshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// MustMarshalNoEscape is MarshalNoEscape for values that always encode:
// strings, plain structs and valid JSON elements.
func MustMarshalNoEscape(v any) json.RawMessage {
	raw, err := MarshalNoEscape(v)
	if err != nil {
		panic(err) // unreachable for the values callers pass
	}
	return raw
}

// CompactJSON returns raw without insignificant whitespace, or raw itself
// when it is not JSON.
func CompactJSON(raw []byte) []byte {
	var out bytes.Buffer
	if json.Compact(&out, raw) != nil {
		return raw
	}
	return out.Bytes()
}

// JSONString decodes a JSON string member; ok is false for any other value,
// absent included (typeof v === "string").
func JSONString(raw json.RawMessage) (s string, ok bool) {
	if JSONKind(raw) != '"' {
		return "", false
	}
	return s, json.Unmarshal(raw, &s) == nil
}

// JSTruthy is JavaScript truthiness of a JSON value: false for an absent
// value, null, false, 0 and "".
func JSTruthy(raw json.RawMessage) bool {
	switch k := JSONKind(raw); {
	case k == 0 || k == 'n' || k == 'f':
		return false
	case k == '"':
		s, _ := JSONString(raw)
		return s != ""
	case k == '-' || (k >= '0' && k <= '9'):
		f, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
		return err != nil || f != 0 // an out-of-range literal is ±Inf in JavaScript: truthy
	}
	return true
}

var jsDecimalLiteral = regexp.MustCompile(`^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$`)

// JSNumber is JavaScript's Number(s) for a string: surrounding whitespace
// ignored, "" is 0, decimal literals with an optional sign and exponent,
// Infinity, and unsigned 0x, 0o and 0b integers. ok is false where
// JavaScript gives NaN.
func JSNumber(s string) (n float64, ok bool) {
	s = JSTrim(s)
	switch {
	case s == "":
		return 0, true
	case s == "Infinity" || s == "+Infinity":
		return math.Inf(1), true
	case s == "-Infinity":
		return math.Inf(-1), true
	case len(s) > 2 && s[0] == '0' && radix(s[1]) > 0:
		base := radix(s[1])
		for _, c := range s[2:] {
			d := digitValue(c)
			if d >= base {
				return 0, false
			}
			n = n*float64(base) + float64(d) // past 2^53 precision is lost, as in JavaScript
		}
		return n, true
	case jsDecimalLiteral.MatchString(s):
		n, err := strconv.ParseFloat(s, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) { // out of range is ±Inf, as in JavaScript
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// radix is the base a 0x, 0o or 0b prefix letter names, 0 for others.
func radix(letter byte) int {
	switch letter | 0x20 {
	case 'x':
		return 16
	case 'o':
		return 8
	case 'b':
		return 2
	}
	return 0
}

// digitValue is the value of a hexadecimal digit, 16 for anything else.
func digitValue(c rune) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c|0x20 && c|0x20 <= 'f':
		return int(c|0x20-'a') + 10
	}
	return 16
}

// JSParseInt is JavaScript's parseInt(raw, 10): leading spaces, a sign and
// the longest run of digits; ok is false where it would give NaN.
func JSParseInt(raw string) (int, bool) {
	s := strings.TrimLeft(raw, " \t\n\r\v\f\u00a0\ufeff")
	sign := 1
	if s != "" && (s[0] == '+' || s[0] == '-') {
		if s[0] == '-' {
			sign = -1
		}
		s = s[1:]
	}
	end := 0
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	if end == 0 {
		return 0, false
	}
	n, err := strconv.Atoi(s[:end])
	if err != nil {
		return sign * math.MaxInt32, true // larger than any limit: capped
	}
	return sign * n, true
}
