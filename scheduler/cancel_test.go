package scheduler

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"amsg/llm/llmtest"
	"amsg/push"
	"amsg/store"
)

// pauseAt is a Sleep that returns at once, except before push n+1 of a
// burst (its nth wait), where it closes reached and waits for the
// delivery's context to end: the test cancels the task there. (A delivery
// that ignores the cancel goes on after 10 s, and the test fails.)
func pauseAt(n int32, reached chan<- struct{}) func(context.Context, time.Duration) error {
	var waits atomic.Int32
	return func(ctx context.Context, _ time.Duration) error {
		if waits.Add(1) == n {
			close(reached)
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
			}
		}
		return ctx.Err()
	}
}

// cancelTask is what DELETE /cancel-message does: delete the row, then stop
// the delivery under way.
func (h *harness) cancelTask(userID, uuid string) store.DeletedTask {
	h.t.Helper()
	d, err := h.st.DeleteTask(h.t.Context(), userID, uuid)
	if err != nil {
		h.t.Fatal(err)
	}
	if d.Delivering {
		h.sched.Cancel(d.ID)
	}
	return d
}

// tickAsync runs a tick on another goroutine; the channel gets its summary.
func (h *harness) tickAsync() <-chan Summary {
	done := make(chan Summary, 1)
	go func() {
		s, err := h.sched.Tick(context.Background())
		if err != nil {
			h.t.Error(err)
		}
		done <- s
	}()
	return done
}

func sentences(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("第" + string(rune('A'+i%26)) + "句。")
	}
	return b.String()
}

func (h *harness) outbox(userID string) []store.OutboxEntry {
	h.t.Helper()
	page, err := h.st.UnackedOutbox(h.t.Context(), userID, 0, store.MaxOutboxPage)
	if err != nil {
		h.t.Fatal(err)
	}
	return page.Entries
}

func checkCancelledSummary(t *testing.T, sum Summary, task store.Task) {
	t.Helper()
	c := sum.Details.CancelledTasks
	if sum.SuccessCount != 0 || sum.FailedCount != 0 || len(c) != 1 || c[0].TaskID != task.ID || c[0].Status != StatusCancelledMidDelivery {
		t.Errorf("summary %+v", sum)
	}
}

// A fixed burst of 30 cancelled after its 7th push sends nothing more, and
// the outbox holds only the 7 that went out.
func TestCancelStopsAFixedBurst(t *testing.T) {
	reached := make(chan struct{})
	h := newHarness(t, Config{Sleep: pauseAt(7, reached)})
	h.subscribe(alice)
	task := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str(sentences(30))}, start)

	done := h.tickAsync()
	<-reached
	if d := h.cancelTask(alice, task.UUID); !d.Delivering {
		t.Fatalf("the task was not being delivered: %+v", d)
	}
	checkCancelledSummary(t, <-done, task)
	if n := len(h.push.Pushes()); n != 7 {
		t.Errorf("%d pushes, want the 7 sent before the cancel", n)
	}
	if rows := h.outbox(alice); len(rows) != 7 || rows[6].DeliveredAt.IsZero() {
		t.Errorf("outbox holds %d rows, want the 7 delivered", len(rows))
	}
}

// An LLM burst is recorded whole before it is sent; cancelled after its 7th
// push, the 23 rows that never went out are withdrawn from the outbox.
func TestCancelWithdrawsTheRestOfAnLLMBurst(t *testing.T) {
	reached := make(chan struct{})
	h := newHarness(t, Config{Sleep: pauseAt(7, reached)})
	h.subscribe(alice)
	h.llm.Enqueue(llmtest.Reply{Content: sentences(30)})
	task := h.insert(alice, promptedPayload(h), start)

	done := h.tickAsync()
	<-reached
	h.cancelTask(alice, task.UUID)
	checkCancelledSummary(t, <-done, task)
	if n := len(h.push.Pushes()); n != 7 {
		t.Errorf("%d pushes, want 7", n)
	}
	rows := h.outbox(alice)
	if len(rows) != 7 {
		t.Fatalf("outbox holds %d rows, want the 7 delivered", len(rows))
	}
	for _, r := range rows {
		if r.DeliveredAt.IsZero() {
			t.Errorf("undelivered row %s kept", r.MessageID)
		}
	}
}

// A cancel while the LLM is answering aborts the call: the LLM sees its
// request's context end, nothing is sent, and the LLM is not asked again.
func TestCancelAbortsTheLLMCall(t *testing.T) {
	h := newHarness(t, Config{})
	h.subscribe(alice)
	aborted := make(chan struct{})
	h.llm.Enqueue(llmtest.Reply{Content: "too late", Release: make(chan struct{}), Aborted: aborted})
	task := h.insert(alice, promptedPayload(h), start)

	done := h.tickAsync()
	h.llm.WaitRequests(1)
	h.cancelTask(alice, task.UUID)
	select {
	case <-aborted:
	case <-time.After(time.Second):
		t.Fatal("the LLM request was not cancelled within a second of the cancel")
	}
	checkCancelledSummary(t, <-done, task)
	if n := len(h.push.Pushes()); n != 0 {
		t.Errorf("%d pushes after an aborted call", n)
	}
	if rows := h.outbox(alice); len(rows) != 0 {
		t.Errorf("outbox holds %d rows", len(rows))
	}
	if sum := h.tick(); sum.TotalTasks != 0 || len(h.llm.Requests()) != 1 {
		t.Errorf("after the cancel: %+v, %d LLM calls", sum, len(h.llm.Requests()))
	}
}

// A cancel that lands between the claim and the start of the delivery
// still stops it: nothing is sent.
func TestCancelBetweenClaimAndDelivery(t *testing.T) {
	var h *harness
	var task store.Task
	h = newHarness(t, Config{OnClaim: func(time.Duration) { h.cancelTask(alice, task.UUID) }})
	h.subscribe(alice)
	task = h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("no")}, start)
	checkCancelledSummary(t, h.tick(), task)
	if n := len(h.push.Pushes()); n != 0 {
		t.Errorf("%d pushes", n)
	}
}

// promptedPayload is a one-shot prompted task asking the harness's LLM.
func promptedPayload(h *harness) Payload {
	return Payload{MessageType: push.TypePrompted, CompletePrompt: str("p"),
		APIURL: str(h.llm.APIURL()), APIKey: str("k"), PrimaryModel: str("m")}
}

// A cancel this process is not told of (a notification lost between
// instances) is found by the lease heartbeat: the burst stops and the rest
// of its recorded pushes are withdrawn.
func TestHeartbeatFindsACancelItWasNotToldOf(t *testing.T) {
	reached := make(chan struct{})
	h := newHarness(t, Config{Sleep: pauseAt(2, reached), Heartbeat: time.Millisecond, LeaseTTL: time.Hour})
	h.subscribe(alice)
	h.llm.Enqueue(llmtest.Reply{Content: sentences(5)})
	task := h.insert(alice, promptedPayload(h), start)

	done := h.tickAsync()
	<-reached
	if _, err := h.st.DeleteTask(t.Context(), alice, task.UUID); err != nil { // no Cancel
		t.Fatal(err)
	}
	checkCancelledSummary(t, <-done, task)
	if n, rows := len(h.push.Pushes()), h.outbox(alice); n != 2 || len(rows) != 2 {
		t.Errorf("%d pushes, %d outbox rows: want the 2 sent before the cancel", n, len(rows))
	}
}
