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
	body, _ := json.Marshal(map[string]any{
		"contactName": "Rei", "messages": []any{map[string]any{"role": "user", "content": "hi"}},
		"apiUrl": llm.APIURL(), "apiKey": "k", "primaryModel": "m",
	})
	req, _ := http.NewRequest(http.MethodPost, p.URL+"/api/v1/instant", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-User-Id", taskUser)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/instant = %d %s", resp.StatusCode, got)
	}
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
