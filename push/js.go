package push

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf16"
)

// The standard is written in JavaScript: "blank" means empty after
// String.prototype.trim, and length limits count String.prototype.length.
// These give the two their JavaScript meaning for every package.

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
