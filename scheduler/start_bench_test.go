package scheduler

import (
	"context"
	"testing"
	"time"

	"amsg/llm"
	"amsg/push/courier"
	"amsg/store"
	"amsg/store/storetest"
)

// BenchmarkATaskClaimedAheadStarts is the scheduler's bookkeeping of one
// occurrence outside its fire and its completion's write, as process does
// it for a task claimed ahead whose time has come: its context, the
// registry of deliveries, the lease's heartbeat, the wait (none left) and
// the slot, handed off and given back. Run with -benchmem: allocations here
// are per push.
func BenchmarkATaskClaimedAheadStarts(b *testing.B) {
	st := storetest.New(b)
	s, err := New(Config{}, Deps{Store: st, Courier: courier.New(nil, st, courier.Config{}), LLM: llm.NewClient(llm.Config{})})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Stop(context.Background()) }()
	due := time.Now().Add(-time.Millisecond)
	t := store.Task{ID: 50, UserID: "u1", NextSendAt: due, LeaseUntil: due.Add(time.Minute)}
	b.ReportAllocs()
	for b.Loop() {
		ctx, cancel := context.WithCancelCause(s.runCtx)
		s.track(t.ID, cancel)
		held := s.hold(t.Lease(), cancel)
		h := &slotHold{s: s, due: due}
		s.ahead.Add(1)
		if err := h.await(ctx, t); err != nil {
			b.Fatal(err)
		}
		held.end()
		h.handOff()
		h.done()
		s.untrack(t.ID)
		cancel(nil)
	}
}
