package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"amsg/push"
	"amsg/push/courier"
	"amsg/push/pushtest"
	"amsg/store/storetest"
)

// subscriptionServer is a server whose pushes reach a fake push service the
// test can script and read.
func subscriptionServer(t *testing.T, cfg Config) (*Server, *pushtest.Server) {
	t.Helper()
	st := storetest.New(t)
	deliveries, fake := newTestCourier(t, st, courier.PolicyUpstream)
	return newTestServer(t, cfg, Deps{Store: st, Courier: deliveries}), fake
}

// putSubscription sends PUT /push-subscription as amsg-client does.
func putSubscription(t *testing.T, s *Server, userID string, body any) response {
	t.Helper()
	return serve(s, encryptedRequest(t, http.MethodPut, "/api/v1/push-subscription", userID, body))
}

func decodeData(t testing.TB, body string, v any) {
	t.Helper()
	var env struct {
		Success bool            `json:"success"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &env); err != nil || !env.Success {
		t.Fatalf("not a success envelope: %s", body)
	}
	if err := json.Unmarshal(env.Data, v); err != nil {
		t.Fatalf("data %s: %v", env.Data, err)
	}
}

type subscriptionState struct {
	Exists    bool    `json:"exists"`
	UpdatedAt *int64  `json:"updatedAt"`
	Endpoint  *string `json:"endpoint"`
	Devices   int     `json:"devices"`
}

func getSubscription(t *testing.T, s *Server, userID string) subscriptionState {
	t.Helper()
	got := do(t, s, http.MethodGet, "/api/v1/push-subscription", map[string]string{"X-User-Id": userID})
	var state subscriptionState
	decodeData(t, got.body, &state)
	return state
}

func TestPushSubscriptionDevices(t *testing.T) {
	s, fake := subscriptionServer(t, Config{AllowPrivateEndpoints: true})
	if state := getSubscription(t, s, testUserID); state.Exists || state.UpdatedAt != nil || state.Endpoint != nil || state.Devices != 0 {
		t.Errorf("before any PUT: %+v", state)
	}

	phone, laptop := fake.Subscribe(), fake.Subscribe()
	got := putSubscription(t, s, testUserID, map[string]any{"subscription": phone, "updatedAt": 1_700_000_000_000})
	var put struct {
		UpdatedAt int64 `json:"updatedAt"`
		DeviceID  int64 `json:"deviceId"`
	}
	decodeData(t, got.body, &put)
	if put.UpdatedAt != 1_700_000_000_000 || put.DeviceID == 0 {
		t.Errorf("PUT phone = %s", got.body)
	}
	// An integral number in exponent form is an integer, as in JavaScript.
	got = putSubscription(t, s, testUserID, map[string]any{"subscription": laptop, "updatedAt": json.RawMessage("1.7e12")})
	decodeData(t, got.body, &put)
	if put.UpdatedAt != 1_700_000_000_000 {
		t.Errorf("PUT with updatedAt 1.7e12 = %s", got.body)
	}
	got = putSubscription(t, s, testUserID, map[string]any{"subscription": laptop})
	decodeData(t, got.body, &put)
	if put.UpdatedAt <= 1_700_000_000_000 {
		t.Errorf("PUT without updatedAt should stamp now: %s", got.body)
	}
	// The same endpoint again is the same device, refreshed.
	putSubscription(t, s, testUserID, map[string]any{"subscription": laptop})

	state := getSubscription(t, s, testUserID)
	if !state.Exists || state.Devices != 2 || state.Endpoint == nil || *state.Endpoint != laptop.Endpoint {
		t.Errorf("two devices: %+v", state)
	}
	if strings.Contains(do(t, s, http.MethodGet, "/api/v1/push-subscription", map[string]string{"X-User-Id": testUserID}).body, laptop.Keys.Auth) {
		t.Error("GET leaks the subscription keys")
	}

	// DELETE ?endpoint= removes one device; DELETE removes the rest.
	got = do(t, s, http.MethodDelete, "/api/v1/push-subscription?endpoint="+laptop.Endpoint, map[string]string{"X-User-Id": testUserID})
	if got.body != `{"success":true,"data":{"deleted":true,"count":1}}`+"\n" {
		t.Errorf("DELETE one = %s", got.body)
	}
	if state := getSubscription(t, s, testUserID); state.Devices != 1 || *state.Endpoint != phone.Endpoint {
		t.Errorf("after deleting the laptop: %+v", state)
	}
	got = do(t, s, http.MethodDelete, "/api/v1/push-subscription", map[string]string{"X-User-Id": testUserID})
	if got.body != `{"success":true,"data":{"deleted":true,"count":1}}`+"\n" {
		t.Errorf("DELETE all = %s", got.body)
	}
	got = do(t, s, http.MethodDelete, "/api/v1/push-subscription", map[string]string{"X-User-Id": testUserID})
	if got.body != `{"success":true,"data":{"deleted":false,"count":0}}`+"\n" {
		t.Errorf("DELETE again = %s", got.body)
	}
}

func TestPushSubscriptionValidation(t *testing.T) {
	s, fake := subscriptionServer(t, Config{AllowPrivateEndpoints: true})
	strict, _ := subscriptionServer(t, Config{AllowPrivateEndpoints: false})
	good := fake.Subscribe()
	with := func(edit func(*push.Subscription)) push.Subscription {
		sub := good
		edit(&sub)
		return sub
	}
	for _, c := range []struct {
		name   string
		server *Server
		body   any
		code   string
		reason string
	}{
		{"no subscription", s, map[string]any{}, "INVALID_PUSH_SUBSCRIPTION", ""},
		{"subscription an array", s, map[string]any{"subscription": []int{1}}, "INVALID_PUSH_SUBSCRIPTION", ""},
		{"endpoint not a string", s, map[string]any{"subscription": map[string]any{"endpoint": 5}}, "INVALID_PUSH_SUBSCRIPTION", ""},
		{"blank endpoint", s, map[string]any{"subscription": map[string]any{"endpoint": "  "}}, "INVALID_PUSH_SUBSCRIPTION", ""},
		{"updatedAt negative", s, map[string]any{"subscription": good, "updatedAt": -1}, "INVALID_UPDATED_AT", ""},
		{"updatedAt a string", s, map[string]any{"subscription": good, "updatedAt": "1"}, "INVALID_UPDATED_AT", ""},
		{"updatedAt fractional", s, map[string]any{"subscription": good, "updatedAt": 1.5}, "INVALID_UPDATED_AT", ""},
		{"updatedAt beyond 2^53", s, map[string]any{"subscription": good, "updatedAt": 1e16}, "INVALID_UPDATED_AT", ""},
		{"short p256dh", s, map[string]any{"subscription": with(func(s *push.Subscription) { s.Keys.P256dh = "BAAA" })}, "INVALID_PUSH_SUBSCRIPTION", "keys.p256dh"},
		{"missing auth", s, map[string]any{"subscription": with(func(s *push.Subscription) { s.Keys.Auth = "" })}, "INVALID_PUSH_SUBSCRIPTION", "keys.auth"},
		{"zombie endpoint", s, map[string]any{"subscription": with(func(s *push.Subscription) {
			s.Endpoint = "https://permanently-removed.invalid/fcm/send/x"
		})}, "INVALID_PUSH_SUBSCRIPTION", "endpoint"},
		{"loopback in production", strict, map[string]any{"subscription": good}, "INVALID_PUSH_SUBSCRIPTION", "endpoint"},
		{"http in production", strict, map[string]any{"subscription": with(func(s *push.Subscription) {
			s.Endpoint = "http://push.example/x"
		})}, "INVALID_PUSH_SUBSCRIPTION", "endpoint"},
	} {
		got := putSubscription(t, c.server, testUserID, c.body)
		if got.status != http.StatusBadRequest || !strings.Contains(got.body, `"code":"`+c.code+`"`) ||
			(c.reason != "" && !strings.Contains(got.body, `"field":"`+c.reason+`"`)) {
			t.Errorf("%s: %d %s, want 400 %s (%s)", c.name, got.status, got.body, c.code, c.reason)
		}
	}
	if state := getSubscription(t, s, testUserID); state.Exists {
		t.Errorf("a refused subscription was stored: %+v", state)
	}
}

// TestTestPushPrunesGoneDevices is issue 3's first "done when" over HTTP: two
// devices, the first answers 410; the second decrypts the push, the first is
// deleted, and the delivery log has both attempts.
func TestTestPushPrunesGoneDevices(t *testing.T) {
	s, fake := subscriptionServer(t, Config{AllowPrivateEndpoints: true})
	gone, live := fake.Subscribe(), fake.Subscribe()
	putSubscription(t, s, testUserID, map[string]any{"subscription": gone, "updatedAt": 1})
	putSubscription(t, s, testUserID, map[string]any{"subscription": live, "updatedAt": 2})
	fake.Respond(gone, 1, pushtest.Response{Status: http.StatusGone})

	got := post(s, "/api/v1/test-push", "", map[string]string{"X-User-Id": testUserID})
	var res struct {
		MessageID string `json:"messageId"`
		Delivered int    `json:"delivered"`
		Devices   []struct {
			Outcome push.Outcome `json:"outcome"`
			Status  int          `json:"status"`
		} `json:"devices"`
	}
	decodeData(t, got.body, &res)
	if res.Delivered != 1 || len(res.Devices) != 2 {
		t.Fatalf("test-push = %s", got.body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pushes, err := fake.WaitPushes(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if pushes[0].Endpoint != live.Endpoint {
		t.Errorf("delivered to %s, want the live device", pushes[0].Endpoint)
	}
	decoded, err := push.Decode(pushes[0].JSON)
	if err != nil {
		t.Fatalf("the decrypted push does not decode: %v\n%s", err, pushes[0].JSON)
	}
	if c, ok := decoded.(*push.ContentPush); !ok || c.MessageID != res.MessageID || c.Message == "" || c.Source != push.SourceInstant {
		t.Errorf("decrypted push = %s", pushes[0].JSON)
	}

	if state := getSubscription(t, s, testUserID); state.Devices != 1 || *state.Endpoint != live.Endpoint {
		t.Errorf("the gone device was not pruned: %+v", state)
	}
	attempts, err := s.deps.Store.Attempts(ctx, res.MessageID)
	if err != nil {
		t.Fatal(err)
	}
	outcomes := map[push.Outcome]int{}
	for _, a := range attempts {
		outcomes[a.Outcome]++
	}
	if len(attempts) != 2 || outcomes[push.OutcomeGone] != 1 || outcomes[push.OutcomeDelivered] != 1 {
		t.Errorf("delivery log = %+v", attempts)
	}

	// With no device left to push to, the standard's 409.
	do(t, s, http.MethodDelete, "/api/v1/push-subscription", map[string]string{"X-User-Id": testUserID})
	if got := post(s, "/api/v1/test-push", "", map[string]string{"X-User-Id": testUserID}); got.status != http.StatusConflict ||
		!strings.Contains(got.body, "PUSH_SUBSCRIPTION_MISSING") {
		t.Errorf("no devices: %d %s", got.status, got.body)
	}
}

// FuzzPutSubscription feeds arbitrary decrypted JSON to PUT
// /push-subscription: a 200 or one of the standard's 400 codes, never 500.
func FuzzPutSubscription(f *testing.F) {
	f.Add(`{"subscription":{"endpoint":"http://127.0.0.1:1/p/x","keys":{"p256dh":"BAAA","auth":"AAAA"}}}`)
	f.Add(`{"subscription":{"endpoint":"https://fcm.googleapis.com/fcm/send/x"},"updatedAt":1}`)
	f.Add(`{"subscription":null,"updatedAt":null}`)
	f.Add(`{"subscription":{"endpoint":"\u0000"},"updatedAt":1e400}`)
	f.Add(`{}`)
	s := newTestServer(f, Config{AllowPrivateEndpoints: true}, Deps{})
	key := browserUserKey(testUserID)
	f.Fuzz(func(t *testing.T, plaintext string) {
		body := browserEncryptRaw(t, key, plaintext)
		got := serve(s, newRequest(http.MethodPut, "/api/v1/push-subscription", body, encryptedHeaders(testUserID)))
		if got.status != http.StatusOK && got.status != http.StatusBadRequest {
			t.Fatalf("%q: %d %s", plaintext, got.status, got.body)
		}
	})
}

// A device belongs to its subscription (issue 22): another user registering
// the endpoint with other keys gets 409 and the holder keeps its device and
// its pushes; the same browser (the same keys) may move to another user.
func TestPutSubscriptionRefusesTakingAnotherUsersDevice(t *testing.T) {
	s, fake := subscriptionServer(t, Config{AllowPrivateEndpoints: true})
	const thief, newOwner = "123e4567-e89b-42d3-a456-426614174000", "9b2f1c3e-4d5a-4b6c-8d7e-0f1a2b3c4d5e"
	victim := fake.Subscribe()
	putSubscription(t, s, testUserID, map[string]any{"subscription": victim})
	stolen := fake.Subscribe()
	stolen.Endpoint = victim.Endpoint
	got := putSubscription(t, s, thief, map[string]any{"subscription": stolen})
	if got.status != http.StatusConflict || !strings.Contains(got.body, `"PUSH_SUBSCRIPTION_CONFLICT"`) {
		t.Fatalf("taking another user's endpoint: %d %s", got.status, got.body)
	}
	if devices := listDevices(t, s, testUserID); len(devices) != 1 {
		t.Fatalf("the victim has %+v after the refused takeover", devices)
	}
	if devices := listDevices(t, s, thief); len(devices) != 0 {
		t.Fatalf("the thief has %+v", devices)
	}
	// The victim's pushes still reach the victim's device.
	if got := post(s, "/api/v1/test-push", "{}", map[string]string{"X-User-Id": testUserID, "Content-Type": "application/json"}); got.status != http.StatusOK {
		t.Fatalf("test push: %d %s", got.status, got.body)
	}
	var opened int
	for _, m := range fake.Messages() {
		if m.Endpoint == victim.Endpoint && m.Plaintext != nil {
			opened++
		}
	}
	if opened != 1 {
		t.Errorf("the victim's device opened %d pushes, want 1", opened)
	}
	// The same browser, with its own keys, may move to another user.
	if got := putSubscription(t, s, newOwner, map[string]any{"subscription": victim}); got.status != http.StatusOK {
		t.Fatalf("moving with the same keys: %d %s", got.status, got.body)
	}
	if devices := listDevices(t, s, testUserID); len(devices) != 0 {
		t.Errorf("the endpoint stayed with the first user: %+v", devices)
	}
}
