// Package batch gathers items that many goroutines hand over into batches
// that one goroutine handles, in the shape of go-cloud's pubsub/batcher: a
// batch is bounded in size (Options.MaxItems) and in how long it waits for
// more items (Options.MaxWait, Options.Gap). The drivers' group commits are
// built on it: each item is one write, each batch one transaction.
package batch

import (
	"errors"
	"sync/atomic"
	"time"
)

// ErrClosed is what Add returns once Close was called.
var ErrClosed = errors.New("batch: closed")

// Options bound a batch.
type Options struct {
	// MaxItems is the most items one batch holds (at least 1).
	MaxItems int
	// MaxWait is how long a busy batcher (one that finished a batch less
	// than MaxWait ago) waits for more items after the first, in all; Gap
	// how long it waits for each next one. An idle batcher takes only the
	// items already waiting: a lone item never waits, and the wait pays off
	// only while items keep coming.
	MaxWait time.Duration
	Gap     time.Duration
	// MaxHandlers is how many batches are handled at once (at least 1).
	// With 1 the batching goroutine handles each batch itself, so batches
	// never overlap; with more, a batch waits for a free handler and takes
	// the items that arrived meanwhile, up to MaxItems.
	MaxHandlers int
}

// Batcher hands batches of the items given to Add to its handler, one
// batch at a time, on a goroutine of its own.
type Batcher[T any] struct {
	opts   Options
	handle func([]T)
	items  chan T // unbuffered: an item handed over is an item the handler gets
	stop   chan struct{}
	done   chan struct{}
	// handlers holds a token per batch being handled (MaxHandlers > 1).
	handlers chan struct{}
}

// New starts a batcher that calls handle with each batch, never with an
// empty one. handle answers its items (they usually carry a channel).
func New[T any](opts Options, handle func([]T)) *Batcher[T] {
	opts.MaxItems = max(opts.MaxItems, 1)
	opts.MaxHandlers = max(opts.MaxHandlers, 1)
	b := &Batcher[T]{opts: opts, handle: handle, items: make(chan T),
		stop: make(chan struct{}), done: make(chan struct{}), handlers: make(chan struct{}, opts.MaxHandlers)}
	go b.run()
	return b
}

// Add hands item over, waiting while the handler is busy. It returns
// ErrClosed, and item is not handled, once Close was called.
func (b *Batcher[T]) Add(item T) error {
	select {
	case b.items <- item:
		return nil
	case <-b.done:
		return ErrClosed
	}
}

// Close stops the batcher once the batches in hand are handled. Items not yet
// handed over are refused (Add returns ErrClosed). Later calls do nothing.
func (b *Batcher[T]) Close() {
	select {
	case <-b.stop:
	default:
		close(b.stop)
	}
	<-b.done
}

func (b *Batcher[T]) run() {
	defer close(b.done)
	var last atomic.Int64 // when the last batch was handled, Unix nanoseconds
	for {
		var batch []T
		select {
		case <-b.stop:
			b.waitHandlers()
			return
		case item := <-b.items:
			batch = append(batch, item)
		}
		batch = b.gather(batch, time.Since(time.Unix(0, last.Load())) < b.opts.MaxWait)
		if b.opts.MaxHandlers == 1 {
			b.handle(batch)
			last.Store(time.Now().UnixNano())
			continue
		}
		b.handlers <- struct{}{}       // wait for a free handler…
		batch = b.gatherWaiting(batch) // …and take what arrived meanwhile
		go func() {
			defer func() { <-b.handlers }()
			b.handle(batch)
			last.Store(time.Now().UnixNano())
		}()
	}
}

// waitHandlers waits for the batches being handled.
func (b *Batcher[T]) waitHandlers() {
	for range b.opts.MaxHandlers {
		b.handlers <- struct{}{}
	}
}

// gather adds to batch the items waiting now and, when busy, those that
// keep arriving, each within Gap of the last, for up to MaxWait in all, up
// to MaxItems.
func (b *Batcher[T]) gather(batch []T, busy bool) []T {
	if !busy {
		return b.gatherWaiting(batch)
	}
	end := time.Now().Add(b.opts.MaxWait)
	gap := time.NewTimer(b.opts.Gap)
	defer gap.Stop()
	for len(batch) < b.opts.MaxItems {
		select {
		case item := <-b.items:
			batch = append(batch, item)
			gap.Reset(min(b.opts.Gap, time.Until(end)))
		case <-gap.C:
			return b.gatherWaiting(batch)
		}
	}
	return batch
}

// gatherWaiting adds to batch the items waiting now, up to MaxItems.
func (b *Batcher[T]) gatherWaiting(batch []T) []T {
	for len(batch) < b.opts.MaxItems {
		select {
		case item := <-b.items:
			batch = append(batch, item)
		default:
			return batch
		}
	}
	return batch
}
