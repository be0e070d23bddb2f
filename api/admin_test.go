package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"amsg/push"
	"amsg/push/courier"
	"amsg/push/pushtest"
	"amsg/store"
	"amsg/store/storetest"
)

const testAdminToken = "operator-secret-token"

func adminServer(t testing.TB) (*Server, *pushtest.Server) {
	t.Helper()
	st := storetest.New(t)
	deliveries, fake := newTestCourier(t, st, courier.PolicyUpstream)
	return newTestServer(t, Config{AdminToken: testAdminToken, AllowPrivateEndpoints: true}, Deps{Store: st, Courier: deliveries}), fake
}

func adminDo(s http.Handler, method, path, body string) response {
	return send(s, method, path, body, map[string]string{"Authorization": "Bearer " + testAdminToken, "Accept-Language": "en"})
}

func registerDevice(t *testing.T, s *Server, fake *pushtest.Server, userID string) push.Subscription {
	t.Helper()
	sub := fake.Subscribe()
	if r := putSubscription(t, s, userID, map[string]any{"subscription": sub}); r.status != http.StatusOK {
		t.Fatalf("PUT /push-subscription: %d %s", r.status, r.body)
	}
	return sub
}

func TestAdminRoutesNeedTheToken(t *testing.T) {
	off := newTestServer(t, Config{}, Deps{})
	if r := adminDo(off, http.MethodGet, "/api/v1/admin/users", ""); r.status != http.StatusNotFound ||
		!strings.Contains(r.body, `"NOT_FOUND"`) {
		t.Fatalf("without AMSG_ADMIN_TOKEN: %d %s, want 404 NOT_FOUND", r.status, r.body)
	}
	s, _ := adminServer(t)
	for _, auth := range []string{"", "Bearer wrong", "Bearer " + testAdminToken + "x", testAdminToken, "Basic " + testAdminToken} {
		r := send(s, http.MethodGet, "/api/v1/admin/users", "", map[string]string{"Authorization": auth, "Accept-Language": "en"})
		want := `{"success":false,"error":{"code":"INVALID_ADMIN_TOKEN","message":"Missing or invalid operator token"}}` + "\n"
		if r.status != http.StatusUnauthorized || r.body != want {
			t.Errorf("Authorization %q: %d %s, want 401 INVALID_ADMIN_TOKEN", auth, r.status, r.body)
		}
	}
	if r := adminDo(s, http.MethodGet, "/api/v1/admin/users", ""); r.status != http.StatusOK {
		t.Fatalf("with the token: %d %s", r.status, r.body)
	}
}

func TestAdminSendDeliversAContentPush(t *testing.T) {
	s, fake := adminServer(t)
	registerDevice(t, s, fake, testUserID)
	registerDevice(t, s, fake, testUserID)

	r := adminDo(s, http.MethodPost, "/api/v1/admin/send", `{"userId":"`+testUserID+`","message":"hello","title":"Ops","metadata":{"k":1}}`)
	if r.status != http.StatusOK {
		t.Fatalf("send: %d %s", r.status, r.body)
	}
	var res adminSendResult
	decodeData(t, r.body, &res)
	if !res.Delivered || len(res.Devices) != 2 || res.Devices[0].Outcome != push.OutcomeDelivered || res.Devices[1].Outcome != push.OutcomeDelivered ||
		res.Devices[0].Status != http.StatusCreated || res.Devices[0].PushHost == "" {
		t.Fatalf("send result = %+v, want two delivered devices", res)
	}
	pushes := fake.Pushes()
	if len(pushes) != 2 {
		t.Fatalf("%d pushes arrived, want 2", len(pushes))
	}
	var got map[string]any
	if err := json.Unmarshal(pushes[0].JSON, &got); err != nil {
		t.Fatal(err)
	}
	if got["messageKind"] != "content" || got["message"] != "hello" || got["title"] != "Ops" || got["messageId"] != res.MessageID ||
		got["metadata"].(map[string]any)["k"] != 1.0 {
		t.Fatalf("decrypted push = %v", got)
	}
}

