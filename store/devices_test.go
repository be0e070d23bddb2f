package store_test

import (
	"testing"
	"time"

	"amsg/store"
	"amsg/store/storetest"
)

// A device's last sign of life is its registration, its re-registrations
// and its reports; housekeeping expires the devices silent since the cutoff,
// and only those.
func TestDeviceLivenessAndExpiry(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	const phone, laptop, tablet = "https://push.example/phone", "https://push.example/laptop", "https://push.example/tablet"
	for _, e := range []string{phone, laptop} {
		if _, err := st.PutSubscription(ctx, alice, subscriptionJSON(e), time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.PutSubscription(ctx, bob, subscriptionJSON(tablet), time.Time{}); err != nil {
		t.Fatal(err)
	}
	registered := clk.Now()

	clk.Add(30 * 24 * time.Hour)
	if ok, err := st.SeeDevice(ctx, alice, phone); err != nil || !ok {
		t.Fatalf("see phone: %v %v", ok, err)
	}
	// Another user's endpoint, or an unknown one, is not seen.
	if ok, err := st.SeeDevice(ctx, alice, tablet); err != nil || ok {
		t.Fatalf("see bob's tablet as alice: %v %v", ok, err)
	}
	seenAt := clk.Now()

	seen, err := st.DevicesSeen(ctx, alice)
	if err != nil || len(seen) != 2 {
		t.Fatalf("%+v %v", seen, err)
	}
	byEndpoint := map[string]store.DeviceSeen{}
	for _, d := range seen {
		byEndpoint[d.Endpoint] = d
	}
	if got := byEndpoint[phone].LastSeenAt; !got.Equal(seenAt) {
		t.Errorf("phone last seen %v, want %v", got, seenAt)
	}
	if got := byEndpoint[laptop].LastSeenAt; !got.Equal(registered) {
		t.Errorf("laptop last seen %v, want its registration %v", got, registered)
	}

	// 61 days after registration: the laptop and bob's tablet have been
	// silent for 61 days, the phone for 31.
	clk.Add(31 * 24 * time.Hour)
	n, err := st.ExpireSilentDevices(ctx, clk.Now().Add(-60*24*time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("expired %d, %v; want 2", n, err)
	}
	if got := endpoints(t, st, alice); len(got) != 1 || got[0] != phone {
		t.Errorf("alice keeps %v", got)
	}
	if got := endpoints(t, st, bob); len(got) != 0 {
		t.Errorf("bob keeps %v", got)
	}
	// Registering again counts as a sign of life.
	if _, err := st.PutSubscription(ctx, bob, subscriptionJSON(tablet), time.Time{}); err != nil {
		t.Fatal(err)
	}
	clk.Add(59 * 24 * time.Hour)
	if n, err := st.ExpireSilentDevices(ctx, clk.Now().Add(-60*24*time.Hour)); err != nil || n != 1 {
		t.Fatalf("second expiry: %d %v; want only alice's phone (seen 90 days ago)", n, err)
	}
	if got := endpoints(t, st, bob); len(got) != 1 {
		t.Errorf("bob's re-registered tablet expired: %v", got)
	}
}
