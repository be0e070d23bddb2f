// Package batch gathers items that many goroutines hand over into batches
// that one goroutine handles, in the shape of go-cloud's pubsub/batcher: a
// batch is bounded in size (Options.MaxItems) and in how long it waits for
// more items (Options.MaxWait, Options.Gap). The drivers' group commits are
// built on it: each item is one write, each batch one transaction.
package batch

import (
	"errors"
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
}

// Batcher hands batches of the items given to Add to its handler, one
// batch at a time, on a goroutine of its own.
type Batcher[T any] struct {
	opts   Options
	handle func([]T)
	items  chan T // unbuffered: an item handed over is an item the handler gets
	stop   chan struct{}
	done   chan struct{}
}

// New starts a batcher that calls handle with each batch, never with an
// empty one. handle answers its items (they usually carry a channel).
func New[T any](opts Options, handle func([]T)) *Batcher[T] {
	opts.MaxItems = max(opts.MaxItems, 1)
	b := &Batcher[T]{opts: opts, handle: handle, items: make(chan T),
		stop: make(chan struct{}), done: make(chan struct{})}
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

// Close stops the batcher once the batch in hand is handled. Items not yet
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
	var last time.Time // when the last batch was handled
	for {
		var batch []T
		select {
		case <-b.stop:
			return
		case item := <-b.items:
			batch = append(batch, item)
		}
		batch = b.gather(batch, time.Since(last) < b.opts.MaxWait)
		b.handle(batch)
		last = time.Now()
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
