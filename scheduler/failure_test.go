package scheduler

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"amsg/llm/llmtest"
	"amsg/push"
	"amsg/push/pushtest"
	"amsg/store"
)

// lastErrorOf decodes a task's lastError.
func lastErrorOf(t *testing.T, task store.Task) map[string]any {
	t.Helper()
	var le map[string]any
	if err := json.Unmarshal(task.LastError, &le); err != nil {
		t.Fatalf("lastError %s: %v", task.LastError, err)
	}
	return le
}

// An LLM that refuses the request (400, 401, 402, 403, 404, 405, 413, 422)
// ends the occurrence at once: a one-shot task fails, a recurring one moves
// to its next occurrence, and the LLM is not called again for it.
func TestLLMRefusalEndsTheOccurrence(t *testing.T) {
	for _, status := range []int{400, 401, 402, 403, 404, 405, 413, 422} {
		for _, rec := range []push.Recurrence{push.RecurrenceNone, push.RecurrenceDaily} {
			h := newHarness(t, Config{})
			h.subscribe(alice)
			h.llm.Enqueue(llmtest.Reply{Status: status, Body: `{"error":{"message":"no","code":"invalid_api_key"}}`})
			p := promptedPayload(h)
			p.RecurrenceType = rec
			task := h.insert(alice, p, start)
			sum := h.tick()
			got := h.task(alice, task.UUID)
			le := lastErrorOf(t, got)
			if le["code"] != "LLM_CALL_FAILED" || le["errorCode"] != "LLM_CALL_FAILED" || le["permanent"] != true ||
				le["llmStatus"] != float64(status) || le["pushStatus"] != nil {
				t.Errorf("%d %s: lastError %s", status, rec, got.LastError)
			}
			switch {
			case rec == push.RecurrenceNone && (got.Status != store.TaskFailed || sum.Details.FailedTasks[0].Status != "permanently_failed"):
				t.Errorf("%d one-shot: %+v, summary %+v", status, got, sum)
			case rec == push.RecurrenceDaily && (got.Status != store.TaskPending || !got.NextSendAt.Equal(start.Add(24*time.Hour)) || got.RetryCount != 0):
				t.Errorf("%d daily: %+v", status, got)
			}
			h.clk.Add(time.Hour)
			h.tick()
			if n := len(h.llm.Requests()); n != 1 {
				t.Errorf("%d %s: the LLM was called %d times", status, rec, n)
			}
		}
	}
}

// Failures that may pass on a retry (408, 409, 425, 429, 5xx, a 200 that is
// not an answer, a network failure) back off; the retries of an LLM
// failure are bounded by MaxGenerationRetries.
func TestLLMTransientFailuresRetryWithinTheirBound(t *testing.T) {
	for _, reply := range []llmtest.Reply{
		{Status: 408}, {Status: 409}, {Status: 425}, {Status: 429}, {Status: 500}, {Status: 503},
		{Body: `{"error":{"message":"upstream relay failed"}}`},
	} {
		h := newHarness(t, Config{MaxGenerationRetries: 1, MaxDeliveryRetries: 5})
		h.subscribe(alice)
		h.llm.Enqueue(reply, reply)
		task := h.insert(alice, promptedPayload(h), start)
		h.tick()
		got := h.task(alice, task.UUID)
		if le := lastErrorOf(t, got); got.Status != store.TaskPending || got.RetryCount != 1 || le["permanent"] != false || le["errorCode"] != "LLM_CALL_FAILED" {
			t.Errorf("%d %q: first failure %+v %s", reply.Status, reply.Body, got, got.LastError)
		}
		h.clk.Set(got.RetryAfter)
		h.tick()
		if got = h.task(alice, task.UUID); got.Status != store.TaskFailed || len(h.llm.Requests()) != 2 {
			t.Errorf("%d %q: after the one retry: %+v, %d calls", reply.Status, reply.Body, got, len(h.llm.Requests()))
		}
	}
}

// A push failure says what the push service answered, and its retries are
// bounded by MaxDeliveryRetries.
func TestPushFailureLastErrorCarriesPushStatus(t *testing.T) {
	h := newHarness(t, Config{MaxDeliveryRetries: -1})
	sub := h.subscribe(alice)
	h.push.Respond(sub, 1, pushtest.Response{Status: http.StatusInternalServerError})
	task := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("x")}, start)
	h.tick()
	got := h.task(alice, task.UUID)
	le := lastErrorOf(t, got)
	if got.Status != store.TaskFailed || le["errorCode"] != "PUSH_SEND_FAILED" || le["pushStatus"] != float64(500) || le["llmStatus"] != nil {
		t.Errorf("no delivery retries: %+v %s", got, got.LastError)
	}

	h.push.Unsubscribe(sub)
	gone := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("y")}, start)
	h.tick()
	got = h.task(alice, gone.UUID)
	if le := lastErrorOf(t, got); le["errorCode"] != "PUSH_SUBSCRIPTION_MISSING" || le["permanent"] != true || le["pushStatus"] != float64(410) {
		t.Errorf("gone device: %s", got.LastError)
	}
}
