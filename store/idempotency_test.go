package store_test

import (
	"sync"
	"testing"
	"time"

	"amsg/store"
	"amsg/store/storetest"
)

// One claim of a key wins, even among concurrent ones; the same request
// then replays its answer, another request is a mismatch; the key is free
// again after its TTL, and pruned.
func TestIdempotencyKeyClaimReplayAndExpiry(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	claims := make([]store.IdempotencyClaim, 8)
	var wg sync.WaitGroup
	for i := range claims {
		wg.Go(func() {
			c, _, err := st.ClaimIdempotencyKey(ctx, alice, "k", "h1")
			if err != nil {
				t.Error(err)
			}
			claims[i] = c
		})
	}
	wg.Wait()
	fresh := 0
	for _, c := range claims {
		switch c {
		case store.IdempotencyFresh:
			fresh++
		case store.IdempotencyInFlight:
		default:
			t.Errorf("a concurrent claim got %v; want fresh or in flight", c)
		}
	}
	if fresh != 1 {
		t.Fatalf("%d concurrent claims won; want 1", fresh)
	}
	answer := store.IdempotentResponse{Status: 201, Body: []byte(`{"success":true}`)}
	if err := st.SaveIdempotentResponse(ctx, alice, "k", answer); err != nil {
		t.Fatal(err)
	}
	if c, resp, err := st.ClaimIdempotencyKey(ctx, alice, "k", "h1"); err != nil || c != store.IdempotencyReplay ||
		resp.Status != 201 || string(resp.Body) != string(answer.Body) {
		t.Fatalf("same request = %v %+v, %v; want the replay", c, resp, err)
	}
	if c, _, err := st.ClaimIdempotencyKey(ctx, alice, "k", "h2"); err != nil || c != store.IdempotencyMismatch {
		t.Fatalf("another request = %v, %v; want a mismatch", c, err)
	}
	if c, _, err := st.ClaimIdempotencyKey(ctx, bob, "k", "h2"); err != nil || c != store.IdempotencyFresh {
		t.Fatalf("the key of another scope = %v, %v; want fresh", c, err)
	}
	if err := st.ReleaseIdempotencyKey(ctx, bob, "k"); err != nil {
		t.Fatal(err)
	}
	if c, _, err := st.ClaimIdempotencyKey(ctx, bob, "k", "h3"); err != nil || c != store.IdempotencyFresh {
		t.Fatalf("a released key = %v, %v; want fresh", c, err)
	}
	clk.Add(store.IdempotencyInFlightTTL)
	if c, _, err := st.ClaimIdempotencyKey(ctx, bob, "k", "h3"); err != nil || c != store.IdempotencyFresh {
		t.Fatalf("a claim left without an answer = %v, %v; want fresh", c, err)
	}
	clk.Add(store.IdempotencyKeyTTL)
	if c, _, err := st.ClaimIdempotencyKey(ctx, alice, "k", "h2"); err != nil || c != store.IdempotencyFresh {
		t.Fatalf("an expired key = %v, %v; want fresh", c, err)
	}
	clk.Add(store.IdempotencyKeyTTL + time.Second)
	if p, err := st.Prune(ctx, clk.Now(), store.Retention{}); err != nil || p.IdempotencyKeys != 2 {
		t.Fatalf("Prune = %+v, %v; want 2 idempotency keys", p, err)
	}
}
