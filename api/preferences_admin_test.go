package api

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"amsg/scheduler"
	"amsg/store"
)

// An operator send inside the user's quiet hours waits as a task listed
// with deferredUntil, and arrives at the window's end; a critical one goes
// at once; past the daily limit a send is in the outbox and not sent.
func TestAdminSendRespectsQuietHoursAndTheDailyLimit(t *testing.T) {
	e := newTaskEnv(t, Config{AdminToken: testAdminToken})
	e.subscribe(t, testUserID)
	ctx := t.Context()
	// 09:00 UTC is 18:00 in Tokyo: quiet from 17:30 to 19:00.
	if _, err := e.st.UpdatePreferences(ctx, testUserID, func(store.Preferences) store.Preferences {
		return store.Preferences{TimeZone: "Asia/Tokyo", QuietHours: &store.QuietHours{Start: 17*60 + 30, End: 19 * 60}, DailyLimit: new(1)}
	}); err != nil {
		t.Fatal(err)
	}
	r := adminDo(e.s, http.MethodPost, "/api/v1/admin/send", `{"userId":"`+testUserID+`","message":"later","contactName":"Ops"}`)
	var held adminSendResult
	decodeData(t, r.body, &held)
	end := taskEpoch.Add(time.Hour)
	if r.status != http.StatusOK || held.DeferredUntil != "2026-06-01T10:00:00.000Z" || held.TaskUUID == "" || len(e.fake.Pushes()) != 0 {
		t.Fatalf("send in quiet hours: %d %s, %d pushes; want it deferred to %s", r.status, r.body, len(e.fake.Pushes()), end)
	}
	var list struct {
		Tasks []taskView `json:"tasks"`
	}
	decrypted(t, testUserID, do(t, e.s, http.MethodGet, "/api/v1/messages", map[string]string{"X-User-Id": testUserID}), &list)
	if len(list.Tasks) != 1 || list.Tasks[0].UUID != held.TaskUUID || list.Tasks[0].DeferredUntil != held.DeferredUntil {
		t.Fatalf("GET /messages = %+v; want the deferred send with deferredUntil", list.Tasks)
	}
	critical := adminDo(e.s, http.MethodPost, "/api/v1/admin/send", `{"userId":"`+testUserID+`","message":"now","priority":"critical"}`)
	if critical.status != http.StatusOK || len(e.fake.Pushes()) != 1 {
		t.Fatalf("critical send: %d %s, %d pushes", critical.status, critical.body, len(e.fake.Pushes()))
	}
	if bad := adminDo(e.s, http.MethodPost, "/api/v1/admin/send", `{"userId":"`+testUserID+`","message":"x","priority":"urgent"}`); bad.status != http.StatusBadRequest || errorCode(bad.body) != "INVALID_PRIORITY" {
		t.Fatalf("priority urgent: %d %s", bad.status, bad.body)
	}

	e.clk.Set(end)
	if _, err := e.s.deps.Scheduler.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(e.fake.Pushes()); n != 2 {
		t.Fatalf("%d pushes after the window; want the deferred send released", n)
	}
	// The release took the day's one slot: the next send is outbox only.
	over := adminDo(e.s, http.MethodPost, "/api/v1/admin/send", `{"userId":"`+testUserID+`","message":"over the limit"}`)
	var res adminSendResult
	decodeData(t, over.body, &res)
	if over.status != http.StatusOK || !res.OutboxOnly || res.Delivered || len(e.fake.Pushes()) != 2 {
		t.Fatalf("send past the daily limit: %d %s, %d pushes", over.status, over.body, len(e.fake.Pushes()))
	}
	page, err := e.st.UnackedOutbox(ctx, testUserID, 0, 10)
	if err != nil || len(page.Entries) != 3 || page.Entries[2].MessageID != res.MessageID {
		t.Fatalf("outbox %+v, %v; want the three sends, the last outbox only", page.Entries, err)
	}
	// The messages' timelines say why they waited (issue 25).
	for id, want := range map[string]string{held.MessageID: "quiet_hours", res.MessageID: "daily_limit"} {
		events, err := e.st.MessageTimeline(ctx, testUserID, id)
		if err != nil || !slices.ContainsFunc(events, func(ev store.MessageEvent) bool {
			return ev.Type == store.EventDeferred && strings.Contains(string(ev.Detail), `"reason":"`+want+`"`)
		}) {
			t.Errorf("timeline of %s = %+v, %v; want it deferred by %s", id, events, err, want)
		}
	}
}

// A task's priority is set by schedule-message and update-message, and
// refused when it is neither normal nor critical.
func TestTaskPriority(t *testing.T) {
	e := newTaskEnv(t, Config{})
	e.subscribe(t, testUserID)
	if bad := e.schedule(t, testUserID, fixedTask(map[string]any{"priority": "urgent"})); bad.status != http.StatusBadRequest || errorCode(bad.body) != "INVALID_PRIORITY" {
		t.Fatalf("schedule with priority urgent: %d %s", bad.status, bad.body)
	}
	created := e.schedule(t, testUserID, fixedTask(map[string]any{"priority": "critical"}))
	var task struct {
		UUID string `json:"uuid"`
	}
	decodeData(t, created.body, &task)
	priority := func() string {
		stored, err := e.st.Task(t.Context(), testUserID, task.UUID)
		if err != nil {
			t.Fatal(err)
		}
		p, err := scheduler.TaskPayload(stored)
		if err != nil {
			t.Fatal(err)
		}
		return p.Priority
	}
	if got := priority(); got != scheduler.PriorityCritical {
		t.Fatalf("stored priority %q; want critical", got)
	}
	if bad := e.update(t, testUserID, task.UUID, map[string]any{"priority": 1}); bad.status != http.StatusBadRequest || errorCode(bad.body) != "INVALID_PRIORITY" {
		t.Fatalf("update with priority 1: %d %s", bad.status, bad.body)
	}
	if ok := e.update(t, testUserID, task.UUID, map[string]any{"priority": "normal"}); ok.status != http.StatusOK || !strings.Contains(ok.body, `"priority"`) {
		t.Fatalf("update to normal: %d %s", ok.status, ok.body)
	}
	if got := priority(); got != "" {
		t.Fatalf("stored priority %q after the update; want normal", got)
	}
}
