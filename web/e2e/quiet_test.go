package e2e_test

import (
	"testing"
	"time"

	"amsg/push"
	"amsg/scheduler"
	"amsg/store"
)

// TestQuietHoursSettingsAndTheWaitingMessage sets quiet hours and a daily
// limit in Settings, which the server then holds; a message due in them
// waits, and the schedule view says until when.
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
	payload, err := scheduler.Payload{ContactName: "Rei", MessageType: push.TypeFixed, MessageSubtype: "chat", UserMessage: new("晚安"),
		FirstSendTime: push.FormatTimestamp(due), RecurrenceType: push.RecurrenceNone}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := srv.Store.InsertTask(t.Context(), store.NewTask{UserID: id, UUID: push.NewUUID(), MessageType: push.TypeFixed,
		NextSendAt: due, Payload: payload}); err != nil {
		t.Fatal(err)
	}
	if sum := srv.fireAt(t, due); sum.TotalTasks != 1 || sum.SuccessCount != 0 || len(srv.Push.Pushes()) != 0 {
		t.Fatalf("a message due in quiet hours: %+v, %d pushes", sum, len(srv.Push.Pushes()))
	}
	p.Navigate(srv.URL + "/#/schedule")
	p.WaitFor(`document.querySelector('.task-deferred')`)
	var shown struct {
		Text string `json:"text"`
		At   string `json:"at"`
	}
	p.Eval(`(() => { const el = document.querySelector('.task-deferred'); return { text: el.textContent, at: el.querySelector('time').getAttribute('datetime') }; })()`, &shown)
	if shown.At != push.FormatTimestamp(until) || len(shown.Text) < len("Waits for your quiet hours to end") ||
		shown.Text[:len("Waits for your quiet hours to end")] != "Waits for your quiet hours to end" {
		t.Fatalf("the schedule view shows %+v; want it waiting until %s", shown, push.FormatTimestamp(until))
	}
}
