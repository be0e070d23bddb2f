package scheduler

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"amsg/llm/llmtest"
	"amsg/push"
	"amsg/push/pushtest"
	"amsg/store"
)

func quietPrefs(zone string, start, end int) store.Preferences {
	return store.Preferences{TimeZone: zone, QuietHours: &store.QuietHours{Start: start, End: end}}
}

// QuietUntil: a window that crosses midnight, one that does not, the
// nights the clocks change.
func TestQuietUntil(t *testing.T) {
	night := quietPrefs("Europe/Berlin", 22*60, 7*60)
	for _, c := range []struct {
		name  string
		p     store.Preferences
		at    string
		until string // "" outside the window
	}{
		{"before the window", night, "2026-06-01T19:59:00Z", ""},
		{"its first minute", night, "2026-06-01T20:00:00Z", "2026-06-02T05:00:00Z"},
		{"after midnight", night, "2026-06-01T23:30:00Z", "2026-06-02T05:00:00Z"},
		{"its last minute", night, "2026-06-02T04:59:59Z", "2026-06-02T05:00:00Z"},
		{"its end", night, "2026-06-02T05:00:00Z", ""},
		// Clocks go back at 03:00 CEST on 25 October: 07:00 is 06:00 UTC.
		{"the night clocks go back", night, "2026-10-24T21:00:00Z", "2026-10-25T06:00:00Z"},
		// Clocks go forward at 02:00 CET on 29 March: 07:00 is 05:00 UTC.
		{"the night clocks go forward", night, "2026-03-28T22:00:00Z", "2026-03-29T05:00:00Z"},
		{"a window within a day", quietPrefs("Asia/Tokyo", 13*60, 14*60+30), "2026-06-01T04:10:00Z", "2026-06-01T05:30:00Z"},
		{"no zone is UTC", quietPrefs("", 0, 6*60), "2026-06-01T03:00:00Z", "2026-06-01T06:00:00Z"},
		// New York springs forward at 02:00 on 8 March: 02:30 never shows.
		{"an end in the gap", quietPrefs("America/New_York", 60, 150), "2026-03-08T06:59:00Z", "2026-03-08T07:00:00Z"},
		{"no quiet hours", store.Preferences{TimeZone: "Europe/Berlin"}, "2026-06-01T23:00:00Z", ""},
	} {
		at, _ := time.Parse(time.RFC3339, c.at)
		until, quiet := QuietUntil(c.p, at)
		got := ""
		if quiet {
			got = until.UTC().Format(time.RFC3339)
		}
		if got != c.until || (quiet && !until.After(at)) {
			t.Errorf("%s: QuietUntil(%s) = %q, %v; want %q", c.name, c.at, got, quiet, c.until)
		}
	}
}

