package sqlite

import (
	"runtime"
	"sync/atomic"
	"time"
)

// writerTurn bounds how long the writer runs without letting the other
// goroutines run. Go preempts a goroutine only after 10 ms, and a group
// commit of a trickle's completions runs for 2–5 ms of CPU: on a process
// given one CPU, every delivery falling due meanwhile waited for it, and
// then for the backlog that built up behind it (issue 24: the trickle's
// p99). Yielding between statements once a turn is over keeps a delivery's
// wait near one statement; yielding at every statement would make the
// writer wait behind every runnable goroutine for each. A turn of 250 µs
// (a delivery's CPU before its send) rather than 1 ms took the trickle's
// due-to-delivered p50 from about 1 to 0.7 ms and its p99 from about 22 to
// 18 ms; 100 µs did no better (docs/performance.md, branch ticktail).
const writerTurn = 250 * time.Microsecond

// turns tracks the writer's turn on the CPU.
type turns struct {
	began atomic.Int64 // clock reading at the turn's start, in nanoseconds
	// clock and yieldCPU are a monotonic clock and runtime.Gosched; tests
	// set them.
	clock    func() time.Duration
	yieldCPU func()
}

// newTurns returns turns on the process's monotonic clock.
func newTurns() *turns {
	epoch := time.Now()
	return &turns{clock: func() time.Duration { return time.Since(epoch) }, yieldCPU: runtime.Gosched}
}

// start begins a turn: the writer was just woken, and others ran before it.
func (t *turns) start() { t.began.Store(int64(t.clock())) }

// yield lets the other runnable goroutines run first once the turn is
// over, and begins a new turn.
func (t *turns) yield() {
	if t.clock()-time.Duration(t.began.Load()) < writerTurn {
		return
	}
	t.yieldCPU()
	t.start()
}
