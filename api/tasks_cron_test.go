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
