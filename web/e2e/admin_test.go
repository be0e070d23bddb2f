package e2e_test

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"amsg/push"
	"amsg/store"
	"amsg/web/browsertest"
)

// adminToken is the operator token of the e2e server.
const adminToken = "e2e-operator-token"

// The operator page asks for the token, then shows users, tasks, failed
// deliveries and the per-minute chart, and sends a notification that the
// fake push service decrypts.
func TestAdminPage(t *testing.T) {
	srv := newServer(t)
	ctx := t.Context()
	const user = "550e8400-e29b-41d4-a716-446655440000"
	sub := srv.Push.Subscribe()
	raw, err := json.Marshal(sub)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Store.PutSubscription(ctx, user, raw, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := srv.Store.InsertTask(ctx, store.NewTask{UserID: user, UUID: "00000000-0000-4000-8000-000000000001",
		MessageType: push.TypeFixed, NextSendAt: time.Now().Add(time.Hour), Payload: json.RawMessage(`{"contactName":"Rei","userMessage":"walk"}`)}); err != nil {
		t.Fatal(err)
	}
	var attempts []push.Attempt
	for i := range 90 {
		minute := i * 13
		if i%4 == 0 { // a few busy minutes, so the bars differ
			minute = (i - i%12) * 13
		}
		outcome, status, errText := push.OutcomeDelivered, 201, ""
		if i%9 == 0 {
			outcome, status, errText = push.OutcomeGone, 410, "410 Gone"
		} else if i%7 == 0 {
			outcome, status, errText = push.OutcomeRetry, 429, "429 Too Many Requests"
		}
		attempts = append(attempts, push.Attempt{At: time.Now().Add(-time.Duration(minute) * time.Minute), MessageID: "m" + strconv.Itoa(i),
			UserID: user, DeviceID: 1, PushHost: "fcm.googleapis.com", Try: 1, Status: status, Outcome: outcome, Error: errText})
	}
	if err := srv.Store.RecordDeliveries(ctx, push.Bookkeeping{Attempts: attempts}); err != nil {
		t.Fatal(err)
	}

	b := browsertest.New(t, browsertest.Config{})
	p := b.NewPage()
	p.Navigate(srv.URL + "/admin")
	p.WaitFor(`!document.getElementById('signin').hidden`)
	dir := screenshotDir(t)
	p.SaveScreenshot(filepath.Join(dir, "admin-signin-desktop.png"), browsertest.Desktop)
	p.SaveScreenshot(filepath.Join(dir, "admin-signin-phone.png"), browsertest.Phone)
	p.Eval(`(() => {
		document.getElementById('token').value = 'wrong';
		document.getElementById('signin-form').requestSubmit();
	})()`, nil)
	p.WaitFor(`document.getElementById('signin-error').textContent.includes('not accepted')`)
	if errs := b.TakeConsoleErrors(); len(errs) != 1 || !strings.Contains(errs[0], "401") {
		t.Fatalf("console errors after a wrong token: %v, want its one 401", errs)
	}
	p.Eval(`(() => {
		document.getElementById('token').value = `+strconv.Quote(adminToken)+`;
		document.getElementById('signin-form').requestSubmit();
	})()`, nil)
	p.WaitFor(`document.querySelector('#users tbody td.id')?.textContent === ` + strconv.Quote(user))
	p.WaitFor(`document.querySelectorAll('#chart rect').length >= 60`)
	var failedRows, taskText, totals string
	p.Eval(`String(document.querySelectorAll('#failed tbody tr').length)`, &failedRows)
	p.Eval(`document.querySelector('#tasks tbody').textContent`, &taskText)
	p.Eval(`document.getElementById('totals').textContent`, &totals)
	if n, _ := strconv.Atoi(failedRows); n < 10 || !strings.Contains(taskText, "Rei") || !strings.Contains(totals, "90 attempts") {
		t.Fatalf("failed rows %s, tasks %q, totals %q", failedRows, taskText, totals)
	}

	p.Eval(`document.querySelector('#users button[aria-label^="Devices of"]').click()`, nil)
	p.WaitFor(`document.querySelector('#devices li')?.textContent.startsWith(` + strconv.Quote(strings.TrimPrefix(srv.Push.URL, "http://")) + `)`)
	for _, scheme := range []string{"light", "dark"} {
		p.EmulateColorScheme(scheme)
		p.SaveScreenshot(filepath.Join(dir, "admin-desktop-"+scheme+".png"), browsertest.Desktop)
		p.SaveScreenshot(filepath.Join(dir, "admin-phone-"+scheme+".png"), browsertest.Phone)
		for name, vp := range map[string]browsertest.Viewport{"desktop": browsertest.Desktop, "phone": browsertest.Phone} {
			p.Screenshot(vp) // lays the page out at vp before scrolling
			p.Eval(`document.getElementById('users-title').scrollIntoView()`, nil)
			p.SaveScreenshot(filepath.Join(dir, "admin-"+name+"-users-"+scheme+".png"), vp)
			p.Eval(`window.scrollTo(0, 0)`, nil)
		}
	}
	p.EmulateColorScheme("")

	p.Eval(`(() => {
		document.getElementById('send-user').value = `+strconv.Quote(user)+`;
		document.getElementById('send-message').value = 'Hello from the operator';
		document.getElementById('send-form').requestSubmit();
	})()`, nil)
	var got struct{ MessageKind, Message string }
	if err := json.Unmarshal(srv.waitPush(t, 1), &got); err != nil {
		t.Fatal(err)
	}
	if got.MessageKind != "content" || got.Message != "Hello from the operator" {
		t.Fatalf("push = %+v", got)
	}
	p.WaitFor(`document.getElementById('send-result').textContent.startsWith('Delivered')`)
	if errs := b.TakeConsoleErrors(); len(errs) > 0 {
		t.Fatalf("console errors: %v", errs)
	}
}

// Issue 23, point 9: on a fresh server the operator page has its level-one
// heading, its chart spans the hour that saw attempts rather than squeezing
// them into a sliver of the day, and a push retried four times is one row
// of the failed deliveries, not four.
func TestAdminPageFitsAFreshServer(t *testing.T) {
	srv := newServer(t)
	const user = "550e8400-e29b-41d4-a716-446655440000"
	now := time.Now()
	attempt := func(ago time.Duration, id string, try int, outcome push.Outcome, status int, errText string) push.Attempt {
		return push.Attempt{At: now.Add(-ago), MessageID: id, UserID: user, DeviceID: 1, PushHost: "fcm.googleapis.com",
			Try: try, Status: status, Outcome: outcome, Error: errText}
	}
	attempts := []push.Attempt{attempt(20*time.Minute, "m1", 1, push.OutcomeDelivered, 201, ""),
		attempt(3*time.Minute, "m3", 1, push.OutcomeGone, 410, "410 Gone")}
	for try := 1; try <= 4; try++ {
		attempts = append(attempts, attempt(time.Duration(15-try)*time.Minute, "m2", try, push.OutcomeRetry, 503, "503 Service Unavailable"))
	}
	if err := srv.Store.RecordDeliveries(t.Context(), push.Bookkeeping{Attempts: attempts}); err != nil {
		t.Fatal(err)
	}

	b := browsertest.New(t, browsertest.Config{})
	p := signInAdmin(b, srv.URL)
	p.WaitFor(`document.querySelectorAll('#failed tbody tr').length > 0 && document.querySelectorAll('#chart rect').length > 0`)
	var heading, rows, title string
	var barWidth, leftmost float64
	p.Eval(`[...document.querySelectorAll('h1')].filter((h) => !h.closest('[hidden]')).map((h) => h.textContent).join('|')`, &heading)
	p.Eval(`[...document.querySelectorAll('#failed tbody tr')].map((r) => r.textContent).join('|')`, &rows)
	p.Eval(`document.getElementById('chart-title').textContent`, &title)
	p.Eval(`Math.min(...[...document.querySelectorAll('#chart rect')].map((r) => r.width.baseVal.value))`, &barWidth)
	p.Eval(`Math.min(...[...document.querySelectorAll('#chart rect')].map((r) => r.x.baseVal.value))`, &leftmost)
	if heading == "" || strings.Contains(heading, "|") {
		t.Errorf("visible level-one headings %q, want one", heading)
	}
	if n := strings.Count(rows, "|") + 1; n != 2 || !strings.Contains(rows, "4 tries") {
		t.Errorf("failed rows %q, want 2, the retried push's with 4 tries", rows)
	}
	// 60 minutes over the chart's 1440 units: bars 23 wide, the first
	// attempt 20 minutes ago at two thirds of the width.
	if barWidth < 20 || leftmost < 900 || leftmost > 1000 || !strings.Contains(title, "last 60 min") {
		t.Errorf("chart %q: bars %.0f wide, the first at x=%.0f; want the last hour across the chart", title, barWidth, leftmost)
	}
	if errs := b.TakeConsoleErrors(); len(errs) > 0 {
		t.Fatalf("console errors: %v", errs)
	}
}

// signInAdmin opens the operator page at serverURL in b and signs in with
// the operator token.
func signInAdmin(b *browsertest.Browser, serverURL string) *browsertest.Page {
	p := b.NewPage()
	p.Navigate(serverURL + "/admin")
	p.WaitFor(`!document.getElementById('signin').hidden`)
	p.Eval(`(() => {
		document.getElementById('token').value = `+strconv.Quote(adminToken)+`;
		document.getElementById('signin-form').requestSubmit();
	})()`, nil)
	return p
}