// Occurrences due in quiet hours wait for the window's end in the user's
// zone (the night the clocks go back: an hour later in UTC), listed as
// deferred; a prompted one has not called the LLM; a critical one goes at
// once. At the window's end they all arrive, one notification tag per
// conversation, and all are in the outbox.
func TestQuietHoursDeferUntilTheWindowEndsAndReleaseOneNotificationPerConversation(t *testing.T) {
	h := newHarness(t, Config{})
	h.subscribe(alice)
	h.subscribe(bob)
	ctx := t.Context()
	night := quietPrefs("Europe/Berlin", 22*60, 7*60)
	if _, err := h.st.UpdatePreferences(ctx, alice, func(store.Preferences) store.Preferences { return night }); err != nil {
		t.Fatal(err)
	}
	evening := time.Date(2026, 10, 24, 21, 0, 0, 0, time.UTC) // 23:00 in Berlin, summer time
	h.clk.Set(evening)
	reiFirst := h.insert(alice, Payload{MessageType: push.TypeFixed, ContactName: "Rei", UserMessage: str("晚安")}, evening)
	reiSecond := h.insert(alice, Payload{MessageType: push.TypeFixed, ContactName: "Rei", UserMessage: str("做个好梦。明早见！")}, evening)
	h.llm.Enqueue(llmtest.Reply{Content: "早上好"})
	kai := h.insert(alice, Payload{MessageType: push.TypePrompted, ContactName: "Kai", CompletePrompt: str("say hi"),
		APIURL: str(h.llm.APIURL()), APIKey: str("sk-test"), PrimaryModel: str("m1")}, evening)
	critical := h.insert(alice, Payload{MessageType: push.TypeFixed, ContactName: "Rei", UserMessage: str("火警"), Priority: PriorityCritical}, evening)
	other := h.insert(bob, Payload{MessageType: push.TypeFixed, UserMessage: str("bob has no quiet hours")}, evening)

	if sum := h.tick(); sum.TotalTasks != 5 || sum.SuccessCount != 2 || sum.FailedCount != 0 {
		t.Fatalf("tick in quiet hours: %+v", sum)
	}
	if got := ids(h.pushes()); len(got) != 2 || !h.gone(alice, critical.UUID) || !h.gone(bob, other.UUID) {
		t.Fatalf("pushes in quiet hours %v; want only the critical one and bob's", got)
	}
	if n := len(h.llm.Requests()); n != 0 {
		t.Fatalf("%d LLM calls in quiet hours; want none", n)
	}
	morning := time.Date(2026, 10, 25, 6, 0, 0, 0, time.UTC) // 07:00 in Berlin, winter time
	deferred, err := h.st.DeferredTasks(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range []store.Task{reiFirst, reiSecond, kai} {
		if !deferred[task.ID].Equal(morning) {
			t.Errorf("task %d deferred until %s; want %s", task.ID, deferred[task.ID], morning)
		}
		// The timeline of the release's first push tells why it waits.
		events, err := h.st.MessageTimeline(ctx, alice, OccurrenceMessageID(task.ID, morning))
		want := `{"reason":"quiet_hours","until":"` + push.FormatTimestamp(morning) + `","taskUuid":"` + task.UUID + `"}`
		if err != nil || len(events) != 1 || events[0].Type != store.EventDeferred || string(events[0].Detail) != want {
			t.Errorf("task %d's timeline = %+v, %v; want one deferred %s", task.ID, events, err, want)
		}
	}

	h.clk.Set(morning.Add(-time.Second))
	if sum := h.tick(); sum.TotalTasks != 0 {
		t.Fatalf("a second before the window ends: %+v", sum)
	}
	h.clk.Set(morning)
	if sum := h.tick(); sum.SuccessCount != 3 {
		t.Fatalf("tick at the window's end: %+v", sum)
	}
	released := h.pushes()[2:]
	tags := map[string]int{}
	for _, p := range released {
		n, _ := p["notification"].(map[string]any)
		tags[fmtTag(n["tag"])]++
	}
	if len(released) != 4 || tags[ConversationTag("Rei")] != 3 || tags[ConversationTag("Kai")] != 1 {
		t.Fatalf("released pushes' tags %v of %d pushes; want Rei's 3 under one tag and Kai's 1", tags, len(released))
	}
	page, err := h.st.UnackedOutbox(ctx, alice, 0, 20)
	if err != nil {
		t.Fatal(err)
	}
	var messages []string
	for _, e := range page.Entries {
		var p map[string]any
		_ = json.Unmarshal(e.Payload, &p)
		messages = append(messages, fmtTag(p["message"]))
	}
	slices.Sort(messages)
	want := []string{"做个好梦。", "明早见！", "早上好", "晚安", "火警"}
	slices.Sort(want)
	if !slices.Equal(messages, want) {
		t.Errorf("outbox %v; want %v", messages, want)
	}
}

func fmtTag(v any) string { s, _ := v.(string); return s }

// Beyond the daily limit, occurrences go to the outbox and not by Web
// Push; a critical one still goes; the next local day has its own count.
func TestDailyLimitKeepsTheRestOutOfWebPushButInTheOutbox(t *testing.T) {
	h := newHarness(t, Config{})
	h.subscribe(alice)
	ctx := t.Context()
	if _, err := h.st.UpdatePreferences(ctx, alice, func(store.Preferences) store.Preferences {
		return store.Preferences{TimeZone: "Asia/Tokyo", DailyLimit: new(2)}
	}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("m" + string(rune('0'+i)))}, start)
	}
	h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("critical"), Priority: PriorityCritical}, start)
	if sum := h.tick(); sum.SuccessCount != 5 {
		t.Fatalf("tick: %+v", sum)
	}
	var sent []string
	for _, p := range h.pushes() {
		sent = append(sent, fmtTag(p["message"]))
	}
	if len(sent) != 3 || !slices.Contains(sent, "critical") {
		t.Fatalf("Web Push carried %v; want two within the limit and the critical one", sent)
	}
	page, err := h.st.UnackedOutbox(ctx, alice, 0, 20)
	if err != nil || len(page.Entries) != 5 {
		t.Fatalf("outbox holds %d, %v; want all 5", len(page.Entries), err)
	}
	deferred := 0
	for _, e := range page.Entries {
		events, err := h.st.MessageTimeline(ctx, alice, e.MessageID)
		if err != nil || len(events) == 0 {
			t.Fatalf("timeline of %s: %+v, %v", e.MessageID, events, err)
		}
		if last := events[len(events)-1]; last.Type == store.EventDeferred && string(last.Detail) == `{"reason":"daily_limit"}` {
			deferred++
		}
	}
	if deferred != 2 {
		t.Errorf("%d messages' timelines end deferred by the daily limit, want the 2 over it", deferred)
	}
	// 09:00 UTC is 18:00 in Tokyo; 15:00 UTC is the next day there.
	h.clk.Set(start.Add(6 * time.Hour))
	h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("tomorrow")}, h.clk.Now())
	h.tick()
	if got := h.pushes(); len(got) != 4 || fmtTag(got[3]["message"]) != "tomorrow" {
		t.Fatalf("the next local day's first push did not go by Web Push: %d pushes", len(got))
	}
}

