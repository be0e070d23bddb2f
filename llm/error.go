package llm

import (
	"errors"
	"strings"
)

// Kinds of LLM call failure; test them with errors.Is. Every failure is an
// *Error whose message is the standard's text.
var (
	ErrInvalidRequest   = errors.New("invalid LLM request")                        // e.g. maxTokens ≤ 0, messages not an array
	ErrStatus           = errors.New("LLM endpoint answered with an error status") // non-2xx; Error.Status has it
	ErrBadResponse      = errors.New("LLM response is not a chat completion")      // 2xx but not JSON, or no choices
	ErrMissingContent   = errors.New("LLM response has no content")                // RequireContent and blank content
	ErrResponseTooLarge = errors.New("LLM response exceeds the size limit")
	ErrTransport        = errors.New("LLM request failed") // network, timeout, cancellation; the cause is wrapped
)

// Error is a failed LLM call. Error() is the standard's text, which callers
// may show to users: it never contains the API key. Status is the HTTP
// status when the endpoint answered, 0 otherwise.
type Error struct {
	Status int
	// ProviderMessage and ProviderCode are what the endpoint's error body
	// said ({"error":{"message","code"}} and its common variants), bounded in
	// length and with the API key masked; empty when the body had none.
	ProviderMessage string
	ProviderCode    string

	kind  error
	msg   string
	cause error
}

func (e *Error) Error() string { return e.msg }

// Permanent reports whether the endpoint refused the request itself (400,
// 401, 402, 403, 404, 405, 413, 422): the same request will be refused
// again, and may be billed each time, so it must not be retried. Timeouts,
// conflicts, rate limits (408, 409, 425, 429), 5xx, network failures and a
// 2xx that is not an answer may pass on a retry.
func (e *Error) Permanent() bool {
	switch e.Status {
	case 400, 401, 402, 403, 404, 405, 413, 422:
		return true
	}
	return false
}

// MissingContent is the standard's failure for an answer without content;
// the agent reaches the same verdict on a streamed answer.
func MissingContent(status int) *Error {
	return &Error{kind: ErrMissingContent, Status: status, msg: "AI API error: response missing choices[0].message.content"}
}

// Unwrap exposes the kind (ErrStatus, …) and the cause (context.Canceled,
// context.DeadlineExceeded, a net error, …) to errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	errs := make([]error, 0, 2)
	if e.kind != nil {
		errs = append(errs, e.kind)
	}
	if e.cause != nil {
		errs = append(errs, e.cause)
	}
	return errs
}

// redact replaces every occurrence of secret in s. Providers echo keys back
// in error bodies ("Incorrect API key provided: sk-…").
func redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "[redacted]")
}
