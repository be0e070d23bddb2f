package store_test

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"amsg/push"
	"amsg/push/courier"
	"amsg/store"
	"amsg/store/storetest"
	"amsg/store/usercrypt"
)

const (
	alice = "550e8400-e29b-41d4-a716-446655440000"
	bob   = "123e4567-e89b-42d3-a456-426614174000"
)

// subscriptionJSON is a PushSubscription as a browser sends it, with a field
// amsg does not know, which must be kept.
func subscriptionJSON(endpoint string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"endpoint": %q, "expirationTime": null,
		"keys": {"p256dh": "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM", "auth": "tBHItJI5svbpez7KI4CCXg"},
		"vendor": {"x": 1}}`, endpoint))
}

func userKey(t *testing.T, userID string) usercrypt.Key {
	t.Helper()
	ring, err := usercrypt.NewKeyring(storetest.MasterKey)
	if err != nil {
		t.Fatal(err)
	}
	return ring.UserKey(userID)
}

func endpoints(t *testing.T, st *store.Store, userID string) []string {
	t.Helper()
	devices, err := st.Devices(t.Context(), userID)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range devices {
		out = append(out, d.Subscription.Endpoint)
	}
	return out
}

func TestPutSubscriptionAndDevices(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()

	phone, err := st.PutSubscription(ctx, alice, subscriptionJSON("https://push.example/phone"), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if !phone.CreatedAt.Equal(clk.now) || !phone.UpdatedAt.Equal(clk.now) || phone.UserID != alice || phone.ID == 0 {
		t.Errorf("PutSubscription = %+v, want id, user and both times now", phone)
	}
	clk.Add(time.Minute)
	clientTime := time.UnixMilli(1_772_352_123_456)
	laptop, err := st.PutSubscription(ctx, alice, subscriptionJSON("https://push.example/laptop"), clientTime)
	if err != nil {
		t.Fatal(err)
	}
	if !laptop.UpdatedAt.Equal(clientTime) || !laptop.CreatedAt.Equal(clk.now) {
		t.Errorf("laptop times = created %v updated %v; want created now and updated the client's %v", laptop.CreatedAt, laptop.UpdatedAt, clientTime)
	}

	devices, err := st.Devices(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	if len(devices) != 2 {
		t.Fatalf("Devices = %d devices, want 2", len(devices))
	}
	// clientTime (2026-03-01T08:02:03Z) is after the phone's 08:00, so the laptop is most recent.
	got := devices[0]
	if got.ID != laptop.ID || got.Subscription.Endpoint != "https://push.example/laptop" ||
		got.Subscription.Keys.Auth != "tBHItJI5svbpez7KI4CCXg" || !strings.HasPrefix(got.Subscription.Keys.P256dh, "BNcRdre") ||
		!got.UpdatedAt.Equal(clientTime) || !got.CreatedAt.Equal(clk.now) || got.UserID != alice {
		t.Errorf("most recent device = %+v, want the laptop with its keys", got)
	}
	if devices[1].ID != phone.ID {
		t.Errorf("second device = %d, want the phone %d", devices[1].ID, phone.ID)
	}
	if other := endpoints(t, st, bob); len(other) != 0 {
		t.Errorf("bob sees alice's devices: %v", other)
	}
}

func TestPutSubscriptionUpsertsByEndpoint(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	first, err := st.PutSubscription(ctx, alice, subscriptionJSON("https://push.example/a"), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Hour)
	renewed := json.RawMessage(`{"endpoint":"https://push.example/a","keys":{"p256dh":"new","auth":"new"}}`)
	second, err := st.PutSubscription(ctx, alice, renewed, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if second.ID != first.ID || !second.CreatedAt.Equal(first.CreatedAt) || !second.UpdatedAt.Equal(clk.now) {
		t.Errorf("re-registering = %+v, want device %d created %v updated now", second, first.ID, first.CreatedAt)
	}
	devices, err := st.Devices(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	if len(devices) != 1 || devices[0].Subscription.Keys.Auth != "new" {
		t.Fatalf("Devices = %+v, want one device with the new keys", devices)
	}
}

// A device keeps the language it reported until it reports another; a
// re-registration without one (schedule-message's subscription) keeps it.
func TestPutDeviceKeepsItsLanguage(t *testing.T) {
	st := storetest.Open(t, store.Config{})
	ctx := t.Context()
	languages := func() []string {
		t.Helper()
		devices, err := st.Devices(ctx, alice)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range devices {
			out = append(out, d.Language)
		}
		return out
	}
	d, err := st.PutDevice(ctx, alice, subscriptionJSON("https://push.example/a"), time.Time{}, "zh-CN")
	if err != nil || d.Language != "zh-CN" {
		t.Fatalf("PutDevice = %+v, %v", d, err)
	}
	if d, err = st.PutSubscription(ctx, alice, subscriptionJSON("https://push.example/a"), time.Time{}); err != nil || d.Language != "zh-CN" {
		t.Fatalf("PutSubscription = %+v, %v: want the language kept", d, err)
	}
	if got := languages(); len(got) != 1 || got[0] != "zh-CN" {
		t.Fatalf("languages %q", got)
	}
	if _, err := st.PutDevice(ctx, alice, subscriptionJSON("https://push.example/a"), time.Time{}, "en-GB"); err != nil {
		t.Fatal(err)
	}
	if got := languages(); len(got) != 1 || got[0] != "en-GB" {
		t.Fatalf("languages %q after en-GB", got)
	}
	if _, err := st.PutDevice(ctx, alice, subscriptionJSON("https://push.example/a"), time.Time{}, strings.Repeat("x", store.MaxLanguageBytes+1)); !errors.Is(err, store.ErrInvalidSubscription) {
		t.Errorf("an overlong language: %v", err)
	}
	if got := languages(); len(got) != 1 || got[0] != "en-GB" {
		t.Errorf("languages %q after a refused put", got)
	}
}

func TestPutSubscriptionMovesEndpointToNewUser(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	if _, err := st.PutSubscription(ctx, alice, subscriptionJSON("https://push.example/shared"), time.Time{}); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Hour)
	moved, err := st.PutSubscription(ctx, bob, subscriptionJSON("https://push.example/shared"), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if got := endpoints(t, st, alice); len(got) != 0 {
		t.Errorf("alice still has %v", got)
	}
	if got := endpoints(t, st, bob); len(got) != 1 || got[0] != "https://push.example/shared" {
		t.Errorf("bob has %v, want the shared endpoint", got)
	}
	if !moved.CreatedAt.Equal(clk.now) {
		t.Errorf("moved device created %v, want now %v: it is a new registration for bob", moved.CreatedAt, clk.now)
	}
}

// An endpoint another user holds moves only with the keys it was
// registered with (the same browser); with other keys it is refused and the
// holder keeps it (issue 22).
func TestPutSubscriptionRefusesAnotherUsersEndpointWithOtherKeys(t *testing.T) {
	st := storetest.Open(t, store.Config{})
	ctx := t.Context()
	const shared = "https://push.example/shared"
	if _, err := st.PutSubscription(ctx, alice, subscriptionJSON(shared), time.Time{}); err != nil {
		t.Fatal(err)
	}
	otherKeys := json.RawMessage(fmt.Sprintf(`{"endpoint": %q, "keys": {"p256dh": "BOtherKeyOtherKeyOtherKeyOtherKeyOtherKeyOtherKeyOtherKeyOtherKeyOtherKeyOtherKeyOtherKeyO", "auth": "b3RoZXJhdXRoc2VjcmV0"}}`, shared))
	if _, err := st.PutSubscription(ctx, bob, otherKeys, time.Time{}); !errors.Is(err, store.ErrEndpointTaken) {
		t.Fatalf("bob registering alice's endpoint with his keys: err = %v, want ErrEndpointTaken", err)
	}
	if got := endpoints(t, st, alice); len(got) != 1 || got[0] != shared {
		t.Errorf("alice has %v after the refused takeover", got)
	}
	if got := endpoints(t, st, bob); len(got) != 0 {
		t.Errorf("bob has %v", got)
	}
	// The holder may change its own keys.
	if _, err := st.PutSubscription(ctx, alice, otherKeys, time.Time{}); err != nil {
		t.Fatalf("alice re-registering with new keys: %v", err)
	}
}

var atRestShape = regexp.MustCompile(`^[0-9a-f]{32}:[0-9a-f]{32}:([0-9a-f]{2})+$`)

func TestSubscriptionsAreSealedAtRest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "amsg.db")
	st := storetest.Open(t, store.Config{Path: path})
	const endpoint = "https://push.example/sealed-endpoint-7f3a"
	sent := subscriptionJSON(endpoint)
	if _, err := st.PutSubscription(t.Context(), alice, sent, time.Time{}); err != nil {
		t.Fatal(err)
	}
	var sealed string
	var hash []byte
	if err := rawDB(t, path).QueryRow("SELECT subscription, endpoint_sha256 FROM subscriptions").Scan(&sealed, &hash); err != nil {
		t.Fatal(err)
	}
	if !atRestShape.MatchString(sealed) {
		t.Fatalf("stored subscription %q is not hex(iv16):hex(tag16):hex(ct)", sealed)
	}
	for _, secret := range []string{endpoint, "sealed-endpoint", "tBHItJI5svbpez7KI4CCXg"} {
		if strings.Contains(sealed, secret) {
			t.Errorf("stored subscription contains %q in clear", secret)
		}
	}
	if want := sha256.Sum256([]byte(endpoint)); string(hash) != string(want[:]) {
		t.Errorf("endpoint_sha256 = %x, want %x", hash, want)
	}
	// The standard's at-rest format under the user key: upstream tools can read it.
	plaintext, err := userKey(t, alice).OpenAtRest(sealed)
	if err != nil {
		t.Fatal(err)
	}
	var stored, original map[string]any
	if err := json.Unmarshal(plaintext, &stored); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(sent, &original); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(stored) != fmt.Sprint(original) {
		t.Errorf("stored object %v, want the object as sent %v (unknown fields too)", stored, original)
	}
	if _, err := userKey(t, bob).OpenAtRest(sealed); !errors.Is(err, usercrypt.ErrDecrypt) {
		t.Errorf("another user's key opened the row: %v", err)
	}
}

func TestPutSubscriptionRejectsBadJSON(t *testing.T) {
	st := storetest.New(t)
	tests := []struct{ name, body string }{
		{"not JSON", `{"endpoint":`},
		{"array", `[{"endpoint":"https://push.example/a"}]`},
		{"null", `null`},
		{"no endpoint", `{"keys":{}}`},
		{"blank endpoint", `{"endpoint":"  "}`},
		{"endpoint not a string", `{"endpoint":42}`},
		{"too large", `{"endpoint":"https://push.example/` + strings.Repeat("a", store.MaxSubscriptionBytes) + `"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := st.PutSubscription(t.Context(), alice, json.RawMessage(tt.body), time.Time{}); !errors.Is(err, store.ErrInvalidSubscription) {
				t.Fatalf("PutSubscription = %v, want ErrInvalidSubscription", err)
			}
		})
	}
	if got := endpoints(t, st, alice); len(got) != 0 {
		t.Errorf("rejected subscriptions were stored: %v", got)
	}
}

