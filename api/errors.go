package api

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"unicode"
)

// Error is an API failure that carries the standard's error code. Handlers
// return it; writeError is the one place that turns an error into the
// envelope {"success":false,"error":{"code","message","details"?}}.
type Error struct {
	Status  int
	Code    string
	Message string
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

// newError returns an Error without details.
func newError(status int, code, message string) *Error {
	return &Error{Status: status, Code: code, Message: message}
}

// withDetails returns a copy of e carrying details, so shared error values
// are never mutated.
func (e *Error) withDetails(details any) *Error {
	c := *e
	c.Details = details
	return &c
}

// codeError returns an Error with its code's default message from
// errorTable.
func codeError(status int, code string) *Error {
	return newError(status, code, defaultText(code).ZH)
}

// Errors shared by every endpoint. Messages are the standard's, verbatim:
// writeError answers with them when the request prefers Chinese and with
// errorTable's English otherwise; clients branch on the code.
var (
	errNotFound           = newError(http.StatusNotFound, "NOT_FOUND", "Unknown route")
	errInternal           = newError(http.StatusInternalServerError, "INTERNAL_ERROR", "服务器内部错误")
	errInvalidClientToken = newError(http.StatusUnauthorized, "INVALID_CLIENT_TOKEN", "共享密钥无效或缺失")
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

// errorTexts indexes errorTable by code and Chinese text; defaultTexts
// holds each code's first row.
var errorTexts, defaultTexts = func() (map[[2]string]string, map[string]errorText) {
	byText, byCode := map[[2]string]string{}, map[string]errorText{}
	for _, t := range errorTable {
		byText[[2]string{t.Code, t.ZH}] = t.EN
		if _, ok := byCode[t.Code]; !ok {
			byCode[t.Code] = t
		}
	}
	return byText, byCode
}()

// defaultText is code's default row; a code missing from the table gets a
// generic text naming it.
func defaultText(code string) errorText {
	if t, ok := defaultTexts[code]; ok {
		return t
	}
	return errorText{Code: code, EN: "Request failed (" + code + ")", ZH: "请求失败（" + code + "）"}
}

// englishMessage is e's message in English: the table's row for its text,
// else the message itself when it has no Chinese in it (the agent loop's
// and the validators' own words), else the code's default with the
// details' reason or the fields they list.
func englishMessage(e *Error) string {
	if en, ok := errorTexts[[2]string{e.Code, e.Message}]; ok {
		return en
	}
	if e.Message != "" && !hasHan(e.Message) {
		return e.Message
	}
	msg := defaultText(e.Code).EN
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
