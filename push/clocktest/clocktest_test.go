package clocktest_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"amsg/push/clocktest"
)

var epoch = time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)

func TestClockMovesOnlyWhenTold(t *testing.T) {
	c := clocktest.New(epoch)
	if got := c.Now(); !got.Equal(epoch) || !c.Now().Equal(epoch) {
		t.Fatalf("Now = %v, want %v twice", got, epoch)
	}
	c.Add(90 * time.Second)
	if got := c.Now(); !got.Equal(epoch.Add(90 * time.Second)) {
		t.Errorf("after Add: %v", got)
	}
	c.Set(epoch.Add(-time.Hour))
	if got := c.Now(); !got.Equal(epoch.Add(-time.Hour)) {
		t.Errorf("after Set: %v", got)
	}
}

func TestSteppingClockReadsAreDistinct(t *testing.T) {
	c := clocktest.Stepping(epoch, time.Second)
	for i := range 3 {
		if got, want := c.Now(), epoch.Add(time.Duration(i)*time.Second); !got.Equal(want) {
			t.Errorf("reading %d = %v, want %v", i, got, want)
		}
	}
}

// Readers and writers on several goroutines: run with -race.
func TestClockConcurrentUse(t *testing.T) {
	c := clocktest.New(epoch)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				c.Add(time.Millisecond)
				_ = c.Now()
			}
		})
	}
	wg.Wait()
	if got := c.Now(); !got.Equal(epoch.Add(400 * time.Millisecond)) {
		t.Errorf("after 400 Adds of 1ms: %v", got)
	}
}

func TestSleeperRecordsWithoutWaiting(t *testing.T) {
	var s clocktest.Sleeper
	if err := s.Sleep(t.Context(), time.Hour); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Sleep(ctx, 2*time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep under an ended context = %v, want context.Canceled", err)
	}
	if got := s.Waits(); !slices.Equal(got, []time.Duration{time.Hour, 2 * time.Hour}) {
		t.Errorf("Waits = %v", got)
	}
	s.Reset()
	if got := s.Waits(); len(got) != 0 {
		t.Errorf("after Reset: %v", got)
	}
}
