package scheduler

import (
	"os"
	"testing"

	"amsg/push/tracing/tracingtest"
)

// traceBenchmark turns tracing on for a benchmark when AMSG_BENCH_TRACING=on,
// exporting every occurrence's trace over OTLP/HTTP to a collector on
// loopback: what tracing costs the delivery path (docs/performance.md).
func traceBenchmark(b *testing.B) {
	if os.Getenv("AMSG_BENCH_TRACING") == "on" {
		tracingtest.Export(b)
	}
}
