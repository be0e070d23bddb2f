package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"amsg/push/tracing"
)

// traceFlushTimeout bounds the export of the spans still buffered when the
// server stops.
const traceFlushTimeout = 5 * time.Second

// startTracing turns tracing on when the OTEL_EXPORTER_OTLP_* environment
// asks for it (push/tracing) and returns what flushes it at exit. A setting
// it cannot honour is a configuration error (exit status 2).
func startTracing(ctx context.Context, getenv func(string) string, log *slog.Logger, stderr io.Writer) (stop func(), ok bool) {
	shutdown, err := tracing.Setup(ctx, getenv, buildVersion(), log)
	if err != nil {
		fmt.Fprintf(stderr, "amsg serve: %v\n", err)
		return nil, false
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), traceFlushTimeout)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			log.Warn("tracing: the last spans were not exported", "err", err)
		}
	}, true
}
