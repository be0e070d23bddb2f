package scheduler

import (
	"errors"

	"amsg/llm"
	"amsg/push/errcode"
)

// The failures a delivery tells apart (see failure); any other error is an
// ordinary failure, retried with backoff. Their texts, which a task's
// lastError keeps, come from the error table: a user without a push
// subscription is the code with the standard's reason.
var (
	errSubscriptionMissing error = textError(errcode.SubscriptionMissing.Code() + ": " + errcode.SubscriptionMissing.Chinese())
	errPayloadTooLarge     error = textError(errcode.PushPayloadTooLarge.Code())
	errPushSendFailed      error = textError(errcode.PushSendFailed.English())
)

// textError is an error whose text is the standard's wording, capitals
// included.
type textError string

func (e textError) Error() string { return string(e) }

// unreadableError is a task payload that does not decrypt or parse: a
// permanent failure without a code of its own, whose text is its cause's.
type unreadableError struct{ error }

func (e unreadableError) Unwrap() error { return e.error }

// pushStatusError is a push failure with the status the push service
// answered (0 when none answered).
type pushStatusError struct {
	status int
	error
}

func (e pushStatusError) Unwrap() error { return e.error }

// verdict is what a failed delivery means: the standard's code (a push no
// device took is PUSH_SEND_FAILED and a failed LLM call LLM_CALL_FAILED, as
// on the instant path; any other failure PROCESSING_ERROR), whether it
// is permanent, so not retried (a one-off task fails, a recurring one skips
// the occurrence), whether the LLM failed (generation, bounded by
// MaxGenerationRetries) rather than delivery, and what the push service or
// the LLM answered.
type verdict struct {
	code         string
	permanent    bool
	generation   bool
	pushStatus   int
	llmStatus    int
	providerCode string
}

// failure judges a failed delivery. An LLM that refuses the request (400,
// 401, 402, 403, 404, 405, 413, 422) will refuse it again, and each try
// may be billed: that is permanent. Its other failures (408, 409, 425,
// 429, 5xx, the network, a 200 that is not an answer) are retried.
func failure(err error) verdict {
	var v verdict
	var ps pushStatusError
	if errors.As(err, &ps) {
		v.pushStatus = ps.status
	}
	var le *llm.Error
	switch {
	case errors.Is(err, errSubscriptionMissing):
		v.code, v.permanent = errcode.SubscriptionMissing.Code(), true
	case errors.Is(err, errPayloadTooLarge):
		v.code, v.permanent = errcode.PushPayloadTooLarge.Code(), true
	case errors.Is(err, errPushSendFailed):
		v.code = errcode.PushSendFailed.Code()
	case errors.Is(err, errCredentialMissing):
		v.code = errcode.CredentialMissing.Code()
	case errors.As(err, &le):
		v.code, v.generation, v.permanent = errcode.LLMCallFailed.Code(), true, le.Permanent()
		v.llmStatus, v.providerCode = le.Status, le.ProviderCode
	case errors.As(err, new(unreadableError)):
		v.code, v.permanent = errcode.ProcessingError.Code(), true
	default:
		v.code = errcode.ProcessingError.Code()
	}
	return v
}
