package e2e_test

import (
	"encoding/json"
	"testing"
	"time"

	"amsg/push"
	"amsg/scheduler"
	"amsg/store"
	"amsg/web/browsertest"
)

// fillTaskForm sets the schedule form's fields, found by their labels, as a
// person would: each gets its value and the input and change events.
func fillTaskForm(t *testing.T, p *browsertest.Page, values map[string]string) {
	t.Helper()
	data, err := json.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	p.Eval(`(() => {
		const missing = [];
		for (const [label, value] of Object.entries(`+string(data)+`)) {
			const l = [...document.querySelectorAll('.task-form label')].find((l) => l.textContent.trim() === label);
			const el = l && document.getElementById(l.htmlFor);
			if (!el) { missing.push(label); continue; }
			el.value = value;
			el.dispatchEvent(new Event('input', { bubbles: true }));
			el.dispatchEvent(new Event('change', { bubbles: true }));
		}
		return missing;
	})()`, &missing)
	if len(missing) > 0 {
		t.Fatalf("the form has no field labelled %q", missing)
	}
}

// submitTaskForm submits the form and waits for the list it returns to.
func submitTaskForm(p *browsertest.Page) {
	p.Eval(`document.querySelector('.task-form button[type=submit]').click()`, nil)
	p.WaitFor(`location.hash === '#/schedule' && document.querySelector('.task-body[aria-busy=false]')`)
}

