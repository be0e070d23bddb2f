package e2e_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"testing"

	"amsg/scheduler/webhook"
	"amsg/store"
	"amsg/store/usercrypt"
	"amsg/web/browsertest"
)

// TestReceiptsTellTheMessagesStory is issue 25's done-when in the browser:
// a push amsg sends this device carries its receipt token; amsg's worker
// shows it and reports it shown, a click on one of its actions (dispatched
// inside the worker) reports it clicked with the action, and both appear in
// the message's timeline that GET /messages/{id}/status answers the user,
// and in the signed webhooks an operator's receiver gets, in order, each
// verified with the Standard Webhooks library.
func TestReceiptsTellTheMessagesStory(t *testing.T) {
	srv := newServerWith(t, serverOptions{receipts: true})
	b := browsertest.New(t, browsertest.Config{})
	p, sub := openPage(t, b, srv, "")
	onboard(t, b, p, srv.URL)
	user := userID(t, p)
	hooks := newWebhookReceiver(t, srv, webhook.MessageDelivered, webhook.MessageShown, webhook.MessageClicked)

	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/api/v1/test-push", nil)
	req.Header.Set("X-User-Id", user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	plaintext := pushesFor(t, srv, sub.Endpoint, 1)[0]
	var pushed struct {
		MessageID    string `json:"messageId"`
		ReceiptToken string `json:"receiptToken"`
	}
	if err := json.Unmarshal([]byte(plaintext), &pushed); err != nil || pushed.ReceiptToken == "" {
		t.Fatalf("the push %s carries no receipt token (%v)", plaintext, err)
	}

	deliverPushes(p, plaintext)
	p.WaitForWorker(`self.__amsgTest.receiptBatchesSettled() >= 1`)
	srv.sendWebhooks(t) // the push service's acceptance and the worker's shown
	p.WorkerEval(`(async () => {
		const [n] = (await self.registration.getNotifications()).filter((n) => n.data && n.data.payload && n.data.payload.messageId === `+strconv.Quote(pushed.MessageID)+`);
		self.dispatchEvent(new NotificationEvent('notificationclick', { notification: n, action: 'reply' }));
		return true;
	})()`, nil)
	p.WaitForWorker(`self.__amsgTest.receiptBatchesSettled() >= 2`)
	b.TakeConsoleErrors() // a dispatched click may not open a window
	hooksBeforeClick := hooks.messageEvents(user, pushed.MessageID)
	srv.sendWebhooks(t)

	status := messageStatus(t, srv, user, pushed.MessageID)
	devices, err := srv.Store.Devices(t.Context(), user)
	if err != nil || len(devices) != 1 {
		t.Fatalf("devices %+v, %v", devices, err)
	}
	device := store.DeviceIDString(devices[0].ID)
	var got []string
	for _, e := range status.Events {
		got = append(got, e.Type+"@"+e.DeviceID+string(e.Detail))
	}
	want := []string{"shown@" + device, "clicked@" + device + `{"action":"reply"}`}
	if len(got) < 2 || got[len(got)-2] != want[0] || got[len(got)-1] != want[1] || status.Status != store.EventClicked {
		t.Errorf("timeline %q (status %q); want it to end %q", got, status.Status, want)
	}
	if len(got) == 0 || got[0] != "queued@" {
		t.Errorf("timeline %q; want it to start queued", got)
	}
	pushService, err := url.Parse(sub.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	wantHooks := []string{webhook.MessageDelivered + "@" + device + `{"pushHost":"` + pushService.Host + `","status":201,"try":1}`, webhook.MessageShown + "@" + device,
		webhook.MessageClicked + "@" + device + `{"action":"reply"}`}
	if !slices.Equal(hooksBeforeClick, wantHooks[:2]) {
		t.Errorf("before the click the receiver heard %q; want %q", hooksBeforeClick, wantHooks[:2])
	}
	if heard := hooks.messageEvents(user, pushed.MessageID); !slices.Equal(heard, wantHooks) {
		t.Errorf("the webhook receiver heard %q; want %q", heard, wantHooks)
	}

	// The operator page charts the day's sent, shown and clicked messages
	// and shows the message's timeline.
	admin := b.NewPage()
	admin.Navigate(srv.URL + "/admin")
	admin.Eval(`(() => {
		document.getElementById('token').value = `+strconv.Quote(adminToken)+`;
		document.getElementById('signin-form').requestSubmit();
	})()`, nil)
	admin.WaitFor(`document.querySelectorAll('#days-chart rect').length === 3`)
	var legend string
	admin.Eval(`document.getElementById('days-legend').textContent`, &legend)
	if legend != "Sent: 1Shown: 1Clicked: 1" {
		t.Errorf("the daily chart's legend reads %q", legend)
	}
	admin.Eval(`(() => {
		document.getElementById('timeline-user').value = `+strconv.Quote(user)+`;
		document.getElementById('timeline-message').value = `+strconv.Quote(pushed.MessageID)+`;
		document.getElementById('timeline-form').requestSubmit();
	})()`, nil)
	admin.WaitFor(`document.getElementById('timeline-result').textContent.endsWith('now clicked.')`)
	var rows string
	admin.Eval(`[...document.querySelectorAll('#timeline tbody tr')].map((r) => r.cells[1].textContent).join(' ')`, &rows)
	if rows != "queued sent accepted shown clicked" {
		t.Errorf("the operator's timeline lists %q", rows)
	}
	if errs := b.TakeConsoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}

// statusAnswer is GET /messages/{id}/status's data.
type statusAnswer struct {
	Status string `json:"status"`
	Events []struct {
		Type     string          `json:"type"`
		DeviceID string          `json:"deviceId"`
		Detail   json.RawMessage `json:"detail"`
	} `json:"events"`
}

// messageStatus reads GET /messages/{id}/status as user's client does.
func messageStatus(t *testing.T, srv *server, user, id string) statusAnswer {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/api/v1/messages/"+id+"/status", nil)
	req.Header.Set("X-User-Id", user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var answer struct {
		Data usercrypt.Envelope `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET status = %d %s (%v)", resp.StatusCode, body, err)
	}
	plaintext, err := srv.Store.Keyring().UserKey(user).Open(answer.Data)
	if err != nil {
		t.Fatal(err)
	}
	var status statusAnswer
	if err := json.Unmarshal(plaintext, &status); err != nil {
		t.Fatal(err)
	}
	return status
}
