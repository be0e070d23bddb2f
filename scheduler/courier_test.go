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

	"amsg/loop/llmtest"
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
	if len(h.sleeps) != 0 {
		t.Errorf("paced %v: a withheld push needs no pause", h.sleeps)
	}
}

// An LLM burst is decided once: an attempt interrupted mid-burst (the
// process stopping while a push is in flight) leaves its answer recorded,
// and the next attempt resends that answer under the same ids instead of
// asking the LLM again.
func TestInterruptedBurstResendsTheRecordedAnswer(t *testing.T) {
	h := newHarness(t, Config{})
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer hang.Close()
	defer close(release)
	stuck := h.push.Subscribe()
	stuck.Endpoint = hang.URL + "/push/stuck"
	raw, _ := json.Marshal(stuck)
	device, err := h.st.PutSubscription(t.Context(), alice, raw, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
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
	h.sched, err = New(h.sched.cfg, h.sched.deps)
	if err != nil {
		t.Fatal(err)
	}
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
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer hang.Close()
	defer close(release) // before hang.Close, which waits for its requests
	stuck := h.push.Subscribe()
	stuck.Endpoint = hang.URL + "/push/stuck"
	raw, _ := json.Marshal(stuck)
	if _, err := h.st.PutSubscription(t.Context(), alice, raw, time.Time{}); err != nil {
		t.Fatal(err)
	}
	h.subscribe("carol")
	h.subscribe(bob)
	for range 8 {
		h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("hang")}, start)
		h.llm.Enqueue(llmtest.Reply{Content: "never", Release: release})
		h.insert("carol", Payload{MessageType: push.TypePrompted, CompletePrompt: str("p"),
			APIURL: str(h.llm.APIURL()), APIKey: str("k"), PrimaryModel: str("m")}, start)
	}
	h.insert(bob, Payload{MessageType: push.TypeFixed, UserMessage: str("on time")}, start.Add(time.Millisecond))
	h.clk.Set(start.Add(time.Second))

	began := time.Now()
	h.sched.Start()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	pushes, err := h.push.WaitPushes(ctx, 1)
	if err != nil {
		t.Fatalf("bob's task was not delivered within 2 s of its due time: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(pushes[0].JSON, &m); err != nil || m["message"] != "on time" {
		t.Errorf("first push %s", pushes[0].JSON)
	}
	t.Logf("bob's push arrived %s after the scheduler started", time.Since(began))
}

// One user's backlog larger than the delivery slots, aimed at a push
// service that hangs, takes at most PerUserTasks of them: another user's
// task due after it is delivered within 2 s.
func TestOneUsersBacklogLeavesSlotsToOthers(t *testing.T) {
	h := newHarness(t, Config{})
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer hang.Close()
	defer close(release) // before hang.Close, which waits for its requests
	stuck := h.push.Subscribe()
	stuck.Endpoint = hang.URL + "/push/stuck"
	raw, _ := json.Marshal(stuck)
	if _, err := h.st.PutSubscription(t.Context(), alice, raw, time.Time{}); err != nil {
		t.Fatal(err)
	}
	h.subscribe(bob)
	for range DefaultConcurrency + 6 {
		h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("hang")}, start)
	}
	h.insert(bob, Payload{MessageType: push.TypeFixed, UserMessage: str("on time")}, start.Add(time.Millisecond))
	h.clk.Set(start.Add(time.Second))

	h.sched.Start()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	pushes, err := h.push.WaitPushes(ctx, 1)
	if err != nil {
		t.Fatalf("bob's task was not delivered within 2 s of its due time: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(pushes[0].JSON, &m); err != nil || m["message"] != "on time" {
		t.Errorf("first push %s", pushes[0].JSON)
	}
}