// An instant task, which its user waits for in the request, is never held.
func TestQuietHoursNeverHoldAnInstantTask(t *testing.T) {
	h := newHarness(t, Config{})
	h.subscribe(alice)
	if _, err := h.st.UpdatePreferences(t.Context(), alice, func(store.Preferences) store.Preferences {
		return store.Preferences{QuietHours: &store.QuietHours{Start: 0, End: 23*60 + 59}, DailyLimit: new(0)}
	}); err != nil {
		t.Fatal(err)
	}
	p := Payload{MessageType: push.TypeInstant, ContactName: "Rei", MessageSubtype: "chat", RecurrenceType: push.RecurrenceNone, UserMessage: str("现在")}
	raw, _ := p.Encode()
	task, _, err := h.st.InsertTask(t.Context(), store.NewTask{UserID: alice, UUID: "20000000-0000-4000-8000-000000000001",
		MessageType: push.TypeInstant, NextSendAt: start, Payload: raw, LeaseUntil: h.sched.LeaseEnd()})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := h.sched.DeliverInstant(t.Context(), task); err != nil || res.MessagesSent != 1 || len(h.push.Pushes()) != 1 {
		t.Fatalf("instant in quiet hours = %+v, %v, %d pushes; want it sent", res, err, len(h.push.Pushes()))
	}
}

// A retry in quiet hours of a burst whose first pushes were delivered
// finishes it rather than holding the rest.
func TestQuietHoursLetARetryFinishTheBurstItStarted(t *testing.T) {
	h := newHarness(t, Config{})
	sub := h.subscribe(alice)
	started := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("一。二。")}, start)
	h.push.Respond(sub, 1, pushtest.Response{Status: http.StatusCreated})
	h.push.Respond(sub, 1, pushtest.Response{Status: http.StatusInternalServerError})
	if sum := h.tick(); sum.FailedCount != 1 {
		t.Fatalf("first attempt %s", mustJSON(t, sum))
	}
	retryAt := h.task(alice, started.UUID).RetryAfter
	if _, err := h.st.UpdatePreferences(t.Context(), alice, func(store.Preferences) store.Preferences {
		return store.Preferences{QuietHours: &store.QuietHours{Start: 0, End: 23*60 + 59}}
	}); err != nil {
		t.Fatal(err)
	}
	h.clk.Set(retryAt)
	if sum := h.tick(); sum.SuccessCount != 1 || !h.gone(alice, started.UUID) || len(h.pushes()) != 2 {
		t.Fatalf("retry in quiet hours %s, %d pushes; want the burst finished", mustJSON(t, sum), len(h.pushes()))
	}
}
