package api

import (
	"errors"
	"net/http"
)

// Error is an API failure that carries the standard's error code. Handlers
// return it; writeError is the one place that turns an error into the
// envelope {"success":false,"error":{"code","message","details"?}}.
type Error struct {
	Status  int
	Code    string
	Message string
	Details any
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

// Errors shared by every endpoint. Messages are the standard's, verbatim:
// clients show them, and branch on the code.
var (
	errNotFound           = newError(http.StatusNotFound, "NOT_FOUND", "Unknown route")
	errInternal           = newError(http.StatusInternalServerError, "INTERNAL_ERROR", "服务器内部错误")
	errInvalidClientToken = newError(http.StatusUnauthorized, "INVALID_CLIENT_TOKEN", "共享密钥无效或缺失")
)

type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Details any    `json:"details,omitempty"`
}

// writeError writes err as the error envelope. Anything that is not an
// *Error is an internal failure: it is logged and the client sees only
// INTERNAL_ERROR.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var apiErr *Error
	if !errors.As(err, &apiErr) {
		s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		apiErr = errInternal
	} else if apiErr.Status >= 500 {
		s.log.WarnContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "code", apiErr.Code, "err", apiErr.Message)
	}
	writeJSON(w, apiErr.Status, struct {
		Success bool      `json:"success"`
		Error   errorBody `json:"error"`
	}{false, errorBody{apiErr.Code, apiErr.Message, apiErr.Details}})
}
