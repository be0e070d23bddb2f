package api

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"amsg/store"
	"amsg/store/storetest"
)

func scheduleWithKey(t testing.TB, e *taskEnv, key string, body any) response {
	t.Helper()
	req := encryptedRequest(t, http.MethodPost, "/api/v1/schedule-message", testUserID, body)
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Origin", "https://app.example")
	return serve(e.s, req)
}

func pendingTasks(t testing.TB, st *store.Store) int {
	t.Helper()
	_, total, err := st.Tasks(t.Context(), testUserID, store.TaskPending, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	return total
}

// The same request with a key (sealed afresh, as a retrying client does)
// replays the first answer and creates nothing; another request with the
// key is refused; malformed keys are refused with precise codes.
func TestScheduleMessageIdempotencyKey(t *testing.T) {
	e := newTaskEnv(t, Config{CORSOrigin: "*"})
	e.subscribe(t, testUserID)
	first := scheduleWithKey(t, e, "retry-1", fixedTask(nil))
	if first.status != http.StatusCreated || first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	again := scheduleWithKey(t, e, "retry-1", fixedTask(nil))
	if again.status != first.status || again.body != first.body || again.header.Get("Idempotent-Replayed") != "true" ||
		!strings.Contains(again.header.Get("Access-Control-Expose-Headers"), "Idempotent-Replayed") {
		t.Fatalf("replay: %d %v %s; want the first answer %s", again.status, again.header, again.body, first.body)
	}
	if n := pendingTasks(t, e.st); n != 1 {
		t.Fatalf("%d tasks after a replay; want 1", n)
	}
	other := scheduleWithKey(t, e, "retry-1", fixedTask(map[string]any{"userMessage": "something else"}))
	if other.status != http.StatusUnprocessableEntity || errorCode(other.body) != "IDEMPOTENCY_KEY_REUSED" {
		t.Fatalf("another request with the key: %d %s", other.status, other.body)
	}
	for key, code := range map[string]string{strings.Repeat("k", 256): "IDEMPOTENCY_KEY_TOO_LONG", "": "INVALID_IDEMPOTENCY_KEY", "tab\there": "INVALID_IDEMPOTENCY_KEY"} {
		got := scheduleWithKey(t, e, key, fixedTask(nil))
		if got.status != http.StatusBadRequest || errorCode(got.body) != code {
			t.Errorf("key of %d characters: %d %s; want 400 %s", len(key), got.status, got.body, code)
		}
	}
	if ok := scheduleWithKey(t, e, strings.Repeat("k", 255), fixedTask(nil)); ok.status != http.StatusCreated {
		t.Errorf("a key of 255 characters: %d %s", ok.status, ok.body)
	}
	if n := pendingTasks(t, e.st); n != 2 {
		t.Fatalf("%d tasks; want 2 (refused requests create nothing)", n)
	}
}

// Requests sent at once with one key, over real HTTP, create one task, on
// SQLite and on PostgreSQL: one answer is the creation, each other one its
// replay or 409 IDEMPOTENCY_KEY_IN_USE.
func TestConcurrentRequestsWithOneKeyCreateOneTask(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			url := ""
			if backend == "postgres" {
				url = storetest.DatabaseURL(t)
			}
			e := newTaskEnvOn(t, Config{}, url)
			e.subscribe(t, testUserID)
			srv := httptest.NewServer(e.s)
			defer srv.Close()
			const n = 8
			statuses := make([]int, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					req := encryptedRequest(t, http.MethodPost, srv.URL+"/api/v1/schedule-message", testUserID, fixedTask(nil))
					req.RequestURI = ""
					req.Header.Set("Idempotency-Key", "at-once")
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					statuses[i] = resp.StatusCode
					if resp.StatusCode == http.StatusCreated && resp.Header.Get("Idempotent-Replayed") == "true" {
						statuses[i] = -1 // a replay
					}
				})
			}
			wg.Wait()
			created := 0
			for _, s := range statuses {
				switch s {
				case http.StatusCreated:
					created++
				case -1, http.StatusConflict:
				default:
					t.Errorf("an answer was %d", s)
				}
			}
			if created != 1 || pendingTasks(t, e.st) != 1 {
				t.Fatalf("answers %v, %d tasks; want one creation and one task", statuses, pendingTasks(t, e.st))
			}
		})
	}
}

// An operator send with a key goes once; its replay sends nothing.
func TestAdminSendIdempotencyKey(t *testing.T) {
	s, fake := adminServer(t)
	registerDevice(t, s, fake, testUserID)
	body := `{"userId":"` + testUserID + `","message":"once"}`
	sendOnce := func() response {
		return send(s, http.MethodPost, "/api/v1/admin/send", body,
			map[string]string{"Authorization": "Bearer " + testAdminToken, "Idempotency-Key": "op-1"})
	}
	first, again := sendOnce(), sendOnce()
	if first.status != http.StatusOK || again.body != first.body || again.header.Get("Idempotent-Replayed") != "true" || len(fake.Pushes()) != 1 {
		t.Fatalf("first %d %s, again %d %s, %d pushes; want one push and a replay", first.status, first.body, again.status, again.body, len(fake.Pushes()))
	}
}
