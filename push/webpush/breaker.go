package webpush

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"
)

// Defaults of the hang breaker (Config.HungAfter, Config.HungTimeout).
const (
	DefaultHungAfter   = 3
	DefaultHungTimeout = 5 * time.Second
)

// hangBreaker shortens the request timeout of a push service origin that
// stopped answering: once HungAfter requests in a row to it timed out, its
// requests get HungTimeout instead of Timeout, until one of them gets an
// answer (any status). A push service that hangs then costs its senders
// seconds, not half a minute each (issue 22: 1 % hung requests cut a
// service's throughput 45×). Only origins with timeouts in a row are kept.
type hangBreaker struct {
	after   int
	timeout time.Duration

	mu       sync.Mutex
	timeouts map[string]int // timeouts in a row, per origin that has some
}

// maxHungOrigins bounds hangBreaker's map; past it, it starts afresh.
const maxHungOrigins = 10_000

func newHangBreaker(after int, timeout time.Duration) *hangBreaker {
	return &hangBreaker{after: after, timeout: timeout, timeouts: map[string]int{}}
}

// requestTimeout is the timeout of a request to origin.
func (b *hangBreaker) requestTimeout(origin string, full time.Duration) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.timeouts[origin] >= b.after {
		return min(b.timeout, full)
	}
	return full
}

// observe notes how a request to origin ended: err is its transport error,
// nil when it got an answer; caller is the sender's own context, whose end
// says nothing about the origin.
func (b *hangBreaker) observe(origin string, err error, caller context.Context) {
	timedOut := err != nil && caller.Err() == nil && isTimeout(err)
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case timedOut:
		if len(b.timeouts) >= maxHungOrigins {
			clear(b.timeouts)
		}
		b.timeouts[origin]++
	case err == nil:
		delete(b.timeouts, origin)
	}
}

// isTimeout reports a transport error that is a timeout. (Apart from
// observe, whose every call would otherwise allocate the net.Error.)
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// Gate bounds the requests of a send that run at once, as the courier's
// per-origin slots do: a send enters it before each request and leaves it
// when the answer is in, so it holds no place while it waits to retry.
type Gate interface {
	Enter(ctx context.Context) error
	Leave()
}
