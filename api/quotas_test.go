package api

import (
	"net/http"
	"strings"
	"testing"

	"amsg/llm/llmtest"
	"amsg/loop"
)

const quotaOtherUser = "7c9e6679-7425-40de-944b-e07fc1f90ae7"

// Finding 5: one caller stored ~955 MB. Tasks over the quota get 403
// QUOTA_EXCEEDED with the limit, and the refused request writes nothing.
func TestTaskQuota(t *testing.T) {
	e := newTaskEnv(t, Config{AllowPrivateEndpoints: true, Limits: Limits{MaxTasksPerUser: 2}})
	e.subscribe(t, testUserID)
	for i := range 2 {
		if got := e.schedule(t, testUserID, fixedTask(nil)); got.status != http.StatusCreated {
			t.Fatalf("task %d: %d %s", i, got.status, got.body)
		}
	}
	sub := e.fake.Subscribe()
	got := e.schedule(t, testUserID, fixedTask(map[string]any{"pushSubscription": sub}))
	code, details := errorOf(t, got.body)
	if got.status != http.StatusForbidden || code != "QUOTA_EXCEEDED" || details != `{"limit":2,"quota":"tasksPerUser"}` {
		t.Fatalf("over the quota: %d %s", got.status, got.body)
	}
	if devices, _ := e.st.Devices(t.Context(), testUserID); len(devices) != 1 {
		t.Errorf("the refused request stored its subscription: %d devices", len(devices))
	}
	// Another user has a quota of their own.
	e.subscribe(t, quotaOtherUser)
	if got := e.schedule(t, quotaOtherUser, fixedTask(nil)); got.status != http.StatusCreated {
		t.Errorf("another user: %d %s", got.status, got.body)
	}
}

// Finding 9: a schedule-message refused with 409 stored its subscription.
func TestRefusedScheduleStoresNoSubscription(t *testing.T) {
	e := newTaskEnv(t, Config{AllowPrivateEndpoints: true})
	e.subscribe(t, testUserID)
	const id = "0f8fad5b-d9cb-469f-a165-70867728950e"
	if got := e.schedule(t, testUserID, fixedTask(map[string]any{"uuid": id})); got.status != http.StatusCreated {
		t.Fatal(got.body)
	}
	got := e.schedule(t, testUserID, fixedTask(map[string]any{"uuid": id, "pushSubscription": e.fake.Subscribe()}))
	if code, _ := errorOf(t, got.body); got.status != http.StatusConflict || code != "TASK_UUID_CONFLICT" {
		t.Fatalf("duplicate uuid: %d %s", got.status, got.body)
	}
	if devices, _ := e.st.Devices(t.Context(), testUserID); len(devices) != 1 {
		t.Errorf("the refused request stored its subscription: %d devices", len(devices))
	}
}

func TestClientStateQuota(t *testing.T) {
	const perNS, perUser = 3000, 5000
	s := newTestServer(t, Config{Limits: Limits{MaxStateBytesPerNamespace: perNS, MaxStateBytesPerUser: perUser}}, Deps{})
	entry := func(ns, key string, n int) map[string]any {
		return map[string]any{"namespace": ns, "key": key, "value": strings.Repeat("v", n), "updatedAt": 1}
	}
	put := func(entries ...any) response { return putState(t, s, testUserID, map[string]any{"entries": entries}) }
	// Each value takes 2n+66 bytes sealed.
	if got := put(entry("a", "1", 500), entry("a", "2", 500)); got.status != http.StatusOK {
		t.Fatalf("under the quota: %d %s", got.status, got.body)
	}
	got := put(entry("a", "3", 500))
	if code, details := errorOf(t, got.body); got.status != http.StatusForbidden || code != "QUOTA_EXCEEDED" ||
		details != `{"limit":3000,"quota":"clientStateBytesPerNamespace"}` {
		t.Fatalf("over the namespace quota: %d %s", got.status, got.body)
	}
	// Replacing a value counts only the difference.
	if got := put(entry("a", "2", 550)); got.status != http.StatusOK {
		t.Fatalf("replacing a value: %d %s", got.status, got.body)
	}
	if got := put(entry("b", "1", 1000)); got.status != http.StatusOK {
		t.Fatalf("another namespace: %d %s", got.status, got.body)
	}
	got = put(entry("c", "1", 500))
	if code, details := errorOf(t, got.body); got.status != http.StatusForbidden || code != "QUOTA_EXCEEDED" ||
		details != `{"limit":5000,"quota":"clientStateBytesPerUser"}` {
		t.Fatalf("over the user quota: %d %s", got.status, got.body)
	}
	if entries := getState(t, s, testUserID, "c"); strings.Contains(entries, `"key":"1"`) {
		t.Errorf("the refused write was stored: %s", entries)
	}
}

// Finding 8: a round's pushes go to every device of the user; a round that
// would send more than the cap fails after the cap.
func TestPushesPerRoundCapped(t *testing.T) {
	f := newInstantFixture(t, Config{Limits: Limits{MaxPushesPerRound: 2}}, loop.AgentConfig{})
	sentences := strings.Repeat("这是一句话。", 6)
	f.llm.Enqueue(llmtest.Reply{Content: sentences})
	got := post(f.s, "/api/v1/instant", jsonBody(t, f.body(map[string]any{"pushSubscription": f.push.Subscribe()})), jsonHeaders)
	if got.status != http.StatusBadGateway || !strings.Contains(got.body, "more than 2 pushes") {
		t.Fatalf("= %d %s", got.status, got.body)
	}
	if n := len(f.push.Pushes()); n != 2 {
		t.Errorf("%d pushes reached the push service, want 2", n)
	}
}
