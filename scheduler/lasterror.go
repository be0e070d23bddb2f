package scheduler

import (
	"encoding/json"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"amsg/push"
)

// The standard's last_error sanitizer: what reaches the plaintext column
// (and clients through GET /message) must not carry credentials.
var (
	whitespaceRun = regexp.MustCompile(`\s+`)
	bearerToken   = regexp.MustCompile(`(?i)\bBearer\s+[A-Za-z0-9._~+/=-]{8,}`)
	prefixedKey   = regexp.MustCompile(`\b[A-Za-z]{2,6}-[A-Za-z0-9_-]{16,}`)
	longToken     = regexp.MustCompile(`[A-Za-z0-9+/_.-]{48,}`)
)

// maxReasonRunes bounds a sanitized reason.
const maxReasonRunes = 500

// Sanitize makes an error text fit for the last_error column: whitespace
// collapsed, bearer tokens, prefixed API keys (sk-…) and any run of 48 or
// more token characters replaced by [redacted], and the result cut to 500
// characters.
func Sanitize(reason string) string {
	s := strings.TrimSpace(whitespaceRun.ReplaceAllString(strings.ToValidUTF8(reason, "\uFFFD"), " "))
	s = bearerToken.ReplaceAllString(s, "Bearer [redacted]")
	s = prefixedKey.ReplaceAllString(s, "[redacted]")
	s = longToken.ReplaceAllString(s, "[redacted]")
	if utf8.RuneCountInString(s) > maxReasonRunes {
		runes := []rune(s)
		s = string(runes[:maxReasonRunes-3]) + "…"
	}
	return s
}

// lastError is the JSON of the last_error column. Code is amsg's name,
// ErrorCode upstream-next's, with the same value; PushStatus and LLMStatus
// are what the push service or the LLM answered, when one did.
type lastError struct {
	At           string `json:"at"`
	Occurrence   string `json:"occurrence"`
	Reason       string `json:"reason"`
	Code         string `json:"code,omitempty"`
	ErrorCode    string `json:"errorCode,omitempty"`
	Permanent    bool   `json:"permanent"`
	PushStatus   int    `json:"pushStatus,omitempty"`
	LLMStatus    int    `json:"llmStatus,omitempty"`
	SkippedCount int    `json:"skippedCount,omitempty"`
	NextSendAt   string `json:"nextSendAt,omitempty"`
}

// judge records a failure's verdict.
func (e *lastError) judge(v verdict) {
	e.Code, e.ErrorCode, e.Permanent = v.code, v.code, v.permanent
	e.PushStatus, e.LLMStatus = v.pushStatus, v.llmStatus
}

func (e lastError) json() json.RawMessage {
	e.Reason = Sanitize(e.Reason)
	b, _ := json.Marshal(e) // plain strings and numbers: cannot fail
	return b
}

func newLastError(now, occurrence time.Time, reason string) lastError {
	return lastError{At: push.FormatTimestamp(now), Occurrence: push.FormatTimestamp(occurrence), Reason: reason}
}
