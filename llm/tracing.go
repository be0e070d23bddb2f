package llm

import "errors"

// traceCall ends a call's span (push/tracing) with what the OpenTelemetry
// conventions for generative AI name: the model, the endpoint's host, the
// tokens in and out, and whether the answer streamed; a failed call is
// marked with its kind only, never the endpoint or the key.
func traceCall(rec *callRecord, resp *Response, err error) {
	span := rec.span
	if !span.Recording() {
		return
	}
	defer span.End()
	span.Str("gen_ai.operation.name", "chat")
	span.Str("gen_ai.request.model", rec.model)
	span.Str("server.address", hostOf(rec.endpoint))
	span.Bool("amsg.llm.stream", rec.stream)
	if rec.status != 0 {
		span.Int("http.response.status_code", int64(rec.status))
	}
	if err != nil {
		span.Fail(errorKind(err))
		return
	}
	span.Int("gen_ai.usage.input_tokens", resp.Usage.InputTokens)
	span.Int("gen_ai.usage.output_tokens", resp.Usage.OutputTokens)
}

// errorKind names a failed call's kind (ErrTimeout's text, …) without its
// details, for the log and the trace.
func errorKind(err error) string {
	if e := (*Error)(nil); errors.As(err, &e) && e.kind != nil {
		return e.kind.Error()
	}
	return "callback"
}
