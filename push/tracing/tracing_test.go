package tracing

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// record turns tracing on for the test, into memory.
func record(t *testing.T) *tracetest.SpanRecorder {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	Use(provider)
	t.Cleanup(func() {
		Use(nil)
		_ = provider.Shutdown(context.Background())
	})
	return rec
}

// span is what a caller on the delivery path does with a span.
func span(ctx context.Context) {
	ctx, sp := Start(ctx, "push.send")
	sp.Str("server.address", "push.example")
	sp.Int("http.response.status_code", 201)
	sp.Bool("amsg.push.chunked", false)
	sp.Fail("status 500")
	sp.End()
	_ = Detached(ctx)
}

func TestOffAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	h := http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}
	allocs := testing.AllocsPerRun(100, func() {
		rctx, root := Serve(ctx, h, "GET /x")
		span(rctx)
		Inject(rctx, h)
		root.End()
	})
	if allocs != 0 {
		t.Fatalf("tracing off allocates %v times per request", allocs)
	}
	if Enabled() {
		t.Fatal("tracing is on without Setup")
	}
}

func TestStartMakesSpansOnlyInsideATrace(t *testing.T) {
	rec := record(t)
	ctx, sp := Start(context.Background(), "store.write")
	if sp.Recording() || ctx != context.Background() {
		t.Fatal("Start outside any trace made a span")
	}
	rctx, root := Root(context.Background(), "occurrence", time.Time{})
	claimed := time.Now().Add(-time.Second)
	_, claim := StartAt(rctx, "claim", claimed)
	claim.EndAt(claimed.Add(time.Millisecond))
	cctx, child := Start(rctx, "llm.call")
	_, grandchild := Start(Detached(cctx), "store.write")
	grandchild.End()
	child.Int("gen_ai.usage.input_tokens", 12)
	child.End()
	root.End()

	ended := rec.Ended()
	if len(ended) != 4 {
		t.Fatalf("%d spans ended, want 4", len(ended))
	}
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range ended {
		byName[s.Name()] = s
	}
	traceID := byName["occurrence"].SpanContext().TraceID()
	for child, parent := range map[string]string{"claim": "occurrence", "llm.call": "occurrence", "store.write": "llm.call"} {
		s := byName[child]
		if s.SpanContext().TraceID() != traceID || s.Parent().SpanID() != byName[parent].SpanContext().SpanID() {
			t.Errorf("%s is not a child of %s in one trace", child, parent)
		}
	}
	if !byName["claim"].StartTime().Equal(claimed) {
		t.Errorf("claim started at %v, want %v", byName["claim"].StartTime(), claimed)
	}
}

func TestServeContinuesTheCallersTraceAndInjectPassesItOn(t *testing.T) {
	rec := record(t)
	in := http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}
	ctx, root := Serve(context.Background(), in, "POST /api/v1/instant")
	out := http.Header{}
	Inject(ctx, out)
	root.End()

	s := rec.Ended()[0]
	if got := s.SpanContext().TraceID().String(); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("trace id %s, want the caller's", got)
	}
	if got := s.Parent().SpanID().String(); got != "00f067aa0ba902b7" || !s.Parent().IsRemote() {
		t.Errorf("parent %s, want the caller's remote span", got)
	}
	want := "00-4bf92f3577b34da6a3ce929d0e0e4736-" + s.SpanContext().SpanID().String() + "-01"
	if got := out.Get("Traceparent"); got != want {
		t.Errorf("injected traceparent %q, want %q", got, want)
	}
}

func TestServeIgnoresAMalformedTraceparent(t *testing.T) {
	rec := record(t)
	for _, tp := range []string{"garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", strings.Repeat("0", 4096)} {
		_, root := Serve(context.Background(), http.Header{"Traceparent": {tp}}, "GET /")
		root.End()
	}
	for _, s := range rec.Ended() {
		if s.Parent().IsValid() {
			t.Errorf("a malformed traceparent became parent %s", s.Parent().SpanID())
		}
	}
}

func TestConfigured(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "TRUE"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_SERVICE_NAME": "amsg-eu"}, false},
	} {
		if got := Configured(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("Configured(%v) = %v, want %v", c.env, got, c.want)
		}
	}
}

func TestSetupRefusesAProtocolItCannotSpeak(t *testing.T) {
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
	_, err := Setup(context.Background(), func(k string) string { return env[k] }, "test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil || !strings.Contains(err.Error(), "http/protobuf") {
		t.Fatalf("Setup with grpc: %v, want a refusal naming http/protobuf", err)
	}
	if Enabled() {
		t.Fatal("a refused setup turned tracing on")
	}
}

// BenchmarkSpan measures what one span of the delivery path costs (push.send:
// start, three attributes, end, inside a request's trace), off and on.
func BenchmarkSpan(b *testing.B) {
	b.Run("off", func(b *testing.B) {
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			span(ctx)
		}
	})
	b.Run("on", func(b *testing.B) {
		provider := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		Use(provider)
		defer func() {
			Use(nil)
			_ = provider.Shutdown(context.Background())
		}()
		ctx, root := Root(context.Background(), "POST /api/v1/instant", time.Time{})
		defer root.End()
		b.ReportAllocs()
		for b.Loop() {
			span(ctx)
		}
	})
}

// FuzzExtract feeds extract traceparent and tracestate headers as a caller
// may send them: it never panics, and what it accepts is a valid remote
// parent carrying the header's own trace id.
func FuzzExtract(f *testing.F) {
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "congo=t61rcWkgMzE")
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", "")
	f.Add("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "a=b,c=d")
	f.Add("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", "")
	f.Add("00-00000000000000000000000000000000-0000000000000000-01", "")
	f.Add(strings.Repeat("0", 600), strings.Repeat("k=v,", 200))
	provider := sdktrace.NewTracerProvider()
	Use(provider)
	defer Use(nil)
	f.Fuzz(func(t *testing.T, traceparent, tracestate string) {
		ctx := extract(context.Background(), http.Header{"Traceparent": {traceparent}, "Tracestate": {tracestate}})
		sc := trace.SpanContextFromContext(ctx)
		if !sc.IsValid() {
			return
		}
		if !sc.IsRemote() || !strings.Contains(strings.ToLower(traceparent), sc.TraceID().String()) {
			t.Fatalf("%q became %v", traceparent, sc)
		}
	})
}
