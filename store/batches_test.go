package store

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"amsg/store/driver/batch"
)

// An unhurried write (a delivered occurrence's completion) waits in the
// store's batch, up to writeBatchLinger, for the writes after it, so a
// trickle's completions share a transaction; a write that is not
// unhurried is written at once, with the writes lingering then.
func TestAnUnhurriedWriteWaitsInItsBatchForCompany(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var batches [][]int
		handled := func() [][]int {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(batches)
		}
		w := &writeBatch[int]{}
		w.batcher = batch.New(writeBatchOptions, func(ps []*pendingWrite[int]) {
			reqs := make([]int, len(ps))
			for i, p := range ps {
				reqs[i] = p.req
				p.done <- nil
			}
			mu.Lock()
			batches = append(batches, reqs)
			mu.Unlock()
		})
		defer w.batcher.Close()
		write := func(ctx context.Context, req int) *pendingWrite[int] {
			p := &pendingWrite[int]{ctx: ctx, req: req, done: make(chan error, 1)}
			go func() {
				if err := w.handOver(p); err != nil {
					p.done <- err
				}
			}()
			synctest.Wait()
			return p
		}
		unhurried := Unhurried(t.Context())

		write(unhurried, 1)
		write(unhurried, 2)
		if got := handled(); len(got) != 0 {
			t.Fatalf("unhurried writes were written at once, in %v; want them waiting for company", got)
		}
		time.Sleep(writeBatchLinger)
		synctest.Wait()
		if got, want := handled(), [][]int{{1, 2}}; !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("after the linger: batches %v, want %v", got, want)
		}

		write(unhurried, 3)
		if p := write(t.Context(), 4); <-p.done != nil {
			t.Fatal("the write that is not unhurried failed")
		}
		if got, want := handled(), [][]int{{1, 2}, {3, 4}}; !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("a write that is not unhurried: batches %v, want %v (written at once, with the lingering one)", got, want)
		}
	})
}
