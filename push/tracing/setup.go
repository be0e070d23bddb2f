package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// scope names amsg's spans (the instrumentation scope).
const scope = "amsg"

// Configured reports whether the environment asks for traces: an OTLP
// endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), and neither OTEL_SDK_DISABLED=true
// nor OTEL_TRACES_EXPORTER=none turns them off.
func Configured(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(getenv("OTEL_TRACES_EXPORTER"), "none") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup turns tracing on when the environment asks for it (Configured) and
// returns the function that flushes the spans not yet exported and turns it
// off again; it returns a shutdown that does nothing when tracing stays off.
//
// The exporter speaks OTLP over HTTP with protobuf bodies and reads the
// standard variables itself: the endpoints, OTEL_EXPORTER_OTLP_HEADERS (an
// authorization header for a hosted collector), _TIMEOUT, _COMPRESSION and
// the certificate variables. The sampler is OTEL_TRACES_SAMPLER and
// OTEL_TRACES_SAMPLER_ARG (default parentbased_always_on), the batching
// OTEL_BSP_*, and the service OTEL_SERVICE_NAME (default amsg) with
// OTEL_RESOURCE_ATTRIBUTES. A protocol other than http/protobuf is refused:
// amsg carries no gRPC or JSON exporter.
func Setup(ctx context.Context, getenv func(string) string, version string, log *slog.Logger) (shutdown func(context.Context) error, err error) {
	off := func(context.Context) error { return nil }
	if !Configured(getenv) {
		return off, nil
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := getenv(name); p != "" && p != "http/protobuf" {
			return off, fmt.Errorf("%s=%q: amsg exports traces over OTLP/HTTP with protobuf only (http/protobuf)", name, p)
		}
	}
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		return off, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "amsg"), attribute.String("service.version", version)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override the defaults above
		resource.WithTelemetrySDK())
	if err != nil {
		return off, fmt.Errorf("trace resource: %w", err)
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("tracing: OpenTelemetry reported an error (an export that failed, a bad OTEL_* setting)", "err", err)
	}))
	provider := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	Use(provider)
	log.Info("tracing: exporting spans over OTLP/HTTP", "service", serviceName(res))
	return func(ctx context.Context) error {
		Use(nil)
		return provider.Shutdown(ctx)
	}, nil
}

// Use records spans with provider from now on, or, given nil, turns
// tracing off: Setup's, and a benchmark's that measures tracing's cost.
func Use(provider *sdktrace.TracerProvider) {
	if provider == nil {
		tracer.Store(nil)
		return
	}
	t := provider.Tracer(scope)
	tracer.Store(&t)
}

func serviceName(res *resource.Resource) string {
	v, _ := res.Set().Value("service.name")
	return v.AsString()
}
