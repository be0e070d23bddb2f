package push

import (
	"context"
	"sync"
	"time"
)

// Sleep waits d, or until ctx ends, when it returns ctx's error. It is the
// one wait behind every component's injectable Sleep (the sender's retries,
// the scheduler's pacing and instant backoff); a d of zero or less returns
// at once.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Drain waits for wg until ctx ends; then it calls interrupt and waits for
// wg again, and returns ctx's error. It is the shutdown of background work
// that may finish on its own (the scheduler's deliveries, SSE backups,
// resumed approval rounds).
func Drain(ctx context.Context, wg *sync.WaitGroup, interrupt func()) error {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		interrupt()
		<-done
		return ctx.Err()
	}
}
