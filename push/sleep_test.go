package push_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"amsg/push"
)

func TestSleep(t *testing.T) {
	if err := push.Sleep(t.Context(), 0); err != nil {
		t.Errorf("no wait: %v", err)
	}
	if err := push.Sleep(t.Context(), time.Nanosecond); err != nil {
		t.Errorf("a wait that ends: %v", err)
	}
	// An hour's wait under a cancelled context returns at once; were it
	// not, the test would time out.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := push.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled wait = %v, want context.Canceled", err)
	}
	if err := push.Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled zero wait = %v, want context.Canceled", err)
	}
}
