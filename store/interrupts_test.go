package store_test

import (
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"amsg/store"
	"amsg/store/storetest"
)

var interruptEpoch = time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)

func pendingInterrupt(id string, expires time.Duration) store.Interrupt {
	return store.Interrupt{ID: id, UserID: "user-1", SessionID: "sess_1", Iteration: 0, ToolCallID: "call_" + id,
		Body: json.RawMessage(`{"name":"send_email","apiKey":"sk-secret"}`), CreatedAt: interruptEpoch,
		ExpiresAt: interruptEpoch.Add(expires)}
}

func TestInterruptDecidedOnce(t *testing.T) {
	st := storetest.New(t)
	ctx := t.Context()
	if err := st.CreateInterrupts(ctx, []store.Interrupt{pendingInterrupt("i1", time.Hour)}); err != nil {
		t.Fatal(err)
	}
	pending, err := st.PendingInterrupts(ctx, "user-1", interruptEpoch, 10)
	if err != nil || len(pending) != 1 || string(pending[0].Body) != `{"name":"send_email","apiKey":"sk-secret"}` {
		t.Fatalf("pending = %+v, %v", pending, err)
	}
	at := interruptEpoch.Add(time.Minute)
	got, err := st.DecideInterrupt(ctx, store.InterruptDecision{ID: "i1", State: store.InterruptDenied, Reason: "not now", DecidedBy: 7, At: at})
	if err != nil {
		t.Fatal(err)
	}
	if got.State != store.InterruptDenied || got.Reason != "not now" || got.DecidedBy != 7 || !got.DecidedAt.Equal(at) {
		t.Errorf("decided = %+v", got)
	}
	_, err = st.DecideInterrupt(ctx, store.InterruptDecision{ID: "i1", State: store.InterruptApproved, At: at})
	if !errors.Is(err, store.ErrInterruptDecided) {
		t.Errorf("second decision: %v, want ErrInterruptDecided", err)
	}
	if _, err := st.DecideInterrupt(ctx, store.InterruptDecision{ID: "nope", State: store.InterruptApproved, At: at}); !errors.Is(err, store.ErrInterruptNotFound) {
		t.Errorf("unknown id: %v", err)
	}
	stored, err := st.Interrupt(ctx, "i1")
	if err != nil || stored.State != store.InterruptDenied || stored.Reason != "not now" {
		t.Errorf("stored after the refused decision = %+v, %v", stored, err)
	}
	if pending, _ := st.PendingInterrupts(ctx, "user-1", at, 10); len(pending) != 0 {
		t.Errorf("still pending: %+v", pending)
	}
}