// DevicesOf reads several users' devices at once, each user's as Devices
// does, leaves out users without any and refuses more users than it
// allows.
func TestDevicesOfReadsEachUsersDevicesAsDevicesDoes(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	for _, sub := range []struct{ user, endpoint string }{
		{alice, "https://push.example/phone"}, {bob, "https://push.example/bob"}, {alice, "https://push.example/laptop"},
	} {
		clk.Add(time.Minute)
		if _, err := st.PutSubscription(ctx, sub.user, subscriptionJSON(sub.endpoint), time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.DevicesOf(ctx, []string{alice, "carol", bob, alice})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got["carol"]; ok || len(got) != 2 {
		t.Errorf("DevicesOf = %d users, carol's %v; want alice's and bob's only", len(got), got["carol"])
	}
	for _, user := range []string{alice, bob} {
		want, err := st.Devices(ctx, user)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got[user], want) {
			t.Errorf("DevicesOf(%s) = %+v\nwant Devices' %+v", user, got[user], want)
		}
	}
	if eps := got[alice]; len(eps) != 2 || eps[0].Subscription.Endpoint != "https://push.example/laptop" {
		t.Errorf("alice's devices %+v, want the laptop, the most recent, first", eps)
	}
	tooMany := make([]string, store.MaxDevicesOfUsers+1)
	for i := range tooMany {
		tooMany[i] = fmt.Sprint("user", i)
	}
	if _, err := st.DevicesOf(ctx, tooMany); err == nil {
		t.Errorf("DevicesOf of %d users succeeded, want an error past %d", len(tooMany), store.MaxDevicesOfUsers)
	}
}

func TestDevicesSkipsRowsThatDoNotDecrypt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "amsg.db")
	ctx := t.Context()
	st := storetest.Open(t, store.Config{Path: path})
	if _, err := st.PutSubscription(ctx, alice, subscriptionJSON("https://push.example/old"), time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// The row as another master key would have sealed it (the store refuses
	// to open under a changed key, so a row like it comes from a bad restore).
	other, err := usercrypt.NewKeyring(strings.Repeat("b", 64))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rawDB(t, path).Exec(`UPDATE subscriptions SET subscription = ?`,
		other.UserKey(alice).SealAtRest(subscriptionJSON("https://push.example/old"))); err != nil {
		t.Fatal(err)
	}

	logger, logs := logBuffer()
	st = storetest.Open(t, store.Config{Path: path, Logger: logger})
	if _, err := st.PutSubscription(ctx, alice, subscriptionJSON("https://push.example/new"), time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got := endpoints(t, st, alice); len(got) != 1 || got[0] != "https://push.example/new" {
		t.Fatalf("Devices = %v, want only the device sealed under the current key", got)
	}
	if got, err := st.DevicesOf(ctx, []string{alice}); err != nil || len(got[alice]) != 1 || got[alice][0].Subscription.Endpoint != "https://push.example/new" {
		t.Fatalf("DevicesOf = %v, %v; want only the device sealed under the current key", got, err)
	}
	if !strings.Contains(logs.String(), "does not decrypt") {
		t.Errorf("the skipped row was not logged:\n%s", logs)
	}
	if strings.Contains(logs.String(), "push.example/old") {
		t.Errorf("the log names the endpoint:\n%s", logs)
	}
	sum, err := st.SubscriptionSummary(ctx, alice)
	if err != nil || sum.Devices != 1 {
		t.Errorf("SubscriptionSummary = %+v, %v; want 1 device", sum, err)
	}
}

func TestSubscriptionSummary(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	sum, err := st.SubscriptionSummary(ctx, alice)
	if err != nil || sum != (store.SubscriptionSummary{}) {
		t.Fatalf("summary of no devices = %+v, %v; want the zero summary", sum, err)
	}
	for _, name := range []string{"a", "b", "c"} {
		if _, err := st.PutSubscription(ctx, alice, subscriptionJSON("https://push.example/"+name), time.Time{}); err != nil {
			t.Fatal(err)
		}
		clk.Add(time.Second)
	}
	sum, err = st.SubscriptionSummary(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	want := store.SubscriptionSummary{Exists: true, Devices: 3, Endpoint: "https://push.example/c", UpdatedAt: clk.now.Add(-time.Second)}
	if sum != want {
		t.Errorf("summary = %+v, want %+v", sum, want)
	}
}

func TestDeleteSubscriptions(t *testing.T) {
	st := storetest.New(t)
	ctx := t.Context()
	put := func(userID, endpoint string) int64 {
		d, err := st.PutSubscription(ctx, userID, subscriptionJSON(endpoint), time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		return d.ID
	}
	a1 := put(alice, "https://push.example/a1")
	put(alice, "https://push.example/a2")
	put(alice, "https://push.example/a3")
	put(alice, "https://push.example/a4")
	b1 := put(bob, "https://push.example/b1")

	if err := st.DeleteDevice(ctx, alice, b1); err != nil {
		t.Fatal(err)
	}
	if got := endpoints(t, st, bob); len(got) != 1 {
		t.Fatalf("DeleteDevice with alice's id deleted bob's device")
	}
	if err := st.DeleteDevice(ctx, alice, a1); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteDevice(ctx, alice, a1); err != nil {
		t.Fatalf("deleting a device twice: %v", err)
	}
	if deleted, err := st.DeleteSubscription(ctx, alice, "https://push.example/a2"); err != nil || !deleted {
		t.Fatalf("DeleteSubscription(a2) = %v, %v; want true", deleted, err)
	}
	if deleted, err := st.DeleteSubscription(ctx, alice, "https://push.example/b1"); err != nil || deleted {
		t.Fatalf("DeleteSubscription of bob's endpoint for alice = %v, %v; want false", deleted, err)
	}
	if got := endpoints(t, st, alice); strings.Join(got, " ") != "https://push.example/a4 https://push.example/a3" &&
		strings.Join(got, " ") != "https://push.example/a3 https://push.example/a4" {
		t.Fatalf("alice has %v, want a3 and a4", got)
	}
	if n, err := st.DeleteSubscriptions(ctx, alice); err != nil || n != 2 {
		t.Fatalf("DeleteSubscriptions = %d, %v; want 2", n, err)
	}
	if n, err := st.DeleteSubscriptions(ctx, alice); err != nil || n != 0 {
		t.Fatalf("DeleteSubscriptions again = %d, %v; want 0", n, err)
	}
	if got := endpoints(t, st, bob); len(got) != 1 {
		t.Fatalf("bob lost his device: %v", got)
	}
}

func TestMaxDevicesPerUserEvictsLeastRecentlyUpdated(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now, MaxDevicesPerUser: 3})
	ctx := t.Context()
	for _, name := range []string{"1", "2", "3", "4"} {
		if _, err := st.PutSubscription(ctx, alice, subscriptionJSON("https://push.example/"+name), time.Time{}); err != nil {
			t.Fatal(err)
		}
		clk.Add(time.Second)
	}
	if got := strings.Join(endpoints(t, st, alice), " "); got != "https://push.example/4 https://push.example/3 https://push.example/2" {
		t.Fatalf("devices %s, want 4 3 2", got)
	}
	// A client clock far in the past must not evict the device just registered.
	if _, err := st.PutSubscription(ctx, alice, subscriptionJSON("https://push.example/5"), time.UnixMilli(1)); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(endpoints(t, st, alice), " "); got != "https://push.example/4 https://push.example/3 https://push.example/5" {
		t.Fatalf("devices %s, want 4 3 5", got)
	}
}

// Many goroutines writing and reading at once must queue on the single
// writer, never fail with SQLITE_BUSY.
func TestConcurrentWritersAndReaders(t *testing.T) {
	st := storetest.Open(t, store.Config{MaxDevicesPerUser: 1000})
	ctx := t.Context()
	const workers, rounds = 16, 20
	users := []string{alice, bob}
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds*3)
	for w := range workers {
		wg.Go(func() {
			user := users[w%len(users)]
			for r := range rounds {
				if _, err := st.PutSubscription(ctx, user, subscriptionJSON(fmt.Sprintf("https://push.example/%d/%d", w, r)), time.Time{}); err != nil {
					errs <- err
				}
				if _, err := st.Devices(ctx, user); err != nil {
					errs <- err
				}
				if err := st.RecordDeliveries(ctx, push.Bookkeeping{Attempts: []push.Attempt{{MessageID: fmt.Sprint(w), UserID: user, Try: r + 1, Outcome: push.OutcomeDelivered}}}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent call failed: %v", err)
	}
	for _, user := range users {
		if n := len(endpoints(t, st, user)); n != workers/len(users)*rounds {
			t.Errorf("%s has %d devices, want %d", user, n, workers/len(users)*rounds)
		}
	}
	attempts, err := st.Attempts(ctx, "3")
	if err != nil || len(attempts) != rounds {
		t.Errorf("Attempts of worker 3 = %d, %v; want %d", len(attempts), err, rounds)
	}
}

func BenchmarkPutSubscription(b *testing.B) {
	st := storetest.New(b)
	ctx := b.Context()
	sub := subscriptionJSON("https://push.example/bench")
	for b.Loop() {
		if _, err := st.PutSubscription(ctx, alice, sub, time.Time{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDevices(b *testing.B) {
	st := storetest.New(b)
	ctx := b.Context()
	for i := range 5 {
		if _, err := st.PutSubscription(ctx, alice, subscriptionJSON(fmt.Sprintf("https://push.example/%d", i)), time.Time{}); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		devices, err := st.Devices(ctx, alice)
		if err != nil || len(devices) != 5 {
			b.Fatalf("Devices = %d, %v", len(devices), err)
		}
	}
}

// The courier's store, which *store.Store must keep matching.
var _ courier.Store = (*store.Store)(nil)

func FuzzPutSubscription(f *testing.F) {
	f.Add([]byte(subscriptionJSON("https://push.example/fuzz")))
	f.Add([]byte(`{"endpoint":"x"}`))
	f.Add([]byte(`{"endpoint":"a","endpoint":"b","keys":{"auth":""}}`))
	f.Add([]byte(`{"endpoint":"a","keys":5}`))
	f.Add([]byte(`{"endpoint":"\ud800"}`))
	f.Add([]byte(`[]`))
	st := storetest.New(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		put, err := st.PutSubscription(t.Context(), alice, body, time.Time{})
		if err != nil {
			if !errors.Is(err, store.ErrInvalidSubscription) {
				t.Fatalf("PutSubscription(%q) = %v, want ErrInvalidSubscription or success", body, err)
			}
			return
		}
		devices, err := st.Devices(t.Context(), alice)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range devices {
			if d.ID == put.ID {
				if fmt.Sprint(d.Subscription) != fmt.Sprint(put.Subscription) {
					t.Fatalf("stored %+v, read back %+v", put.Subscription, d.Subscription)
				}
				return
			}
		}
		t.Fatalf("device %d stored from %q is not listed", put.ID, body)
	})
}
