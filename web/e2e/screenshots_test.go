package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"amsg/web/browsertest"
)

// demoConversation is a finished chat turn with every kind of item, for the
// screenshots.
func demoConversation(now time.Time) map[string]any {
	at := func(d time.Duration) int64 { return now.Add(-d).UnixMilli() }
	return map[string]any{
		"id": "sess_demo", "sessionIds": []string{"sess_demo"}, "contactName": "Rei", "title": "What time is it where I am?",
		"createdAt": at(3 * time.Minute), "updatedAt": at(2 * time.Minute), "unread": 0, "history": []any{},
		"items": []any{
			map[string]any{"id": "u1", "type": "user", "text": "What time is it where I am?", "at": at(3 * time.Minute)},
			map[string]any{"id": "r1", "type": "reasoning", "text": "The user wants the local time. I should ask the browser for it.", "at": at(3 * time.Minute)},
			map[string]any{"id": "t1", "type": "tool", "text": "", "at": at(3 * time.Minute), "calls": []any{
				map[string]any{"id": "call_1", "name": "get_current_time", "state": "done", "result": `{"iso":"2026-11-22T21:04:11+01:00"}`},
				map[string]any{"id": "call_2", "name": "get_timezone", "state": "done", "result": `{"timeZone":"Europe/Paris"}`},
			}},
			map[string]any{"id": "c1", "type": "content", "text": "It is 21:04 in Paris, a Sunday evening.", "at": at(2 * time.Minute)},
			map[string]any{"id": "c2", "type": "content", "text": "Want me to remind you of anything before the week starts?", "at": at(2 * time.Minute)},
		},
	}
}

func demoSettings() map[string]string {
	return map[string]string{
		"amsg.llm": `{"apiUrl":"https://llm.example/v1","apiKey":"sk-demo","model":"demo-model","contactName":"Rei"}`,
	}
}

// seed writes localStorage entries and loads the page again on hash (a new
// document: the page reads its storage once).
func seed(t *testing.T, p *browsertest.Page, base, hash string, entries map[string]string) {
	t.Helper()
	data, err := json.Marshal(entries)
	if err != nil {
		t.Fatal(err)
	}
	p.Eval(`(() => { for (const [k, v] of Object.entries(`+string(data)+`)) localStorage.setItem(k, v); })()`, nil)
	p.Navigate(base + "/?seeded=" + strconv.FormatInt(time.Now().UnixNano(), 36) + hash)
}

func screenshotDir(t *testing.T) string {
	dir := os.Getenv("AMSG_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "amsg-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestScreenshots saves every view at both viewports, light and dark, for a
// person to look at, and fails on any console error along the way.
func TestScreenshots(t *testing.T) {
	srv := newServer(t)
	b := browsertest.New(t, browsertest.Config{})
	p, _ := openPage(t, b, srv, "")
	conv, err := json.Marshal([]any{demoConversation(time.Now())})
	if err != nil {
		t.Fatal(err)
	}
	entries := demoSettings()
	seed(t, p, srv.URL, "#/welcome", entries)
	dir := screenshotDir(t)

	views := []struct{ name, hash, ready string }{
		{"onboarding", "#/welcome", `document.querySelector('#enable')`},
		{"onboarding-done", "#/welcome", `document.querySelector('.onboarding .device-count')`},
		{"chat-empty", "#/chat/new", `document.querySelector('.thread-empty')`},
		{"chat", "#/chat/sess_demo", `document.querySelector('.tool-card')`},
		{"chat-list", "#/chat", `document.querySelector('.conversation')`},
		{"schedule", "#/schedule", `document.querySelector('.task-body[aria-busy=false]')`},
		{"schedule-new", "#/schedule/new", `document.querySelector('.task-form')`},
		{"settings", "#/settings", `document.querySelector('.device-count, .devices .error-text')`},
	}
	for _, v := range views {
		if v.name == "onboarding-done" {
			onboard(t, b, p, srv.URL)
		}
		if v.name == "chat" {
			seed(t, p, srv.URL, v.hash, map[string]string{"amsg.conversations.v1": string(conv)})
		}
		p.Navigate(srv.URL + "/" + v.hash)
		p.WaitFor(v.ready)
		var leaked string
		p.Eval(`(document.querySelector('main').innerText.match(/\b(null|undefined|NaN|\[object Object\])\b/) || [''])[0]`, &leaked)
		if leaked != "" {
			t.Errorf("%s shows %q", v.name, leaked)
		}
		for _, scheme := range []string{"light", "dark"} {
			p.EmulateColorScheme(scheme)
			for _, vp := range []struct {
				name string
				v    browsertest.Viewport
			}{{"desktop", browsertest.Desktop}, {"phone", browsertest.Phone}} {
				p.SaveScreenshot(filepath.Join(dir, v.name+"-"+vp.name+"-"+scheme+".png"), vp.v)
			}
		}
		p.EmulateColorScheme("")
	}
	// Until the task API is mounted, the schedule list shows its error state.
	for _, e := range b.TakeConsoleErrors() {
		if !strings.Contains(e, "404") || !strings.Contains(e, "/api/v1/messages") {
			t.Errorf("console error: %s", e)
		}
	}
	t.Logf("screenshots in %s", dir)
}
