package courier_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"amsg/push"
	"amsg/push/courier"
)

// unhurriedKey stands for store.Unhurried's mark: a context that never ends.
type unhurriedKey struct{}

// BenchmarkRetryWriteFirstTry is RetryWrite's own CPU and allocations for a
// write that succeeds at once, as a scheduled occurrence's completion does
// (scheduler.complete): once a push.
func BenchmarkRetryWriteFirstTry(b *testing.B) {
	log := slog.New(slog.DiscardHandler)
	ctx := context.WithValue(context.Background(), unhurriedKey{}, true) // as store.Unhurried marks it
	b.ReportAllocs()
	for b.Loop() {
		err := courier.RetryWrite(ctx, time.Minute, push.Sleep, log, slog.Int64("taskId", 7), "recording", func(context.Context) error { return nil })
		if err != nil {
			b.Fatal(err)
		}
	}
}
