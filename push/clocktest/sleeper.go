package clocktest

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Sleeper is a fake wait for a component's injectable Sleep: it records
// each duration asked for and returns at once, with ctx's error if ctx has
// ended, so a test checks the pacing without spending it.
type Sleeper struct {
	mu    sync.Mutex
	waits []time.Duration
}

// Sleep records d. Pass the method value s.Sleep as a component's Sleep.
func (s *Sleeper) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return ctx.Err()
}

// Waits returns the durations asked for so far, in order.
func (s *Sleeper) Waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.waits)
}

// Reset forgets the waits recorded so far.
func (s *Sleeper) Reset() {
	s.mu.Lock()
	s.waits = nil
	s.mu.Unlock()
}
