package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"amsg/push"
)

// The binary holds a task due in the user's quiet hours (listed with
// deferredUntil, nothing pushed), lets a critical one through, and past the
// daily limit keeps a push off Web Push but in the outbox.
func TestQuietHoursAndTheDailyLimitOverHTTP(t *testing.T) {
	r := newTaskRig(t)
	p := r.start(t)
	r.register(t, p)
	now := time.Now().UTC()
	minute := now.Hour()*60 + now.Minute()
	clock := func(m int) string { m = (m + 24*60) % (24 * 60); return fmt.Sprintf("%02d:%02d", m/60, m%60) }
	status, body := r.call(t, p, http.MethodPut, "preferences", map[string]any{"timeZone": "UTC",
		"quietHours": map[string]string{"start": clock(minute - 30), "end": clock(minute + 60)}})
	if status != http.StatusOK {
		t.Fatalf("PUT preferences: %d %s", status, body)
	}
	end := now.Truncate(time.Minute).Add(60 * time.Minute)
	due := push.FormatTimestamp(now.Add(time.Second))
	_, held := r.schedule(t, p, map[string]any{"contactName": "Rei", "messageType": "fixed", "userMessage": "晚安", "firstSendTime": due})
	r.schedule(t, p, map[string]any{"contactName": "Rei", "messageType": "fixed", "userMessage": "火警", "firstSendTime": due, "priority": "critical"})
	p.WaitLog(t, "waits for the end of quiet hours", 10*time.Second)
	p.WaitLog(t, "task delivered", 10*time.Second) // the critical one
	_, body = r.call(t, p, http.MethodGet, "messages", nil)
	var list struct {
		Tasks []struct {
			UUID          string `json:"uuid"`
			DeferredUntil string `json:"deferredUntil"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(body, &list); err != nil || len(list.Tasks) != 1 || list.Tasks[0].UUID != held ||
		list.Tasks[0].DeferredUntil != push.FormatTimestamp(end) {
		t.Fatalf("GET /messages = %s; want the held task until %s", body, push.FormatTimestamp(end))
	}

	if status, body := r.call(t, p, http.MethodPut, "preferences", map[string]any{"quietHours": nil, "dailyLimit": 1}); status != http.StatusOK {
		t.Fatalf("PUT preferences: %d %s", status, body)
	}
	due = push.FormatTimestamp(time.Now().Add(time.Second))
	for _, text := range []string{"one", "two"} {
		r.schedule(t, p, map[string]any{"contactName": "Rei", "messageType": "fixed", "userMessage": text, "firstSendTime": due})
	}
	p.WaitLogs(t, "task delivered", 3, 10*time.Second)
	if n := len(r.push.Pushes()); n != 2 {
		t.Fatalf("%d pushes; want the critical one and one within the daily limit", n)
	}
	_, body = r.call(t, p, http.MethodGet, "outbox", nil)
	var outbox struct {
		Entries []json.RawMessage `json:"entries"`
	}
	if err := json.Unmarshal(body, &outbox); err != nil || len(outbox.Entries) != 3 {
		t.Fatalf("outbox = %s; want the three delivered tasks", body)
	}
}

// An Idempotency-Key's answer outlives the process: after a restart the
// same request (sealed afresh) replays it and creates nothing.
func TestIdempotencyKeySurvivesARestart(t *testing.T) {
	r := newTaskRig(t)
	p := r.start(t)
	r.register(t, p)
	task := map[string]any{"contactName": "Rei", "messageType": "fixed", "userMessage": "once",
		"firstSendTime": push.FormatTimestamp(time.Now().Add(time.Hour))}
	key := map[string]string{"Idempotency-Key": "restart-1"}
	status, first, _ := r.callWith(t, p, http.MethodPost, "schedule-message", task, key)
	if status != http.StatusCreated {
		t.Fatalf("schedule-message: %d %s", status, first)
	}
	if err := p.Stop(t); err != nil {
		t.Fatal(err)
	}
	p = r.start(t)
	status, again, header := r.callWith(t, p, http.MethodPost, "schedule-message", task, key)
	if status != http.StatusCreated || string(again) != string(first) || header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay after a restart: %d %s %v; want %s replayed", status, again, header, first)
	}
	_, body := r.call(t, p, http.MethodGet, "messages", nil)
	var list struct {
		Pagination struct {
			Total int `json:"total"`
		} `json:"pagination"`
	}
	if err := json.Unmarshal(body, &list); err != nil || list.Pagination.Total != 1 {
		t.Fatalf("GET /messages = %s; want one task", body)
	}
}
