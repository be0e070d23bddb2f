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

	tokyo := loadTokyo(t)
	tomorrow := time.Now().In(tokyo).AddDate(0, 0, 1)
	at := func(hour, minute int) string {
		return wall(time.Date(tomorrow.Year(), tomorrow.Month(), tomorrow.Day(), hour, minute, 0, 0, tokyo))
	}
	views := []struct {
		name, hash, ready string
		prepare           func()
	}{
		{"onboarding", "#/welcome", `document.querySelector('#enable')`, nil},
		{"onboarding-done", "#/welcome", `document.querySelector('.onboarding .device-count')`, func() { onboard(t, b, p, srv.URL) }},
		{"chat-empty", "#/chat/new", `document.querySelector('.thread-empty')`, nil},
		{"chat", "#/chat/sess_demo", `document.querySelector('.tool-card')`, func() {
			seed(t, p, srv.URL, "#/chat/sess_demo", map[string]string{"amsg.conversations.v1": string(conv)})
		}},
		{"chat-list", "#/chat", `document.querySelector('.conversation')`, nil},
		{"chat-missing", "#/chat/sess_gone", `document.querySelector('.thread-empty h3')`, nil},
		{"schedule-empty", "#/schedule", `document.querySelector('.task-body[aria-busy=false] .empty')`, nil},
		{"schedule-new", "#/schedule/new", `document.querySelector('.task-form')`, nil},
		{"schedule", "#/schedule", `document.querySelectorAll('.task').length === 3`, func() {
			for _, task := range []struct {
				kind   string
				fields map[string]string
			}{
				{"fixed", map[string]string{"From": "Rei", "Message": "Good morning! Time to stretch and drink some water.",
					"Time zone": "Asia/Tokyo", "First time": at(8, 0), "Repeat": "daily"}},
				{"prompted", map[string]string{"From": "Rei", "Prompt": "Ask how the week went and suggest one small thing for the weekend.",
					"Time zone": "Asia/Tokyo", "First time": at(19, 30), "Repeat": "weekly"}},
				{"fixed", map[string]string{"From": "Team bot", "Message": "Stand-up in five minutes.",
					"Time zone": "Asia/Tokyo", "First time": at(9, 55), "Repeat": "cron", "Cron expression": "55 9 * * 1-5"}},
			} {
				openTaskForm(p, srv.URL)
				p.Eval(`document.querySelector('.task-form input[value=`+task.kind+`]').click()`, nil)
				fillTaskForm(t, p, task.fields)
				submitTaskForm(p)
			}
		}},
		{"settings", "#/settings", `document.querySelector('.device-count, .devices .error-text')`, nil},
	}
	for _, v := range views {
		if v.prepare != nil {
			v.prepare()
		}
		p.Navigate(srv.URL + "/" + v.hash)
		p.WaitFor(v.ready)
		if v.name == "chat-missing" {
			// The server's answer for the session, which Chromium logs.
			for _, e := range b.TakeConsoleErrors() {
				if !strings.Contains(e, "404") || !strings.Contains(e, "/api/v1/sessions/sess_gone") {
					t.Errorf("console error: %s", e)
				}
			}
		}
		var leaked string
		p.Eval(`(document.querySelector('main').innerText.match(/\b(null|undefined|NaN|\[object Object\])\b/) || [''])[0]`, &leaked)
		if leaked != "" {
			t.Errorf("%s shows %q", v.name, leaked)
		}
		// A toast left by the preparation is not part of the view.
		p.Eval(`document.getElementById('toast').classList.remove('show')`, nil)
		for _, scheme := range []string{"light", "dark"} {
			p.EmulateColorScheme(scheme)
			// Colours change with transitions; shoot once they ended.
			p.WaitFor(`document.getAnimations().every((a) => !(a instanceof CSSTransition))`)
			for _, vp := range []struct {
				name string
				v    browsertest.Viewport
			}{{"desktop", browsertest.Desktop}, {"phone", browsertest.Phone}} {
				p.SaveScreenshot(filepath.Join(dir, v.name+"-"+vp.name+"-"+scheme+".png"), vp.v)
			}
		}
		p.EmulateColorScheme("")
	}
	for _, e := range b.TakeConsoleErrors() {
		t.Errorf("console error: %s", e)
	}
	t.Logf("screenshots in %s", dir)
}
