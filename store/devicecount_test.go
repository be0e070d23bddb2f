package store_test

import (
	"testing"
	"time"

	"amsg/store/storetest"
)

// CountDevices counts a user's devices, only theirs, and follows a
// registration and a deletion.
func TestCountDevices(t *testing.T) {
	st := storetest.New(t)
	ctx := t.Context()
	count := func(userID string) int {
		t.Helper()
		n, err := st.CountDevices(ctx, userID)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(alice); n != 0 {
		t.Fatalf("a user without devices has %d", n)
	}
	for _, e := range []string{"https://push.example/phone", "https://push.example/laptop"} {
		if _, err := st.PutSubscription(ctx, alice, subscriptionJSON(e), time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.PutSubscription(ctx, bob, subscriptionJSON("https://push.example/tablet"), time.Time{}); err != nil {
		t.Fatal(err)
	}
	if a, b := count(alice), count(bob); a != 2 || b != 1 {
		t.Fatalf("alice has %d devices, bob %d; want 2 and 1", a, b)
	}
	if ok, err := st.DeleteSubscription(ctx, alice, "https://push.example/phone"); err != nil || !ok {
		t.Fatalf("delete: %v %v", ok, err)
	}
	if n := count(alice); n != 1 {
		t.Fatalf("after a deletion alice has %d devices, want 1", n)
	}
}