func TestAdminSendErrors(t *testing.T) {
	s, _ := adminServer(t)
	for _, tc := range []struct{ body, code string }{
		{`{"userId":"` + testUserID + `","message":"hi"}`, "PUSH_SUBSCRIPTION_MISSING"},
		{`{"userId":"","message":"hi"}`, "INVALID_PARAMETERS"},
		{`{"userId":"u","message":"  "}`, "INVALID_PARAMETERS"},
		{`{"userId":"u","message":"hi","metadata":[1]}`, "INVALID_PARAMETERS"},
		{`{"userId":"u","message":"hi","colour":"red"}`, "INVALID_PAYLOAD_FORMAT"},
		{`not json`, "INVALID_PAYLOAD_FORMAT"},
		{`{"userId":"u","message":"` + strings.Repeat("x", maxAdminMessageBytes+1) + `"}`, "INVALID_PARAMETERS"},
	} {
		r := adminDo(s, http.MethodPost, "/api/v1/admin/send", tc.body)
		if r.status/100 != 4 || !strings.Contains(r.body, `"code":"`+tc.code+`"`) {
			t.Errorf("body %.60s: %d %s, want %s", tc.body, r.status, r.body, tc.code)
		}
	}
}

func TestAdminReadsAndDeleteUser(t *testing.T) {
	s, fake := adminServer(t)
	sub := registerDevice(t, s, fake, testUserID)
	fake.Respond(sub, 1, pushtest.Response{Status: http.StatusGone})
	if r := adminDo(s, http.MethodPost, "/api/v1/admin/send", `{"userId":"`+testUserID+`","message":"hi"}`); r.status != http.StatusOK ||
		!strings.Contains(r.body, `"outcome":"gone"`) {
		t.Fatalf("send to a gone device: %d %s", r.status, r.body)
	}

	r := adminDo(s, http.MethodGet, "/api/v1/admin/users", "")
	var users struct{ Users []userJSON }
	decodeData(t, r.body, &users)
	if len(users.Users) != 1 || users.Users[0].UserID != testUserID || users.Users[0].Devices != 0 {
		t.Fatalf("users = %s", r.body)
	}
	r = adminDo(s, http.MethodGet, "/api/v1/admin/deliveries/failed", "")
	if r.status != http.StatusOK || !strings.Contains(r.body, `"outcome":"gone"`) || !strings.Contains(r.body, `"status":410`) {
		t.Fatalf("failed deliveries = %d %s", r.status, r.body)
	}
	r = adminDo(s, http.MethodGet, "/api/v1/admin/deliveries/per-minute?hours=1", "")
	if r.status != http.StatusOK || !strings.Contains(r.body, `"outcomes":{"gone":1}`) {
		t.Fatalf("per minute = %d %s", r.status, r.body)
	}
	if r = adminDo(s, http.MethodGet, "/api/v1/admin/tasks?status=nope", ""); r.status != http.StatusBadRequest {
		t.Fatalf("tasks with a bad status: %d %s", r.status, r.body)
	}
	if r = adminDo(s, http.MethodGet, "/api/v1/admin/users?limit=0", ""); r.status != http.StatusBadRequest {
		t.Fatalf("users limit=0: %d %s", r.status, r.body)
	}

	r = adminDo(s, http.MethodDelete, "/api/v1/admin/users/"+testUserID, "")
	if r.status != http.StatusOK || !strings.Contains(r.body, `"deliveryLog":1`) {
		t.Fatalf("delete user: %d %s", r.status, r.body)
	}
	if r = adminDo(s, http.MethodDelete, "/api/v1/admin/users/"+testUserID, ""); r.status != http.StatusNotFound ||
		!strings.Contains(r.body, "USER_NOT_FOUND") {
		t.Fatalf("second delete: %d %s", r.status, r.body)
	}
}

