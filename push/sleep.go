package push

import (
	"context"
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
