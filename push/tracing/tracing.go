// Package tracing is amsg's one seam to OpenTelemetry: spans for requests,
// claims, LLM calls, pushes and store writes, exported over OTLP/HTTP when
// the standard OTEL_EXPORTER_OTLP_* environment names an endpoint (Setup).
//
// Every other package calls it through a context.Context and never imports
// OpenTelemetry itself. Tracing is off unless Setup turned it on, and off it
// costs a load and a branch per call: Start returns the context it was
// given and a zero Span, whose methods return at once, so the delivery
// path allocates nothing for it (TestOffAllocatesNothing).
//
// A trace begins at a request (Serve) or a scheduled occurrence (Root); Start
// makes a span only inside one, so work outside any trace (housekeeping,
// heartbeats, a claim's own write) makes no spans of its own.
package tracing

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// tracer is the tracer while tracing is on, nil while it is off.
var tracer atomic.Pointer[trace.Tracer]

// w3c reads and writes the W3C traceparent and tracestate headers.
var w3c = propagation.TraceContext{}

// Enabled reports whether spans are being recorded: a caller about to
// compute a span's attribute may ask first.
func Enabled() bool { return tracer.Load() != nil }

// Span is one span, or nothing (the zero Span) when tracing is off or the
// work is outside any trace; every method of the zero Span does nothing.
type Span struct{ s trace.Span }

// Root starts a span that begins a trace unless ctx carries one already:
// a scheduled occurrence's. A zero start means now.
func Root(ctx context.Context, name string, start time.Time) (context.Context, Span) {
	return root(ctx, name, start, trace.SpanKindInternal)
}

// Serve starts the span of an incoming request, a server span that
// continues the trace the request's W3C traceparent (and tracestate) names,
// or begins one when it names none or is malformed.
func Serve(ctx context.Context, h http.Header, name string) (context.Context, Span) {
	if tracer.Load() == nil {
		return ctx, Span{}
	}
	return root(extract(ctx, h), name, time.Time{}, trace.SpanKindServer)
}

func root(ctx context.Context, name string, start time.Time, kind trace.SpanKind) (context.Context, Span) {
	t := tracer.Load()
	if t == nil {
		return ctx, Span{}
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(kind)}
	if !start.IsZero() {
		opts = append(opts, trace.WithTimestamp(start))
	}
	ctx, s := (*t).Start(ctx, name, opts...)
	return ctx, Span{s}
}

// Start starts a span inside the trace ctx carries, or returns ctx and the
// zero Span when it carries none that is recorded.
func Start(ctx context.Context, name string) (context.Context, Span) {
	return StartAt(ctx, name, time.Time{})
}

// StartAt is Start for a span that began at start (zero: now): work done
// before the trace it belongs to was opened, such as the claim that handed
// a scheduled occurrence over.
func StartAt(ctx context.Context, name string, start time.Time) (context.Context, Span) {
	t := tracer.Load()
	if t == nil || !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, Span{}
	}
	var ctxOut context.Context
	var s trace.Span
	if start.IsZero() {
		ctxOut, s = (*t).Start(ctx, name)
	} else {
		ctxOut, s = (*t).Start(ctx, name, trace.WithTimestamp(start))
	}
	return ctxOut, Span{s}
}

// Recording reports whether s records: attributes worth computing only for
// a trace can be skipped otherwise.
func (s Span) Recording() bool { return s.s != nil }

// End ends the span now.
func (s Span) End() {
	if s.s != nil {
		s.s.End()
	}
}

// EndAt ends the span at t.
func (s Span) EndAt(t time.Time) {
	if s.s != nil {
		s.s.End(trace.WithTimestamp(t))
	}
}

// Rename names the span anew: a request's span is named by its route,
// known only once the router has matched it.
func (s Span) Rename(name string) {
	if s.s != nil {
		s.s.SetName(name)
	}
}

// Fail marks the span failed with a short reason. The reason is exported:
// give a kind (timeout, status 502), never an error's text, which may hold
// an endpoint or a key.
func (s Span) Fail(reason string) {
	if s.s != nil {
		s.s.SetStatus(codes.Error, reason)
	}
}

// Str sets a string attribute.
func (s Span) Str(key, value string) {
	if s.s != nil {
		s.s.SetAttributes(attribute.String(key, value))
	}
}

// Int sets an integer attribute.
func (s Span) Int(key string, value int64) {
	if s.s != nil {
		s.s.SetAttributes(attribute.Int64(key, value))
	}
}

// Bool sets a boolean attribute.
func (s Span) Bool(key string, value bool) {
	if s.s != nil {
		s.s.SetAttributes(attribute.Bool(key, value))
	}
}

// extract returns ctx with the remote parent that h's traceparent names.
func extract(ctx context.Context, h http.Header) context.Context {
	if h.Get("Traceparent") == "" {
		return ctx
	}
	return w3c.Extract(ctx, propagation.HeaderCarrier(h))
}

// Inject writes the W3C traceparent (and tracestate) of ctx's span into h,
// for an outgoing request that continues the trace (a webhook). It writes
// nothing when tracing is off or ctx carries no span.
func Inject(ctx context.Context, h http.Header) {
	if tracer.Load() == nil {
		return
	}
	w3c.Inject(ctx, propagation.HeaderCarrier(h))
}

// Detached returns a context with ctx's span and nothing else: no deadline,
// no cancellation. It is for bookkeeping that must finish whatever happened
// to the work it records and still belongs to that work's trace. Off, it is
// context.Background().
func Detached(ctx context.Context) context.Context {
	if tracer.Load() == nil {
		return context.Background()
	}
	return trace.ContextWithSpan(context.Background(), trace.SpanFromContext(ctx))
}
