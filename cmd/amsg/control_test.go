package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"amsg/llm/llmtest"
	"amsg/store/storetest"
)

// The tests below check what a cancel and an update do to an occurrence
// being delivered, against the real binary.

// burstOf is n sentences, numbered.
func burstOf(n int) []string {
	sentences := make([]string, n)
	for i := range sentences {
		sentences[i] = fmt.Sprintf("第%d句。", i+1)
	}
	return sentences
}

// cancel sends DELETE /cancel-message and returns the answer's data.status.
func (r *taskRig) cancel(t *testing.T, p *amsgProcess, uuid string) string {
	t.Helper()
	status, body := r.call(t, p, http.MethodDelete, "cancel-message?id="+uuid, nil)
	var data struct{ Status string }
	if status != http.StatusOK || json.Unmarshal(body, &data) != nil {
		t.Fatalf("cancel-message: %d %s", status, body)
	}
	return data.Status
}

// outbox returns the entries GET /outbox returns.
func (r *taskRig) outbox(t *testing.T, p *amsgProcess) []struct{ MessageID string } {
	t.Helper()
	status, body := r.call(t, p, http.MethodGet, "outbox?limit=100", nil)
	var data struct {
		Entries []struct{ MessageID string }
	}
	if status != http.StatusOK || json.Unmarshal(body, &data) != nil {
		t.Fatalf("outbox: %d %s", status, body)
	}
	return data.Entries
}

// A fixed task of 30 segments, 100 ms apart, cancelled after its 7th push:
// at most the push in flight when the cancel answered follows it, and the
// outbox holds no more than what went out.
func TestCancelStopsAThirtySegmentBurst(t *testing.T) {
	r := newTaskRig(t, "AMSG_TICK=100ms", "AMSG_PUSH_INTERVAL=100ms")
	p := r.start(t)
	r.register(t, p)
	_, uuid := r.schedule(t, p, map[string]any{"contactName": "Rei", "messageType": "fixed", "immediate": true,
		"userMessage": strings.Join(burstOf(30), "")})

	waitPushes(t, r.push, 7, 20*time.Second)
	if status := r.cancel(t, p, uuid); status != "cancelled_mid_delivery" {
		t.Errorf("data.status %q, want cancelled_mid_delivery", status)
	}
	answered := len(r.push.Pushes())
	p.WaitLog(t, "scheduler: task cancelled while being delivered", 10*time.Second)
	total := len(r.push.Pushes())
	if total > answered+1 || total >= 30 {
		t.Errorf("%d pushes when the cancel answered, %d in all: want at most the one in flight after it", answered, total)
	}
	if rows := r.outbox(t, p); len(rows) > total {
		t.Errorf("the outbox holds %d rows, more than the %d pushes that went out", len(rows), total)
	}
	if status, body := r.call(t, p, http.MethodGet, "messages", nil); !strings.Contains(string(body), `"total":0`) {
		t.Errorf("messages after the cancel: %d %s", status, body)
	}
}

// On PostgreSQL, a cancel through instance B stops the occurrence instance A
// is delivering: A's LLM call is aborted within a second, and nothing is
// sent.
func TestCancelThroughAnotherInstanceAbortsTheLLMCall(t *testing.T) {
	url := storetest.DatabaseURL(t)
	r := newTaskRig(t, "AMSG_DATABASE_URL="+url, "AMSG_TICK=100ms", "AMSG_INSTANCE_HEARTBEAT=200ms")
	llm := llmtest.NewServer(t)
	aborted := make(chan struct{})
	llm.Enqueue(llmtest.Reply{Content: "一。二。", Release: make(chan struct{}), Aborted: aborted})
	a := startAmsg(t, t.TempDir(), r.env...)
	r.register(t, a)
	_, uuid := r.schedule(t, a, map[string]any{"contactName": "Rei", "messageType": "prompted", "immediate": true,
		"completePrompt": "p", "apiUrl": llm.APIURL(), "apiKey": "k", "primaryModel": "m"})
	llm.WaitRequests(1) // A is delivering: the task's lease is A's

	b := startAmsg(t, t.TempDir(), r.env...)
	sent := time.Now()
	if status := r.cancel(t, b, uuid); status != "cancelled_mid_delivery" {
		t.Errorf("data.status %q, want cancelled_mid_delivery", status)
	}
	select {
	case <-aborted:
		t.Logf("A's LLM call aborted %s after the cancel was sent to B", time.Since(sent))
	case <-time.After(time.Second):
		t.Fatal("A's LLM call was not aborted within a second of the cancel through B")
	}
	a.WaitLog(t, "scheduler: task cancelled while being delivered", 10*time.Second)
	if n := len(r.push.Pushes()); n != 0 {
		t.Errorf("%d pushes after the cancel", n)
	}
}