func TestAdminBroadcastReachesEveryUserAndResumes(t *testing.T) {
	s, fake := adminServer(t)
	users := []string{testUserID, "123e4567-e89b-42d3-a456-426614174000", "223e4567-e89b-42d3-a456-426614174000"}
	for _, u := range users[:2] {
		registerDevice(t, s, fake, u)
	}
	r := adminDo(s, http.MethodPost, "/api/v1/admin/broadcasts", `{"all":true,"message":"maintenance at 22:00","ratePerSecond":200}`)
	if r.status != http.StatusAccepted {
		t.Fatalf("broadcast: %d %s", r.status, r.body)
	}
	var b broadcastJSON
	decodeData(t, r.body, &b)
	s.deps.Broadcasts.Wait()
	if len(fake.Pushes()) != 2 {
		t.Fatalf("%d pushes, want one per user", len(fake.Pushes()))
	}
	r = adminDo(s, http.MethodGet, "/api/v1/admin/broadcasts/"+b.ID, "")
	decodeData(t, r.body, &b)
	if b.Status != "done" || b.Sent != 2 || b.Failed != 0 {
		t.Fatalf("broadcast after the run = %+v", b)
	}

	// A listed broadcast whose process stopped after the first user resumes
	// after it: the first user gets nothing twice, the user without a device
	// counts as failed.
	r = adminDo(s, http.MethodPost, "/api/v1/admin/broadcasts", `{"userIds":["`+strings.Join(users, `","`)+`"],"message":"again","ratePerSecond":200}`)
	decodeData(t, r.body, &b)
	s.deps.Broadcasts.Wait()
	if len(fake.Pushes()) != 4 {
		t.Fatalf("%d pushes after the second broadcast, want 4", len(fake.Pushes()))
	}
	ctx := t.Context()
	if err := s.deps.Store.AdvanceBroadcast(ctx, b.ID, users[0], 0, 0, "running"); err != nil {
		t.Fatal(err)
	}
	advanced, err := s.deps.Store.GetBroadcast(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	// One that advanced since the cutoff has a live sender somewhere.
	if err := s.deps.Broadcasts.Resume(ctx, advanced.UpdatedAt.Add(-time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	s.deps.Broadcasts.Wait()
	if got := len(fake.Pushes()); got != 4 {
		t.Fatalf("%d pushes after resuming only idle broadcasts, want 4", got)
	}
	if err := s.deps.Broadcasts.Resume(ctx, advanced.UpdatedAt); err != nil {
		t.Fatal(err)
	}
	s.deps.Broadcasts.Wait()
	if got := len(fake.Pushes()); got != 5 {
		t.Fatalf("%d pushes after resuming, want 5 (only the second user again)", got)
	}
	if r = adminDo(s, http.MethodGet, "/api/v1/admin/broadcasts/nope", ""); r.status != http.StatusNotFound {
		t.Fatalf("unknown broadcast: %d %s", r.status, r.body)
	}
	if r = adminDo(s, http.MethodPost, "/api/v1/admin/broadcasts", `{"all":true,"userIds":["a"],"message":"x"}`); r.status != http.StatusBadRequest {
		t.Fatalf("both all and userIds: %d %s", r.status, r.body)
	}
}

// Issue 22, finding 7: a broadcast resumed after its process died keeps
// the rate it was started with, and sends each user the message id it sent
// before (derived from the broadcast and the user), never a second one.
func TestResumedBroadcastKeepsItsRateAndMessageIDs(t *testing.T) {
	s, fake := adminServer(t)
	users := []string{testUserID, "123e4567-e89b-42d3-a456-426614174000"}
	for _, u := range users {
		registerDevice(t, s, fake, u)
	}
	r := adminDo(s, http.MethodPost, "/api/v1/admin/broadcasts", `{"userIds":["`+strings.Join(users, `","`)+`"],"message":"hi","ratePerSecond":200}`)
	var b broadcastJSON
	decodeData(t, r.body, &b)
	s.deps.Broadcasts.Wait()
	messageIDs := func() map[string][]string {
		out := map[string][]string{}
		for _, p := range fake.Pushes() {
			var m struct {
				MessageID string `json:"messageId"`
			}
			_ = json.Unmarshal(p.JSON, &m)
			out[p.Endpoint] = append(out[p.Endpoint], m.MessageID)
		}
		return out
	}
	first := messageIDs()
	// The process died before it recorded any user: the broadcast is
	// running with its cursor at the start.
	ctx := t.Context()
	if err := s.deps.Store.AdvanceBroadcast(ctx, b.ID, "", 0, 0, "running"); err != nil {
		t.Fatal(err)
	}
	stored, err := s.deps.Store.GetBroadcast(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.deps.Broadcasts.Resume(ctx, stored.UpdatedAt); err != nil {
		t.Fatal(err)
	}
	s.deps.Broadcasts.Wait()
	for endpoint, ids := range messageIDs() {
		if len(ids) != 2 || ids[0] != ids[1] || ids[0] != first[endpoint][0] {
			t.Errorf("%s got message ids %v; a resume must send the same id again", endpoint, ids)
		}
	}
	r = adminDo(s, http.MethodGet, "/api/v1/admin/broadcasts/"+b.ID, "")
	decodeData(t, r.body, &b)
	if b.Rate != 200 || b.Status != "done" {
		t.Errorf("the resumed broadcast: %+v, want ratePerSecond 200, done", b)
	}
	if other := broadcastPushIDs("bc_other", users[0]); other.messageID == first[fake.Pushes()[0].Endpoint][0] {
		t.Error("two broadcasts derive the same message id for one user")
	}
}

// FuzzAdminBodies feeds the operator's two request bodies arbitrary bytes:
// every answer is the JSON envelope with a 2xx or 4xx status, never a 500.
func FuzzAdminBodies(f *testing.F) {
	for _, seed := range []string{
		`{"userId":"u","message":"hi"}`, `{"userId":"u","message":"hi","metadata":{"a":[1,{"b":null}]}}`,
		`{"all":true,"message":"x","ratePerSecond":200}`, `{"userIds":["a","a",""],"message":"x"}`,
		`{"userId":1}`, `[]`, `null`, `{"message":"\u0000"}`, `{"userIds":null,"all":false}`, "",
	} {
		f.Add(seed)
	}
	s, _ := adminServer(f)
	f.Fuzz(func(t *testing.T, body string) {
		for _, path := range []string{"/api/v1/admin/send", "/api/v1/admin/broadcasts"} {
			r := adminDo(s, http.MethodPost, path, body)
			s.deps.Broadcasts.Wait()
			var env struct {
				Success *bool `json:"success"`
			}
			if r.status >= 500 || json.Unmarshal([]byte(r.body), &env) != nil || env.Success == nil {
				t.Fatalf("POST %s %q: %d %s", path, body, r.status, r.body)
			}
		}
	})
}

// A deleted user's devices are gone from the courier's memory too, so a
// scheduled or instant push right after the deletion reaches nobody.
func TestAdminDeletedUserGetsNoMorePushes(t *testing.T) {
	s, fake := adminServer(t)
	registerDevice(t, s, fake, testUserID)
	reachable := func() bool {
		r, err := s.deps.Courier.Open(t.Context(), courier.Recipients{UserID: testUserID}, push.SourceScheduled)
		if err != nil {
			t.Fatal(err)
		}
		return r.Reachable()
	}
	if !reachable() {
		t.Fatal("the registered device is not a recipient")
	}
	if r := adminDo(s, http.MethodDelete, "/api/v1/admin/users/"+testUserID, ""); r.status != http.StatusOK {
		t.Fatalf("delete user: %d %s", r.status, r.body)
	}
	if reachable() {
		t.Error("the courier still sends to the deleted user's device")
	}
}

// Issue 26: shutdown stops a broadcast under way at once, leaving it
// running in the store; the next start sends the rest, every user the
// message id derived from the broadcast and the user, and counts each once.
func TestShutdownStopsABroadcastAndTheNextStartSendsTheRest(t *testing.T) {
	st := storetest.New(t)
	deliveries, fake := newTestCourier(t, st, courier.PolicyUpstream)
	cfg := Config{AdminToken: testAdminToken, AllowPrivateEndpoints: true}
	s := newTestServer(t, cfg, Deps{Store: st, Courier: deliveries})
	users := []string{testUserID, "123e4567-e89b-42d3-a456-426614174000", "223e4567-e89b-42d3-a456-426614174000"}
	endpointUser := map[string]string{}
	for _, u := range users {
		endpointUser[registerDevice(t, s, fake, u).Endpoint] = u
	}
	// One user a second: the broadcast is still under way after the first.
	r := adminDo(s, http.MethodPost, "/api/v1/admin/broadcasts", `{"userIds":["`+strings.Join(users, `","`)+`"],"message":"hi","ratePerSecond":1}`)
	var b broadcastJSON
	decodeData(t, r.body, &b)
	if _, err := fake.WaitPushes(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	s.deps.Broadcasts.Stop() // returns once no broadcast goroutine is left
	s.deps.Broadcasts.Send(store.Broadcast{ID: b.ID})
	s.deps.Broadcasts.Wait() // a stopped Broadcasts starts nothing
	stopped, err := st.GetBroadcast(t.Context(), b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stopped.Status != store.BroadcastRunning || stopped.Sent >= len(users) {
		t.Fatalf("after shutdown the broadcast is %s with %d sent, want running with some left", stopped.Status, stopped.Sent)
	}

	restarted := newTestServer(t, cfg, Deps{Store: st, Courier: deliveries})
	restarted.deps.Broadcasts.Wait()
	done, err := st.GetBroadcast(t.Context(), b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != store.BroadcastDone || done.Sent != len(users) || done.Failed != 0 {
		t.Fatalf("after the restart: %s, %d sent, %d failed; want done, %d sent", done.Status, done.Sent, done.Failed, len(users))
	}
	reached := map[string]bool{}
	for _, p := range fake.Pushes() {
		var m struct {
			MessageID string `json:"messageId"`
		}
		_ = json.Unmarshal(p.JSON, &m)
		user := endpointUser[p.Endpoint]
		if want := broadcastPushIDs(b.ID, user).messageID; m.MessageID != want {
			t.Errorf("%s got message id %q, want %q", user, m.MessageID, want)
		}
		reached[user] = true
	}
	if len(reached) != len(users) {
		t.Errorf("reached %d users, want %d", len(reached), len(users))
	}
}
