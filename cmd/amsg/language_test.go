package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"amsg/llm/llmtest"
)

// Done-when of issue 19 against the binary: a reply to a user with three
// devices is titled in Chinese on the one that reported zh-CN and in
// English on the one that reported en-US and the one that reported
// nothing, in the root title and in the declarative notification alike.
func TestNotificationsSpeakEachDevicesLanguage(t *testing.T) {
	rig := newTaskRig(t, "AMSG_PUBLIC_URL=https://amsg.example.org")
	p := rig.start(t)
	phone, laptop, tablet := rig.sub, rig.push.Subscribe(), rig.push.Subscribe()
	for _, put := range []map[string]any{
		{"subscription": phone, "language": "zh-CN"},
		{"subscription": laptop, "language": "en-US"},
		{"subscription": tablet},
	} {
		if status, body := rig.call(t, p, http.MethodPut, "push-subscription", put); status != http.StatusOK {
			t.Fatalf("push-subscription: %d %s", status, body)
		}
	}
	llm := llmtest.NewServer(t)
	llm.Enqueue(llmtest.Reply{Content: "Hello there."})
	postInstant(t, p.URL, map[string]string{"Accept-Language": "en-US"}, map[string]any{
		"contactName": "Rei", "messages": []any{map[string]any{"role": "user", "content": "hi"}},
		"apiUrl": llm.APIURL(), "apiKey": "k", "primaryModel": "m",
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	pushes, err := rig.push.WaitPushes(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	titles := map[string][2]string{}
	for _, pu := range pushes {
		var c struct {
			Title        string `json:"title"`
			Notification struct {
				Title string `json:"title"`
			} `json:"notification"`
		}
		json.Unmarshal(pu.JSON, &c)
		titles[pu.Endpoint] = [2]string{c.Title, c.Notification.Title}
	}
	want := map[string][2]string{
		phone.Endpoint:  {"来自 Rei", "来自 Rei"},
		laptop.Endpoint: {"From Rei", "From Rei"},
		tablet.Endpoint: {"From Rei", "From Rei"},
	}
	if !reflect.DeepEqual(titles, want) {
		t.Errorf("titles by device %q, want %q", titles, want)
	}
}

// An approval asked in English reaches the device that reported zh-CN with
// its body and buttons in Chinese, and the one that reported en-US as asked.
func TestApprovalsSpeakEachDevicesLanguage(t *testing.T) {
	rig := newTaskRig(t)
	p := rig.start(t)
	phone, laptop := rig.sub, rig.push.Subscribe()
	for _, put := range []map[string]any{{"subscription": phone, "language": "zh-CN"}, {"subscription": laptop, "language": "en-US"}} {
		if status, body := rig.call(t, p, http.MethodPut, "push-subscription", put); status != http.StatusOK {
			t.Fatalf("push-subscription: %d %s", status, body)
		}
	}
	llm := llmtest.NewServer(t)
	llm.Enqueue(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_mail", Name: "send_email", Arguments: "{}"}}})
	// Asked in Chinese: each device still hears its own language.
	postInstant(t, p.URL, map[string]string{"Accept-Language": "zh-CN"}, map[string]any{
		"contactName": "Rei", "messages": []any{map[string]any{"role": "user", "content": "mail the boss"}},
		"apiUrl": llm.APIURL(), "apiKey": "k", "primaryModel": "m", "approvalTools": []string{"send_email"},
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "send_email", "parameters": map[string]any{"type": "object"}}}},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	pushes, err := rig.push.WaitPushes(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	type texts struct{ Title, Body, Approve, Deny string }
	got := map[string]texts{}
	for _, pu := range pushes {
		var a struct {
			Notification struct {
				Title, Body string
				Actions     []struct{ Title string }
			} `json:"notification"`
		}
		json.Unmarshal(pu.JSON, &a)
		if len(a.Notification.Actions) != 2 {
			t.Fatalf("not an approval push: %s", pu.JSON)
		}
		got[pu.Endpoint] = texts{a.Notification.Title, a.Notification.Body, a.Notification.Actions[0].Title, a.Notification.Actions[1].Title}
	}
	want := map[string]texts{
		phone.Endpoint:  {"来自 Rei", "Rei 请你批准：send_email", "批准", "拒绝"},
		laptop.Endpoint: {"From Rei", "Rei asks for your approval: send_email", "Approve", "Deny"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("approval texts by device %+v, want %+v", got, want)
	}
}

// postInstant runs /instant for the rig's user with the request headers
// header (Accept-Language, traceparent), and fails t unless it answers 200.
func postInstant(t *testing.T, base string, header map[string]string, instant map[string]any) {
	t.Helper()
	body, _ := json.Marshal(instant)
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/instant", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-User-Id", taskUser)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/instant = %d %s", resp.StatusCode, got)
	}
}
