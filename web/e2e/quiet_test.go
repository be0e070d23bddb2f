package e2e_test

import (
	"strings"
	"testing"
	"time"

	"amsg/push"
	"amsg/scheduler"
	"amsg/store"
	"amsg/web/browsertest"
)

// TestQuietHoursSettingsAndTheWaitingMessage sets quiet hours and a daily
// limit in Settings, which the server then holds; messages due in them
// wait, and the schedule view says until when; when the window ends they
// arrive, and the service worker shows one notification per conversation.
func TestQuietHoursSettingsAndTheWaitingMessage(t *testing.T) {
	srv, p, id, _ := newSchedulingPage(t)
	p.Navigate(srv.URL + "/#/settings")
	p.WaitFor(`document.querySelector('.quiet-form[data-loaded=true]')`)
	p.Eval(`(() => {
		const form = document.querySelector('.quiet-form');
		const byLabel = (text) => {
			const l = [...form.querySelectorAll('label')].find((l) => l.textContent.trim() === text);
			return document.getElementById(l.htmlFor);
		};
		const enabled = form.querySelector('input[type=checkbox]');
		enabled.checked = true;
		enabled.dispatchEvent(new Event('change', { bubbles: true }));
		byLabel('From').value = '22:30';
		byLabel('Until').value = '06:45';
		byLabel('Time zone').value = 'Asia/Tokyo';
		byLabel('Notifications per day').value = '3';
		form.requestSubmit();
		return true;
	})()`, nil)
	p.WaitFor(`document.querySelector('.quiet-form .save-status').textContent !== ''`)
	var status string
	p.Eval(`document.querySelector('.quiet-form .save-status').textContent`, &status)
	prefs, err := srv.Store.Preferences(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if status != "Saved" || prefs.TimeZone != "Asia/Tokyo" || prefs.QuietHours == nil ||
		*prefs.QuietHours != (store.QuietHours{Start: 22*60 + 30, End: 6*60 + 45}) || prefs.DailyLimit == nil || *prefs.DailyLimit != 3 {
		t.Fatalf("after saving (%q) the server holds %+v", status, prefs)
	}

	tokyo := loadTokyo(t)
	now := time.Now().In(tokyo)
	due := time.Date(now.Year(), now.Month(), now.Day()+1, 23, 0, 0, 0, tokyo)
	until := time.Date(now.Year(), now.Month(), now.Day()+2, 6, 45, 0, 0, tokyo)
	for _, m := range []struct{ contact, text string }{{"Rei", "晚安"}, {"Rei", "做个好梦"}, {"Kai", "明天见"}} {
		payload, err := scheduler.Payload{ContactName: m.contact, MessageType: push.TypeFixed, MessageSubtype: "chat", UserMessage: new(m.text),
			FirstSendTime: push.FormatTimestamp(due), RecurrenceType: push.RecurrenceNone}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := srv.Store.InsertTask(t.Context(), store.NewTask{UserID: id, UUID: push.NewUUID(), MessageType: push.TypeFixed,
			NextSendAt: due, Payload: payload}); err != nil {
			t.Fatal(err)
		}
	}
	if sum := srv.fireAt(t, due); sum.TotalTasks != 3 || sum.SuccessCount != 0 || len(srv.Push.Pushes()) != 0 {
		t.Fatalf("messages due in quiet hours: %+v, %d pushes", sum, len(srv.Push.Pushes()))
	}
	p.Navigate(srv.URL + "/#/schedule")
	p.WaitFor(`document.querySelectorAll('.task-deferred').length === 3`)
	var shown struct {
		Text string `json:"text"`
		At   string `json:"at"`
	}
	p.Eval(`(() => { const el = document.querySelector('.task-deferred'); return { text: el.textContent, at: el.querySelector('time').getAttribute('datetime') }; })()`, &shown)
	if shown.At != push.FormatTimestamp(until) || !strings.HasPrefix(shown.Text, "Waits for your quiet hours to end") {
		t.Fatalf("the schedule view shows %+v; want it waiting until %s", shown, push.FormatTimestamp(until))
	}

	// The window ends: three messages, two conversations, two notifications.
	if sum := srv.fireAt(t, until); sum.SuccessCount != 3 {
		t.Fatalf("tick at the window's end: %+v", sum)
	}
	var plaintexts []string
	for n := 1; n <= 3; n++ {
		plaintexts = append(plaintexts, string(srv.waitPush(t, n)))
	}
	deliverPushes(p, plaintexts...)
	p.WaitNotification("Kai's released message", func(n browsertest.Notification) bool { return n.Tag == scheduler.ConversationTag("Kai") })
	tags := map[string]int{}
	for _, n := range p.Notifications() {
		tags[n.Tag]++
	}
	if len(tags) != 2 || tags[scheduler.ConversationTag("Rei")] != 1 || tags[scheduler.ConversationTag("Kai")] != 1 {
		t.Fatalf("notifications shown by tag %v; want one for Rei and one for Kai", tags)
	}
}