func TestInterruptExpiry(t *testing.T) {
	st := storetest.New(t)
	ctx := t.Context()
	if err := st.CreateInterrupts(ctx, []store.Interrupt{pendingInterrupt("soon", time.Minute), pendingInterrupt("later", time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if next, err := st.NextInterruptExpiry(ctx); err != nil || !next.Equal(interruptEpoch.Add(time.Minute)) {
		t.Errorf("next expiry = %v, %v", next, err)
	}
	// A decision at the very expiry is too late, even before the sweep.
	_, err := st.DecideInterrupt(ctx, store.InterruptDecision{ID: "soon", State: store.InterruptApproved, At: interruptEpoch.Add(time.Minute)})
	if !errors.Is(err, store.ErrInterruptExpired) {
		t.Errorf("decision at expiry: %v, want ErrInterruptExpired", err)
	}
	expired, err := st.ExpireInterrupts(ctx, interruptEpoch.Add(time.Minute), 10)
	if err != nil || len(expired) != 1 || expired[0].ID != "soon" || expired[0].State != store.InterruptExpired {
		t.Fatalf("expired = %+v, %v", expired, err)
	}
	if again, err := st.ExpireInterrupts(ctx, interruptEpoch.Add(time.Minute), 10); err != nil || len(again) != 0 {
		t.Errorf("second sweep = %+v, %v; an expiry is claimed once", again, err)
	}
	if _, err := st.DecideInterrupt(ctx, store.InterruptDecision{ID: "soon", State: store.InterruptApproved, At: interruptEpoch}); !errors.Is(err, store.ErrInterruptExpired) {
		t.Errorf("decision after the sweep: %v, want ErrInterruptExpired", err)
	}
	if n, err := st.PruneInterrupts(ctx, interruptEpoch.Add(2*time.Minute)); err != nil || n != 1 {
		t.Errorf("pruned %d, %v; want the expired one", n, err)
	}
	if _, err := st.Interrupt(ctx, "later"); err != nil {
		t.Errorf("the pending one was pruned: %v", err)
	}
}

// Decisions from several devices and the expiry sweep race for one
// interrupt: exactly one of them changes it.
func TestInterruptRaceHasOneWinner(t *testing.T) {
	st := storetest.New(t)
	ctx := t.Context()
	if err := st.CreateInterrupts(ctx, []store.Interrupt{pendingInterrupt("race", time.Minute)}); err != nil {
		t.Fatal(err)
	}
	const deciders = 6
	var wg sync.WaitGroup
	wins := make(chan string, deciders+1)
	for i := range deciders {
		wg.Go(func() {
			_, err := st.DecideInterrupt(ctx, store.InterruptDecision{ID: "race", State: store.InterruptApproved,
				DecidedBy: int64(i + 1), At: interruptEpoch.Add(59 * time.Second)})
			switch {
			case err == nil:
				wins <- "decision"
			case !errors.Is(err, store.ErrInterruptDecided) && !errors.Is(err, store.ErrInterruptExpired):
				t.Errorf("decision: %v", err)
			}
		})
	}
	wg.Go(func() {
		expired, err := st.ExpireInterrupts(ctx, interruptEpoch.Add(time.Minute), 10)
		if err != nil {
			t.Errorf("expire: %v", err)
		}
		for range expired {
			wins <- "expiry"
		}
	})
	wg.Wait()
	close(wins)
	var winners []string
	for w := range wins {
		winners = append(winners, w)
	}
	if len(winners) != 1 {
		t.Fatalf("winners = %v, want exactly one", winners)
	}
	got, err := st.Interrupt(ctx, "race")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]store.InterruptState{"decision": store.InterruptApproved, "expiry": store.InterruptExpired}[winners[0]]
	if got.State != want {
		t.Errorf("state %s after the %s won", got.State, winners[0])
	}
}

// A settled interrupt stays unresumed until its round is marked; marking a
// round leaves its pending interrupts and other rounds alone.
func TestUnresumedInterruptsUntilTheRoundIsMarked(t *testing.T) {
	st := storetest.New(t)
	ctx := t.Context()
	a, b, other := pendingInterrupt("a", time.Hour), pendingInterrupt("b", time.Hour), pendingInterrupt("other", time.Hour)
	other.Iteration = 1
	if err := st.CreateInterrupts(ctx, []store.Interrupt{a, b, other}); err != nil {
		t.Fatal(err)
	}
	ids := func(settledBefore time.Time) []string {
		t.Helper()
		list, err := st.UnresumedInterrupts(ctx, settledBefore, 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, in := range list {
			out = append(out, in.ID)
		}
		return out
	}
	for i, id := range []string{"other", "a"} {
		if _, err := st.DecideInterrupt(ctx, store.InterruptDecision{ID: id, State: store.InterruptApproved,
			At: interruptEpoch.Add(time.Duration(i+1) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	if got := ids(interruptEpoch.Add(time.Minute)); !slices.Equal(got, []string{"other"}) {
		t.Errorf("unresumed settled by +1m = %v, want [other]", got)
	}
	if got := ids(interruptEpoch.Add(time.Hour)); !slices.Equal(got, []string{"other", "a"}) {
		t.Errorf("unresumed = %v, want [other a] (b is pending)", got)
	}
	if err := st.MarkRoundResumed(ctx, "user-1", "sess_1", 0, interruptEpoch.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := ids(interruptEpoch.Add(time.Hour)); !slices.Equal(got, []string{"other"}) {
		t.Errorf("after marking round 0: %v, want [other]", got)
	}
	// b, pending when its round was marked, is unresumed once settled.
	if _, err := st.ExpireInterrupts(ctx, interruptEpoch.Add(time.Hour), 10); err != nil {
		t.Fatal(err)
	}
	if got := ids(interruptEpoch.Add(time.Hour)); !slices.Equal(got, []string{"other", "b"}) {
		t.Errorf("after b expired: %v, want [other b]", got)
	}
}
