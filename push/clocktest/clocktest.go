// Package clocktest is the fake time of amsg's tests: a Clock that only
// moves when the test moves it, read through Now by every component that
// takes a clock (store, sender, courier, transcripts, agent, scheduler,
// API), and a Sleeper that records the waits a component asks for instead
// of waiting. It imports only the standard library, so tests at every layer
// can use it.
package clocktest

import (
	"sync"
	"time"
)

// Clock is a settable clock, safe for concurrent use.
type Clock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

// New returns a clock standing at start.
func New(start time.Time) *Clock { return &Clock{now: start} }

// Stepping returns a clock whose every reading is step later than the
// one before, the first being start, so no two readings are equal.
func Stepping(start time.Time, step time.Duration) *Clock {
	return &Clock{now: start, step: step}
}

// Now reads the clock (and, for a stepping clock, moves it on). Pass the
// method value c.Now where a component takes a func() time.Time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now
	c.now = c.now.Add(c.step)
	return now
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// Add moves the clock d forward.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
