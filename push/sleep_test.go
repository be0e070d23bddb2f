package push_test

import (
	"context"
	"errors"
	"sync"
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

// Drain returns nil once the work is done; when ctx ends first, it
// interrupts the work and returns once the work has returned.
func TestDrain(t *testing.T) {
	var wg sync.WaitGroup
	release := make(chan struct{})
	wg.Go(func() { <-release })
	close(release)
	if err := push.Drain(t.Context(), &wg, func() { t.Error("interrupted work that ended") }); err != nil {
		t.Errorf("finished work: %v", err)
	}

	interrupted := make(chan struct{})
	finished := false
	wg.Go(func() {
		<-interrupted
		finished = true
	})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := push.Drain(ctx, &wg, func() { close(interrupted) }); !errors.Is(err, context.Canceled) {
		t.Errorf("interrupted work: %v, want context.Canceled", err)
	}
	if !finished {
		t.Error("Drain returned before the interrupted work did")
	}
}
