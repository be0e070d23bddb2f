package scheduler

import (
	"slices"
	"testing"
	"time"

	"amsg/push"
)

// A recurring fixed task's text is split on its first occurrence and kept:
// the next occurrence sends the same pushes without splitting again, and
// an edited text is split afresh.
func TestARecurringFixedTaskSplitsItsTextOnce(t *testing.T) {
	h := newHarness(t, Config{})
	h.subscribe(alice)
	h.clk.Set(start)
	task := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("早上好。今天下雨！"),
		RecurrenceType: push.RecurrenceDaily, TzID: str("UTC")}, start)
	h.tick()
	want := []string{"早上好。", "今天下雨！"}
	kept, ok := h.sched.segmentCache.get(task.ID, "", "早上好。今天下雨！")
	if !ok || !slices.Equal(kept, want) {
		t.Fatalf("kept %q, %v after the first occurrence; want %q", kept, ok, want)
	}
	h.clk.Set(start.Add(24 * time.Hour))
	h.tick()
	var messages []any
	for _, p := range h.pushes() {
		messages = append(messages, p["message"])
	}
	if got := len(messages); got != 4 || messages[0] != messages[2] || messages[1] != messages[3] || messages[0] != want[0] {
		t.Errorf("messages of two occurrences %q, want %q twice", messages, want)
	}
	if _, ok := h.sched.segmentCache.get(task.ID, "", "edited"); ok {
		t.Error("the kept segments served another text")
	}
	if _, ok := h.sched.segmentCache.get(task.ID, `"(\\n)"`, "早上好。今天下雨！"); ok {
		t.Error("the kept segments served another splitPattern")
	}
}

// A one-off task fires once: its segments are not kept.
func TestOnlyRecurringStoredTextsAreKept(t *testing.T) {
	h := newHarness(t, Config{})
	h.subscribe(alice)
	task := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("一次。")}, start)
	h.tick()
	if _, ok := h.sched.segmentCache.get(task.ID, "", "一次。"); ok {
		t.Error("a one-off task's segments were kept")
	}
}
