package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// storedTaskBytes is the size amsg stores for task: what checkTaskSize
// measures.
func storedTaskBytes(t *testing.T, e *taskEnv, task map[string]any) int {
	t.Helper()
	raw, _ := json.Marshal(task)
	req, err := e.s.validateSchedule(t.Context(), decodeFields(raw))
	if err != nil {
		t.Fatal(err)
	}
	stored, err := req.payload.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return len(stored)
}

// TestTaskSizeIsUpstreams schedules a task of exactly MaxTaskPayloadBytes
// (about 1.33 MB once encrypted: over the 1 MiB body limit it used to meet)
// and one byte more; an update that grows a task past the limit is refused
// and changes nothing.
func TestTaskSizeIsUpstreams(t *testing.T) {
	e := newTaskEnv(t, Config{})
	e.subscribe(t, testUserID)
	sized := func(uuid string, n int) map[string]any {
		task := fixedTask(map[string]any{"uuid": uuid, "userMessage": "x"})
		task["userMessage"] = strings.Repeat("记", (n-storedTaskBytes(t, e, task)+1)/3) + strings.Repeat("x", (n-storedTaskBytes(t, e, task)+1)%3)
		if got := storedTaskBytes(t, e, task); got != n {
			t.Fatalf("built a task of %d bytes, want %d", got, n)
		}
		return task
	}
	const atLimit, overLimit = "0f8fad5b-d9cb-469f-a165-70867728950e", "7c9e6679-7425-40de-944b-e07fc1f90ae7"
	if got := e.schedule(t, testUserID, sized(atLimit, MaxTaskPayloadBytes)); got.status != http.StatusCreated {
		t.Fatalf("a task of exactly %d bytes: %d %.300s", MaxTaskPayloadBytes, got.status, got.body)
	}
	got := e.schedule(t, testUserID, sized(overLimit, MaxTaskPayloadBytes+1))
	wantBody(t, "one byte over", got, 400, `{"success":false,"error":{"code":"TASK_PAYLOAD_TOO_LARGE","message":"任务内容 995872 字节，超过 995871 字节上限","details":{"bytes":995872,"maxBytes":995871}}}`)

	// Growing the task at the limit is refused; the stored task is unchanged.
	got = e.update(t, testUserID, atLimit, map[string]any{"contactName": "Rei and a longer name"})
	if code, details := errorOf(t, got.body); got.status != 400 || code != "TASK_PAYLOAD_TOO_LARGE" || !strings.Contains(details, `"maxBytes":995871`) {
		t.Errorf("growing update: %d %s", got.status, got.body)
	}
	var read struct {
		Task struct {
			ContactName string `json:"contactName"`
		} `json:"task"`
	}
	decrypted(t, testUserID, serve(e.s, newRequest(http.MethodGet, "/api/v1/message?id="+atLimit, "", map[string]string{"X-User-Id": testUserID})), &read)
	if read.Task.ContactName != "Rei" {
		t.Errorf("after the refused update contactName = %q, want Rei", read.Task.ContactName)
	}
	// Shrinking it, or keeping its size, is fine.
	if got := e.update(t, testUserID, atLimit, map[string]any{"contactName": "R"}); got.status != 200 {
		t.Errorf("shrinking update: %d %s", got.status, got.body)
	}
	if got := e.update(t, testUserID, atLimit, map[string]any{"contactName": "Q"}); got.status != 200 {
		t.Errorf("same-size update: %d %s", got.status, got.body)
	}
}