// A reschedule of a one-shot task whose occurrence is being delivered is
// refused with 409 TASK_IN_FLIGHT; an edit of its name is stored; the
// occurrence arrives once, and nothing is left to fire again.
func TestRescheduleInFlightIsRefusedAndTheOneShotArrivesOnce(t *testing.T) {
	r := newTaskRig(t, "AMSG_TICK=100ms", "AMSG_PUSH_INTERVAL=1ms")
	p := r.start(t)
	r.register(t, p)
	llm := llmtest.NewServer(t)
	release := make(chan struct{})
	llm.Enqueue(llmtest.Reply{Content: "一。二。三。", Release: release})
	_, uuid := r.schedule(t, p, map[string]any{"contactName": "Rei", "messageType": "prompted", "immediate": true,
		"completePrompt": "p", "apiUrl": llm.APIURL(), "apiKey": "k", "primaryModel": "m"})
	llm.WaitRequests(1)

	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	status, body := r.call(t, p, http.MethodPut, "update-message?id="+uuid, map[string]any{"nextSendAt": later})
	if status != http.StatusConflict || !strings.Contains(string(body), `"TASK_IN_FLIGHT"`) {
		t.Errorf("reschedule in flight: %d %s", status, body)
	}
	if status, body := r.call(t, p, http.MethodPut, "update-message?id="+uuid, map[string]any{"contactName": "Ayu"}); status != http.StatusOK {
		t.Errorf("rename in flight: %d %s", status, body)
	}
	close(release)
	p.WaitLog(t, "scheduler: task delivered", 10*time.Second)

	if status, body := r.call(t, p, http.MethodPost, "send-notifications", nil); !strings.Contains(string(body), `"totalTasks":0`) {
		t.Errorf("send-notifications after delivery: %d %s", status, body)
	}
	if status, body := r.call(t, p, http.MethodGet, "messages", nil); !strings.Contains(string(body), `"total":0`) {
		t.Errorf("messages after delivery: %d %s", status, body)
	}
	seen := map[string]int{}
	for _, pu := range r.push.Pushes() {
		seen[messageID(t, pu)]++
	}
	if len(seen) != 3 || len(r.push.Pushes()) != 3 {
		t.Errorf("pushes %v, want the three sentences once each", seen)
	}
}

// An edit of a one-shot task accepted while its burst is going out, then a
// SIGKILL: after the restart the burst resumes with the text it started
// with (the occurrence was committed), each sentence under its own id, and
// the task is gone.
func TestEditInFlightThenCrashKeepsTheCommittedOccurrence(t *testing.T) {
	const burst = 6
	r := newTaskRig(t, "AMSG_TICK=100ms", "AMSG_TASK_LEASE=2s", "AMSG_TASK_HEARTBEAT=400ms", "AMSG_PUSH_INTERVAL=200ms")
	p := r.start(t)
	r.register(t, p)
	sentences := burstOf(burst)
	_, uuid := r.schedule(t, p, map[string]any{"contactName": "Rei", "messageType": "fixed", "immediate": true,
		"userMessage": strings.Join(sentences, "")})
	waitPushes(t, r.push, 2, 20*time.Second)
	if status, body := r.call(t, p, http.MethodPut, "update-message?id="+uuid,
		map[string]any{"userMessage": "改了。改了。改了。改了。改了。改了。"}); status != http.StatusOK {
		t.Fatalf("edit in flight: %d %s", status, body)
	}
	p.Kill(t)
	if len(r.push.Pushes()) >= burst {
		t.Fatal("the whole burst went out before the kill")
	}

	p = r.start(t)
	p.WaitLog(t, "scheduler: task delivered", 30*time.Second)
	seen := map[string]bool{}
	for _, pu := range r.push.Pushes() {
		var m struct{ MessageID, Message string }
		if err := json.Unmarshal(pu.JSON, &m); err != nil {
			t.Fatal(err)
		}
		seen[m.MessageID] = true
		if !strings.Contains(strings.Join(sentences, ""), m.Message) {
			t.Errorf("push %s carries %q, not the committed text", m.MessageID, m.Message)
		}
	}
	if len(seen) != burst {
		t.Errorf("%d distinct pushes, want %d", len(seen), burst)
	}
	if status, body := r.call(t, p, http.MethodGet, "messages", nil); !strings.Contains(string(body), `"total":0`) {
		t.Errorf("messages after delivery: %d %s", status, body)
	}
}

