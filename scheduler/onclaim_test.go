package scheduler

import (
	"slices"
	"sync"
	"testing"
	"time"

	"amsg/push"
)

// OnClaim hears how late each claimed occurrence is.
func TestOnClaimReportsLateness(t *testing.T) {
	var mu sync.Mutex
	var lateness []time.Duration
	h := newHarness(t, Config{OnClaim: func(d time.Duration) {
		mu.Lock()
		lateness = append(lateness, d)
		mu.Unlock()
	}})
	h.subscribe(alice)
	h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("a")}, start.Add(-3*time.Second))
	h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("b")}, start.Add(-time.Second))
	h.tick()
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(lateness)
	if !slices.Equal(lateness, []time.Duration{time.Second, 3 * time.Second}) {
		t.Fatalf("lateness %v, want 1s and 3s", lateness)
	}
}
