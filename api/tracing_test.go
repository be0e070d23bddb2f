package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"amsg/push/tracing"
)

// Request spans are named by method and route pattern, the suffix-matched
// routes by the route they reach, never by the raw path; a made-up method
// is "other", as in the metrics.
func TestRequestSpansAreNamedByRoute(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tracing.Use(provider)
	t.Cleanup(func() {
		tracing.Use(nil)
		_ = provider.Shutdown(context.Background())
	})
	s := newTestServer(t, Config{}, Deps{})
	for _, c := range []struct{ method, path, want string }{
		{http.MethodGet, "/api/v1/vapid-public-key", "GET /api/v1/vapid-public-key"},
		{http.MethodGet, "/amsg/secret-user-path/vapid-public-key/", "GET /api/v1/vapid-public-key"},
		{"BREW", "/api/v1/pot-42", "other unmatched"},
	} {
		rec.Reset()
		s.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(c.method, c.path, nil))
		ended := rec.Ended()
		if len(ended) != 1 || ended[0].Name() != c.want {
			names := []string{}
			for _, sp := range ended {
				names = append(names, sp.Name())
			}
			t.Errorf("%s %s: spans %q, want one %q", c.method, c.path, names, c.want)
		}
	}
}
