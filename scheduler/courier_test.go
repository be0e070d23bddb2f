package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"amsg/llm/llmtest"
	"amsg/push"
	"amsg/push/courier"
)

// Under the default visible policy a prompted occurrence's reasoning is
// recorded in the outbox but only its content reaches the push service.
func TestVisiblePolicyKeepsReasoningOffWebPush(t *testing.T) {
	h := newPolicyHarness(t, Config{}, courier.PolicyVisible)
	h.subscribe(alice)
	h.llm.Enqueue(llmtest.Reply{ReasoningContent: "想一想。", Content: "早安！"})
	task := h.insert(alice, Payload{MessageType: push.TypePrompted, CompletePrompt: str("p"),
		APIURL: str(h.llm.APIURL()), APIKey: str("k"), PrimaryModel: str("m")}, start)
	if sum := h.tick(); sum.SuccessCount != 1 {
		t.Fatalf("tick %s", mustJSON(t, sum))
	}
	base := fmt.Sprintf("msg_task_%d@%d_", task.ID, start.UnixMilli())
	if got := ids(h.pushes()); !slices.Equal(got, []string{base + "0"}) {
		t.Errorf("pushes %v, want only the content", got)
	}
	page, err := h.st.UnackedOutbox(t.Context(), alice, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var recorded []string
	for _, e := range page.Entries {
		recorded = append(recorded, e.MessageID)
	}
	if !slices.Equal(recorded, []string{base + "reasoning", base + "0"}) {
		t.Errorf("outbox %v, want the reasoning and the content", recorded)
	}
	if len(h.sleep.Waits()) != 0 {
		t.Errorf("paced %v: a withheld push needs no pause", h.sleep.Waits())
	}
}

// An LLM burst is decided once: an attempt interrupted mid-burst (the
// process stopping while a push is in flight) leaves its answer recorded,
// and the next attempt resends that answer under the same ids instead of
// asking the LLM again.
func TestInterruptedBurstResendsTheRecordedAnswer(t *testing.T) {
	h := newHarness(t, Config{})
	device, arrived := h.hangingDevice(alice, http.StatusServiceUnavailable)
	h.llm.Enqueue(llmtest.Reply{Content: "一。二。"}, llmtest.Reply{Content: "别的。"})
	task := h.insert(alice, Payload{MessageType: push.TypePrompted, CompletePrompt: str("p"),
		APIURL: str(h.llm.APIURL()), APIKey: str("k"), PrimaryModel: str("m")}, start)

	ticked := make(chan Summary)
	go func() {
		sum, _ := h.sched.Tick(context.Background())
		ticked <- sum
	}()
	<-arrived // the first push is in flight: the answer was recorded before it left
	stopCtx, cancel := context.WithCancel(context.Background())
	cancel() // no grace: interrupt the delivery, as a crash would
	_ = h.sched.Stop(stopCtx)
	<-ticked

	// The device comes back on the fake push service; a new scheduler on
	// the same database delivers the occurrence.
	if err := h.st.DeleteDevice(t.Context(), alice, device.ID); err != nil {
		t.Fatal(err)
	}
	h.subscribe(alice)
	sched, err := New(h.sched.cfg, h.sched.deps)
	if err != nil {
		t.Fatal(err)
	}
	h.sched = sched
	if sum := h.tick(); sum.SuccessCount != 1 {
		t.Fatalf("retry %s", mustJSON(t, sum))
	}
	base := fmt.Sprintf("msg_task_%d@%d_", task.ID, start.UnixMilli())
	var got []string
	for _, p := range h.pushes() {
		got = append(got, fmt.Sprintf("%s %v", p["messageId"], p["message"]))
	}
	if want := []string{base + "0 一。", base + "1 二。"}; !slices.Equal(got, want) {
		t.Errorf("delivered %q, want the recorded answer %q", got, want)
	}
	if n := len(h.llm.Requests()); n != 1 {
		t.Errorf("the LLM was asked %d times, want once", n)
	}
}

// Fair under load: 8 tasks of one user aimed at a push service that hangs
// and 8 prompted tasks whose LLM never answers do not delay another user's
// fixed task, due last, by more than 2 s.
func TestHungPushServiceAndLLMDoNotDelayOthers(t *testing.T) {
	h := newHarness(t, Config{})
	h.hangingDevice(alice, http.StatusCreated)
	answer := make(chan struct{}) // the LLM answers only when the test ends
	defer close(answer)
	h.subscribe("carol")
	h.subscribe(bob)
	for range 8 {
		h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("hang")}, start)
		h.llm.Enqueue(llmtest.Reply{Content: "never", Release: answer})
		h.insert("carol", Payload{MessageType: push.TypePrompted, CompletePrompt: str("p"),
			APIURL: str(h.llm.APIURL()), APIKey: str("k"), PrimaryModel: str("m")}, start)
	}
	h.bobDeliveredWithin2s()
}

// One user's backlog larger than the delivery slots, aimed at a push
// service that hangs, takes at most PerUserTasks of them: another user's
// task due after it is delivered within 2 s.
func TestOneUsersBacklogLeavesSlotsToOthers(t *testing.T) {
	h := newHarness(t, Config{})
	h.hangingDevice(alice, http.StatusCreated)
	h.subscribe(bob)
	for range DefaultConcurrency + 6 {
		h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("hang")}, start)
	}
	h.bobDeliveredWithin2s()
}

// hangingDevice registers for userID a device whose push service holds every
// request until the test ends, then answers status; each request arriving
// is signalled on arrived (buffered, never blocking).
func (h *harness) hangingDevice(userID string, status int) (device push.Device, arrived <-chan struct{}) {
	h.t.Helper()
	signal, release := make(chan struct{}, 128), make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case signal <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.WriteHeader(status)
	}))
	h.t.Cleanup(hang.Close)
	h.t.Cleanup(func() { close(release) }) // runs first: hang.Close waits for its requests
	stuck := h.push.Subscribe()
	stuck.Endpoint = hang.URL + "/push/stuck"
	raw, _ := json.Marshal(stuck)
	d, err := h.st.PutSubscription(h.t.Context(), userID, raw, time.Time{})
	if err != nil {
		h.t.Fatal(err)
	}
	h.courier.Forget(userID)
	return d, signal
}

// bobDeliveredWithin2s inserts bob's fixed task, due just after everything
// inserted so far, starts the scheduler and waits up to 2 s (real time) for
// it to reach the push service before any other push.
func (h *harness) bobDeliveredWithin2s() {
	h.t.Helper()
	h.insert(bob, Payload{MessageType: push.TypeFixed, UserMessage: str("on time")}, start.Add(time.Millisecond))
	h.clk.Set(start.Add(time.Second))
	began := time.Now()
	h.sched.Start()
	ctx, cancel := context.WithTimeout(h.t.Context(), 2*time.Second)
	defer cancel()
	pushes, err := h.push.WaitPushes(ctx, 1)
	if err != nil {
		h.t.Fatalf("bob's task was not delivered within 2 s of its due time: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(pushes[0].JSON, &m); err != nil || m["message"] != "on time" {
		h.t.Errorf("first push %s", pushes[0].JSON)
	}
	h.t.Logf("bob's push arrived %s after the scheduler started", time.Since(began))
}
