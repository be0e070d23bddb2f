package api

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Done-when: a cron task (*/1 * * * *) fires on consecutive minutes, over
// real HTTP. The clock is injected (the test's, shared by store, scheduler
// and handlers) and each minute's tick is triggered with POST
// /send-notifications: against the real binary this would wait two real
// minutes per run, and a clock hook in the production binary would be a
// test-only back door.
func TestCronTaskFiresOnConsecutiveMinutesOverHTTP(t *testing.T) {
	e := newTaskEnv(t, Config{})
	e.subscribe(t, testUserID)
	srv := httptest.NewServer(e.s)
	defer srv.Close()
	req := encryptedRequest(t, http.MethodPost, srv.URL+"/api/v1/schedule-message", testUserID, fixedTask(map[string]any{
		"recurrenceType": "cron", "cronExpr": "*/1 * * * *", "firstSendTime": "2026-06-01T09:01:00Z"}))
	req.RequestURI = ""
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("schedule: %v %v", resp, err)
	}
	resp.Body.Close()
	for minute := 1; minute <= 3; minute++ {
		e.clk.Add(time.Minute)
		resp, err := http.Post(srv.URL+"/api/v1/send-notifications", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), `"successCount":1`) || !strings.Contains(string(body), `"updatedRecurringTasks":1`) {
			t.Fatalf("minute %d: %s", minute, body)
		}
	}
	pushes := e.fake.Pushes()
	if len(pushes) != 3 {
		t.Fatalf("%d pushes", len(pushes))
	}
	for i, p := range pushes {
		var m struct {
			OccurrenceMs   int64  `json:"occurrenceMs"`
			RecurrenceType string `json:"recurrenceType"`
		}
		_ = json.Unmarshal(p.JSON, &m)
		if want := taskEpoch.Add(time.Duration(i+1) * time.Minute).UnixMilli(); m.OccurrenceMs != want || m.RecurrenceType != "cron" {
			t.Errorf("push %d: occurrence %d (%s), want %d", i, m.OccurrenceMs, m.RecurrenceType, want)
		}
	}
}

// A cron task needs no firstSendTime: it starts at its expression's next
// time, in its zone.
func TestCronTaskWithoutAFirstTimeStartsAtItsNextTime(t *testing.T) {
	e := newTaskEnv(t, Config{})
	e.subscribe(t, testUserID)
	got := e.schedule(t, testUserID, fixedTask(map[string]any{
		"firstSendTime": nil, "recurrenceType": "cron", "cronExpr": "30 9 * * *", "tzId": "Asia/Tokyo"}))
	if got.status != http.StatusCreated {
		t.Fatalf("%d %s", got.status, got.body)
	}
	var data struct{ NextSendAt string }
	decodeData(t, got.body, &data)
	// 09:00 UTC is 18:00 in Tokyo; the next 09:30 there is 00:30 UTC tomorrow.
	if data.NextSendAt != "2026-06-02T00:30:00.000Z" {
		t.Errorf("nextSendAt %s", data.NextSendAt)
	}
	// Other recurrences still need one.
	got = e.schedule(t, testUserID, fixedTask(map[string]any{"firstSendTime": nil, "recurrenceType": "daily"}))
	if got.status != http.StatusBadRequest || !strings.Contains(got.body, "INVALID_TIMESTAMP") {
		t.Errorf("daily without firstSendTime: %d %s", got.status, got.body)
	}
}