// An LLM answering 401 ends a one-shot prompted task at once: it is failed
// with the LLM's status in lastError, and the LLM is never called again.
func TestLLMUnauthorizedEndsTheTaskWithoutASecondCall(t *testing.T) {
	r := newTaskRig(t, "AMSG_TICK=100ms")
	p := r.start(t)
	r.register(t, p)
	llm := llmtest.NewServer(t)
	llm.Enqueue(llmtest.Reply{Status: http.StatusUnauthorized, Body: `{"error":{"message":"Incorrect API key provided: sk-abc","code":"invalid_api_key"}}`})
	_, uuid := r.schedule(t, p, map[string]any{"contactName": "Rei", "messageType": "prompted", "immediate": true,
		"completePrompt": "p", "apiUrl": llm.APIURL(), "apiKey": "sk-abc", "primaryModel": "m"})
	p.WaitLog(t, "scheduler: delivery failed for good", 10*time.Second)

	status, body := r.call(t, p, http.MethodGet, "message?id="+uuid, nil)
	var failure struct {
		Details struct {
			Status    string
			LastError map[string]any
		}
	}
	if err := json.Unmarshal(body, &failure); err != nil || status != http.StatusConflict {
		t.Fatalf("message: %d %s", status, body)
	}
	le := failure.Details.LastError
	if failure.Details.Status != "failed" || le["errorCode"] != "LLM_CALL_FAILED" || le["code"] != "LLM_CALL_FAILED" ||
		le["llmStatus"] != float64(401) || le["permanent"] != true || strings.Contains(string(body), "sk-abc") {
		t.Errorf("failed task: %s", body)
	}
	if status, body := r.call(t, p, http.MethodPost, "send-notifications", nil); !strings.Contains(string(body), `"totalTasks":0`) {
		t.Errorf("send-notifications: %d %s", status, body)
	}
	if n := len(llm.Requests()); n != 1 {
		t.Errorf("the LLM was called %d times, want once", n)
	}
}

// Superseding a task whose occurrence is being delivered stops it as a
// cancel does: its LLM call is aborted, and only the new task's message
// arrives.
func TestSupersedeStopsTheOccurrenceInFlight(t *testing.T) {
	r := newTaskRig(t, "AMSG_TICK=100ms")
	p := r.start(t)
	r.register(t, p)
	llm := llmtest.NewServer(t)
	aborted := make(chan struct{})
	llm.Enqueue(llmtest.Reply{Content: "旧的。", Release: make(chan struct{}), Aborted: aborted})
	_, old := r.schedule(t, p, map[string]any{"contactName": "Rei", "messageType": "prompted", "immediate": true,
		"completePrompt": "p", "apiUrl": llm.APIURL(), "apiKey": "k", "primaryModel": "m"})
	llm.WaitRequests(1)

	status, body := r.call(t, p, http.MethodPost, "schedule-message", map[string]any{"contactName": "Rei", "messageType": "fixed",
		"immediate": true, "userMessage": "新的。", "supersedesUuid": old})
	if status != http.StatusCreated || !strings.Contains(string(body), `"superseded":true`) {
		t.Fatalf("supersede: %d %s", status, body)
	}
	select {
	case <-aborted:
	case <-time.After(time.Second):
		t.Fatal("the superseded task's LLM call was not aborted within a second")
	}
	pushes := waitPushes(t, r.push, 1, 10*time.Second)
	p.WaitLog(t, "scheduler: task cancelled while being delivered", 10*time.Second)
	p.WaitLog(t, "scheduler: task delivered", 10*time.Second)
	var m struct{ Message string }
	if err := json.Unmarshal(pushes[0].JSON, &m); err != nil || m.Message != "新的。" || len(r.push.Pushes()) != 1 {
		t.Errorf("pushes %d, first %s", len(r.push.Pushes()), pushes[0].JSON)
	}
}
