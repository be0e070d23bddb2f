package api

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"unicode"

	"amsg/push/errcode"
)

// Error is an API failure that carries the standard's error code. Handlers
// return it, made from a message of the table (push/errcode) by fail;
// writeError is the one place that turns an error into the envelope
// {"success":false,"error":{"code","message","details"?}}.
type Error struct {
	Status int
	Code   string
	// Message is the standard's Chinese text, which a request preferring
	// zh gets.
	Message string
	// english is the English text; "" says the code's General English,
	// followed by the reason or the fields Details names.
	english string
	Details any
	// Cause is what a push service or an LLM answered when the request
	// failed because of it.
	Cause Cause
}

// Cause is upstream-next's account of a failure's origin, written beside
// code and message: pushStatus (a push service's status), llmStatus and
// providerCode (an LLM's status and the code of its error body, which the
// LLM client leaves out for a caller-chosen endpoint).
type Cause struct {
	PushStatus   int    `json:"pushStatus,omitempty"`
	LLMStatus    int    `json:"llmStatus,omitempty"`
	ProviderCode string `json:"providerCode,omitempty"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// fail is the answer with message m, in its code's status.
func fail(m *errcode.Message) *Error {
	return &Error{Status: m.Status(), Code: m.Code(), Message: m.Chinese(), english: m.English()}
}

// withDetails returns a copy of e carrying details, so shared error values
// are never mutated.
func (e *Error) withDetails(details any) *Error {
	c := *e
	c.Details = details
	return &c
}

// Errors shared by every endpoint.
var (
	errNotFound           = fail(errcode.NotFound)
	errInternal           = fail(errcode.Internal)
	errInvalidClientToken = fail(errcode.InvalidClientToken)
)

type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Details any    `json:"details,omitempty"`
	Cause
}

// writeError writes err as the error envelope. Anything that is not an
// *Error is an internal failure: it is logged and the client sees only
// INTERNAL_ERROR. The message is English unless the request's
// Accept-Language prefers Chinese.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var apiErr *Error
	if !errors.As(err, &apiErr) {
		s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		apiErr = errInternal
	} else if apiErr.Status >= 500 {
		s.log.WarnContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "code", apiErr.Code, "err", apiErr.Message)
	}
	message := apiErr.Message
	if !prefersChinese(r.Header.Get("Accept-Language")) {
		message = englishMessage(apiErr)
	}
	writeJSON(w, apiErr.Status, struct {
		Success bool      `json:"success"`
		Error   errorBody `json:"error"`
	}{false, errorBody{apiErr.Code, message, apiErr.Details, apiErr.Cause}})
}

// englishMessage is e's message in English: its own, else its code's
// General English with the details' reason or the fields they list.
func englishMessage(e *Error) string {
	if e.english != "" {
		return e.english
	}
	general, ok := errcode.Lookup(e.Code)
	if !ok {
		return e.Message
	}
	msg := general.English()
	if d, ok := e.Details.(map[string]any); ok {
		if reason, ok := d["reason"].(string); ok && reason != "" && !hasHan(reason) {
			return msg + ": " + reason
		}
		for _, key := range []string{"invalidFields", "missingFields"} {
			if names, ok := d[key].([]string); ok && len(names) > 0 {
				return msg + ": " + strings.Join(names, ", ")
			}
		}
	}
	return msg
}

func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

// maxLanguageRanges bounds how much of an Accept-Language header is read.
const maxLanguageRanges = 32

// prefersChinese reports whether an Accept-Language header's preferred
// language range (the highest q, the first among equals) is zh or a zh-*
// subtag. Malformed ranges are skipped.
func prefersChinese(header string) bool {
	best, bestQ := "", 0.0
	i := 0
	for part := range strings.SplitSeq(header, ",") {
		if i++; i > maxLanguageRanges {
			break
		}
		tag, params, _ := strings.Cut(part, ";")
		tag = strings.TrimSpace(tag)
		if tag == "" {
			continue
		}
		q := 1.0
		if k, v, ok := strings.Cut(strings.TrimSpace(params), "="); ok && strings.TrimSpace(k) == "q" {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || f < 0 || f > 1 {
				continue
			}
			q = f
		}
		if q > bestQ {
			best, bestQ = tag, q
		}
	}
	best = strings.ToLower(best)
	return best == "zh" || strings.HasPrefix(best, "zh-")
}
