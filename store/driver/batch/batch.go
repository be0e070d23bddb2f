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
	// Linger is how long a batch whose first item was handed over with
	// Linger waits for company, busy batcher or not, so items
	// that arrive one by one, steadily but further apart than Gap (a
	// trickle), share a batch instead of one each. It ends at MaxItems, or
	// as soon as an item given to Add arrives: that one is handled at once,
	// with the batch. 0: Linger is Add.
	Linger time.Duration
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
	items  chan entry[T] // unbuffered: an item handed over is an item the handler gets
	stop   chan struct{}
	done   chan struct{}
	// handlers holds a token per batch being handled (MaxHandlers > 1).
	handlers chan struct{}
}

// entry is an item on its way to a batch, and whether it may linger.
type entry[T any] struct {
	item   T
	linger bool
}

// New starts a batcher that calls handle with each batch, never with an
// empty one. handle answers its items (they usually carry a channel).
func New[T any](opts Options, handle func([]T)) *Batcher[T] {
	opts.MaxItems = max(opts.MaxItems, 1)
	opts.MaxHandlers = max(opts.MaxHandlers, 1)
	b := &Batcher[T]{opts: opts, handle: handle, items: make(chan entry[T]),
		stop: make(chan struct{}), done: make(chan struct{}), handlers: make(chan struct{}, opts.MaxHandlers)}
	go b.run()
	return b
}

// Add hands item over, waiting while the handler is busy. It returns
// ErrClosed, and item is not handled, once Close was called.
func (b *Batcher[T]) Add(item T) error { return b.add(entry[T]{item: item}) }

// Linger is Add for an item nobody waits on to go on (the record of
// something done): it waits up to Options.Linger for company instead of
// being handled alone.
func (b *Batcher[T]) Linger(item T) error { return b.add(entry[T]{item: item, linger: true}) }

func (b *Batcher[T]) add(e entry[T]) error {
	select {
	case b.items <- e:
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
		var first entry[T]
		select {
		case <-b.stop:
			b.waitHandlers()
			return
		case first = <-b.items:
			batch = append(batch, first.item)
		}
		switch {
		case first.linger && b.opts.Linger > 0:
			// Busy or not: records that come evenly spaced (a trickle
			// claimed ahead starts each task at its time) would otherwise
			// each find the writer just busy and commit nearly alone.
			batch = b.gather(batch, b.opts.Linger, b.opts.Linger, true)
		case time.Since(time.Unix(0, last.Load())) < b.opts.MaxWait: // busy
			batch = b.gather(batch, b.opts.MaxWait, b.opts.Gap, false)
		default:
			batch = b.gatherWaiting(batch)
		}
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

// gather adds to batch the items that keep arriving, each within gap of
// the last, for up to wait in all, up to MaxItems. A lingering batch ends
// as soon as an item given to Add arrives; any batch, when Close is called:
// the items in hand are handled then, not after the wait.
func (b *Batcher[T]) gather(batch []T, wait, gap time.Duration, lingering bool) []T {
	end := time.Now().Add(wait)
	timer := time.NewTimer(min(gap, wait))
	defer timer.Stop()
	for len(batch) < b.opts.MaxItems {
		select {
		case e := <-b.items:
			batch = append(batch, e.item)
			if lingering && !e.linger {
				return b.gatherWaiting(batch)
			}
			timer.Reset(min(gap, time.Until(end)))
		case <-timer.C:
			return b.gatherWaiting(batch)
		case <-b.stop:
			return batch
		}
	}
	return batch
}

// gatherWaiting adds to batch the items waiting now, up to MaxItems.
func (b *Batcher[T]) gatherWaiting(batch []T) []T {
	for len(batch) < b.opts.MaxItems {
		select {
		case e := <-b.items:
			batch = append(batch, e.item)
		default:
			return batch
		}
	}
	return batch
}