// onlyTask returns the user's one task and its payload.
func onlyTask(t *testing.T, srv *server, userID string) (store.Task, scheduler.Payload) {
	t.Helper()
	tasks, total, err := srv.Store.Tasks(t.Context(), userID, "", 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	if total != 1 {
		t.Fatalf("the user has %d tasks, want 1", total)
	}
	p, err := scheduler.DecodePayload(tasks[0].Payload)
	if err != nil {
		t.Fatal(err)
	}
	return tasks[0], p
}

// taskRow is what the list shows of a task.
type taskRow struct {
	UUID   string `json:"uuid"`
	Badges string `json:"badges"`
	Note   string `json:"note"`
	Next   string `json:"next"` // the datetime of its <time>
	Text   string `json:"text"`
}

const readTaskRowsJS = `[...document.querySelectorAll('.task')].map((row) => ({
	uuid: row.dataset.uuid,
	badges: [...row.querySelectorAll('.badge')].map((b) => b.textContent).join(' | '),
	note: (row.querySelector('.task-note') || {}).textContent || '',
	next: (row.querySelector('time') || { getAttribute: () => '' }).getAttribute('datetime'),
	text: row.querySelector('.task-main').innerText,
}))`

func taskRows(p *browsertest.Page) []taskRow {
	var rows []taskRow
	p.Eval(readTaskRowsJS, &rows)
	return rows
}

// wall is t on the wall clock of its zone, as a datetime-local input reads.
func wall(t time.Time) string { return t.Format("2006-01-02T15:04") }

func loadTokyo(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// newSchedulingPage returns a server, a page whose browser is one of the
// user's devices, the user's id, and a whole minute two days ahead on
// Tokyo's wall clock.
func newSchedulingPage(t *testing.T) (*server, *browsertest.Page, string, time.Time) {
	t.Helper()
	srv, _, p := newDevicePage(t)
	return srv, p, userID(t, p), time.Now().In(loadTokyo(t)).Add(48 * time.Hour).Truncate(time.Minute)
}

// openTaskForm shows the form that schedules a new message.
func openTaskForm(p *browsertest.Page, base string) {
	p.Navigate(base + "/#/schedule/new")
	p.WaitFor(`document.querySelector('.task-form')`)
}

// TestScheduleEditDeliverCancel schedules a fixed message through the form,
// edits it into a daily one, has the scheduler deliver it (the fake push
// service decrypts it, the worker shows it) and cancels it, all through the
// page, checking the server's task after each step.
func TestScheduleEditDeliverCancel(t *testing.T) {
	srv, p, id, first := newSchedulingPage(t)
	scheduleOneOff(t, srv, p, id, first)
	second := first.Add(time.Hour)
	editToDaily(t, srv, p, id, first, second)
	deliverAndShow(t, srv, p, second)
	listShowsNextOccurrence(t, srv, p, second.AddDate(0, 0, 1))
	cancelTheTask(t, srv, p, id)
}

// scheduleOneOff schedules a one-off fixed message at first through the
// form and checks the server's task and the list.
func scheduleOneOff(t *testing.T, srv *server, p *browsertest.Page, id string, first time.Time) {
	t.Helper()
	openTaskForm(p, srv.URL)
	fillTaskForm(t, p, map[string]string{"From": "Rei", "Message": "Stretch and drink some water.",
		"Time zone": "Asia/Tokyo", "First time": wall(first)})
	submitTaskForm(p)
	task, payload := onlyTask(t, srv, id)
	if !task.NextSendAt.Equal(first) || payload.MessageType != push.TypeFixed || payload.ContactName != "Rei" ||
		payload.UserMessage == nil || *payload.UserMessage != "Stretch and drink some water." ||
		payload.TzID == nil || *payload.TzID != "Asia/Tokyo" || payload.RecurrenceType != push.RecurrenceNone {
		t.Fatalf("server task at %s with %+v, want a one-off fixed message at %s", task.NextSendAt, payload, first)
	}
	p.WaitFor(`document.querySelector('.task')`)
	rows := taskRows(p)
	if len(rows) != 1 || rows[0].UUID != task.UUID || rows[0].Next != push.FormatTimestamp(first) ||
		rows[0].Note != "Stretch and drink some water." || rows[0].Badges != "Fixed message | Once" {
		t.Fatalf("list shows %+v, want the task %s next at %s", rows, task.UUID, push.FormatTimestamp(first))
	}
}

// editToDaily edits the task: the form shows it as scheduled at first, and
// it becomes new text at second, every day.
func editToDaily(t *testing.T, srv *server, p *browsertest.Page, id string, first, second time.Time) {
	t.Helper()
	p.Eval(`document.querySelector('.task a[href^="#/schedule/edit/"]').click()`, nil)
	p.WaitFor(`document.querySelector('.task-form textarea').value === 'Stretch and drink some water.'`)
	var shown struct {
		When string `json:"when"`
		Zone string `json:"zone"`
	}
	p.Eval(`({when: document.querySelector('.task-form input[type=datetime-local]').value,
		zone: document.querySelector('.task-form input[list=zone-list]').value})`, &shown)
	if shown.When != wall(first) || shown.Zone != "Asia/Tokyo" {
		t.Errorf("the edit form shows %+v, want %s in Asia/Tokyo", shown, wall(first))
	}
	fillTaskForm(t, p, map[string]string{"Message": "Time for a walk.", "Next time": wall(second), "Repeat": "daily"})
	submitTaskForm(p)
	task, payload := onlyTask(t, srv, id)
	if !task.NextSendAt.Equal(second) || payload.RecurrenceType != push.RecurrenceDaily ||
		payload.UserMessage == nil || *payload.UserMessage != "Time for a walk." {
		t.Fatalf("after the edit the server task is at %s with %+v, want a daily message at %s", task.NextSendAt, payload, second)
	}
	p.WaitFor(`document.querySelector('.task .task-note').textContent === 'Time for a walk.'`)
}

// deliverAndShow has the scheduler deliver the task at its time; the fake
// push service decrypts the push, which the worker shows.
func deliverAndShow(t *testing.T, srv *server, p *browsertest.Page, at time.Time) {
	t.Helper()
	sum := srv.fireAt(t, at)
	if sum.SuccessCount != 1 || sum.Details.UpdatedRecurringTasks != 1 {
		t.Fatalf("tick summary %+v, want one recurring task delivered", sum)
	}
	plaintext := srv.waitPush(t, 1)
	var got push.ContentPush
	if err := json.Unmarshal(plaintext, &got); err != nil {
		t.Fatalf("decrypted push %s: %v", plaintext, err)
	}
	if got.Message != "Time for a walk." || got.ContactName != push.Some("Rei") || got.MessageType != push.TypeFixed || got.MessageID == "" {
		t.Fatalf("decrypted push %s", plaintext)
	}
	deliverPushes(p, string(plaintext))
	n := p.WaitNotification("the scheduled message", func(n browsertest.Notification) bool { return n.Tag == got.MessageID })
	if n.Body != "Time for a walk." || n.Title != "From Rei" {
		t.Errorf("notification %+v", n)
	}
}

// listShowsNextOccurrence reloads the list, which shows the daily task
// next at next.
func listShowsNextOccurrence(t *testing.T, srv *server, p *browsertest.Page, next time.Time) {
	t.Helper()
	p.Navigate(srv.URL + "/?delivered#/schedule")
	p.WaitFor(`document.querySelector('.task')`)
	if rows := taskRows(p); len(rows) != 1 || rows[0].Next != push.FormatTimestamp(next) || rows[0].Badges != "Fixed message | Every day" {
		t.Fatalf("after delivery the list shows %+v, want the next occurrence at %s", rows, push.FormatTimestamp(next))
	}
}

// cancelTheTask cancels the task: a confirmation first, then the task is
// gone from the server and the list.
func cancelTheTask(t *testing.T, srv *server, p *browsertest.Page, id string) {
	t.Helper()
	p.Eval(`[...document.querySelectorAll('.task button')].find((b) => b.textContent === 'Cancel').click()`, nil)
	p.WaitFor(`document.querySelector('.task-actions.confirm')`)
	p.Eval(`[...document.querySelectorAll('.task-actions.confirm button')].find((b) => b.textContent === 'Cancel message').click()`, nil)
	p.WaitFor(`document.querySelector('.task-body[aria-busy=false] .empty') !== null`)
	if _, total, err := srv.Store.Tasks(t.Context(), id, "", 10, 0); err != nil || total != 0 {
		t.Fatalf("after cancelling the server has %d tasks (%v)", total, err)
	}
	p.WaitFor(`document.getElementById('toast').textContent === 'Cancelled the message from Rei.'`)
}

// TestScheduleCron schedules a cron message through the form and changes
// its expression: the server takes cronExpr in both requests, fires the
// first message at the chosen time and the next at the expression's.
func TestScheduleCron(t *testing.T) {
	srv, p, id, first := newSchedulingPage(t)
	openTaskForm(p, srv.URL)
	fillTaskForm(t, p, map[string]string{"From": "Rei", "Message": "Stand-up in five minutes.",
		"Time zone": "Asia/Tokyo", "Repeat": "cron"})
	p.WaitFor(`!document.querySelector('.task-form input[inputmode=text]').closest('.field').hidden`)
	fillTaskForm(t, p, map[string]string{"First time": wall(first), "Cron expression": "55 9 * * 1-5"})
	submitTaskForm(p)
	task, payload := onlyTask(t, srv, id)
	if !task.NextSendAt.Equal(first) || payload.RecurrenceType != push.RecurrenceCron || payload.CronExpr != "55 9 * * 1-5" {
		t.Fatalf("server task at %s with %+v, want cron 55 9 * * 1-5 first at %s", task.NextSendAt, payload, first)
	}
	p.WaitFor(`document.querySelector('.task')`)
	if rows := taskRows(p); len(rows) != 1 || rows[0].Badges != "Fixed message | Cron 55 9 * * 1-5" {
		t.Fatalf("list shows %+v", rows)
	}

	// update-message takes a new cronExpr.
	p.Eval(`document.querySelector('.task a[href^="#/schedule/edit/"]').click()`, nil)
	p.WaitFor(`document.querySelector('.task-form textarea').value === 'Stand-up in five minutes.'`)
	var expr string
	p.Eval(`document.querySelector('.task-form input[inputmode=text]').value`, &expr)
	if expr != "55 9 * * 1-5" {
		t.Errorf("the edit form shows the expression %q", expr)
	}
	fillTaskForm(t, p, map[string]string{"Cron expression": "0 18 * * *"})
	submitTaskForm(p)
	task, payload = onlyTask(t, srv, id)
	if !task.NextSendAt.Equal(first) || payload.RecurrenceType != push.RecurrenceCron || payload.CronExpr != "0 18 * * *" {
		t.Fatalf("after the edit the server task is at %s with %+v, want cron 0 18 * * *", task.NextSendAt, payload)
	}

	if sum := srv.fireAt(t, first); sum.SuccessCount != 1 {
		t.Fatalf("tick summary %+v", sum)
	}
	if got := srv.waitPush(t, 1); !json.Valid(got) {
		t.Fatalf("push %s", got)
	}
	sixPM := time.Date(first.Year(), first.Month(), first.Day(), 18, 0, 0, 0, first.Location())
	if !sixPM.After(first) {
		sixPM = sixPM.AddDate(0, 0, 1)
	}
	p.Navigate(srv.URL + "/?fired#/schedule")
	p.WaitFor(`document.querySelector('.task')`)
	if rows := taskRows(p); len(rows) != 1 || rows[0].Next != push.FormatTimestamp(sixPM) || rows[0].Badges != "Fixed message | Cron 0 18 * * *" {
		t.Fatalf("after the first message the list shows %+v, want the next at %s", rows, push.FormatTimestamp(sixPM))
	}
}
