package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"amsg/push"
	"amsg/push/courier"
	"amsg/push/pushtest"
	"amsg/store"
	"amsg/store/storetest"
)

// receiptFixture is a server whose courier stamps receipt tokens, with two
// devices of testUserID on a fake push service.
type receiptFixture struct {
	s       *Server
	st      *store.Store
	fake    *pushtest.Server
	devices []push.Device
}

func newReceiptFixture(t testing.TB) *receiptFixture {
	t.Helper()
	st := storetest.New(t)
	c, fake := newTestCourierWith(t, st, courier.Config{Receipts: st.ReceiptSigner()})
	f := &receiptFixture{s: newTestServer(t, Config{AdminToken: testAdminToken}, Deps{Store: st, Courier: c}), st: st, fake: fake}
	for range 2 {
		raw, _ := json.Marshal(fake.Subscribe())
		d, err := st.PutSubscription(t.Context(), testUserID, raw, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		f.devices = append(f.devices, d)
	}
	return f
}

// sendPush sends a content push to the user's devices and returns the
// receipt token each device's copy carried, by device id.
func (f *receiptFixture) sendPush(t testing.TB, id string) map[int64]string {
	t.Helper()
	before := len(f.fake.Pushes())
	p, err := push.Decode([]byte(`{"messageKind":"content","messageType":"instant","source":"instant","messageId":"` + id +
		`","sessionId":"sess_1","timestamp":"2026-06-01T09:00:00.000Z","title":"Rei","message":"hi","contactName":"Rei","messageIndex":1,"totalMessages":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.deps.Courier.SendPush(t.Context(), testUserID, push.SourceInstant, p); err != nil {
		t.Fatal(err)
	}
	tokens := map[int64]string{}
	for _, got := range f.fake.Pushes()[before:] {
		var m struct {
			ReceiptToken string `json:"receiptToken"`
		}
		if err := json.Unmarshal(got.JSON, &m); err != nil || m.ReceiptToken == "" {
			t.Fatalf("push %s carries no receipt token (%v)", got.JSON, err)
		}
		for _, d := range f.devices {
			if d.Subscription.Endpoint == got.Endpoint {
				tokens[d.ID] = m.ReceiptToken
			}
		}
	}
	if len(tokens) != len(f.devices) {
		t.Fatalf("tokens for %d devices, want %d", len(tokens), len(f.devices))
	}
	return tokens
}

func postReceipts(h http.Handler, body string) response {
	return post(h, "/api/v1/receipts", body, map[string]string{"Content-Type": "application/json", "Accept-Language": "en"})
}

func report(id, token, typ, action string) string {
	r := fmt.Sprintf(`{"messageId":%q,"token":%q,"type":%q`, id, token, typ)
	if action != "" {
		r += fmt.Sprintf(`,"action":%q`, action)
	}
	return r + "}"
}

// status reads a message's status as its user's client does, decrypted.
func (f *receiptFixture) status(t *testing.T, userID, id string) (int, messageStatusJSON) {
	t.Helper()
	got := do(t, f.s, http.MethodGet, "/api/v1/messages/"+id+"/status", map[string]string{"X-User-Id": userID})
	var st messageStatusJSON
	if got.status == http.StatusOK {
		if err := json.Unmarshal([]byte(openResponse(t, userID, got)), &st); err != nil {
			t.Fatal(err)
		}
	}
	return got.status, st
}

func eventTypes(st messageStatusJSON) []string {
	var types []string
	for _, e := range st.Events {
		types = append(types, e.Type+"@"+e.DeviceID)
	}
	return types
}

// The worker's receipts land in the message's timeline, once each however
// often they are sent, and the user's status route tells the whole story.
func TestReceiptsJoinTheMessagesTimeline(t *testing.T) {
	f := newReceiptFixture(t)
	tokens := f.sendPush(t, "msg_1")
	d0, d1 := f.devices[0].ID, f.devices[1].ID
	batch := `{"endpoint":"` + f.devices[0].Subscription.Endpoint + `","receipts":[` +
		report("msg_1", tokens[d0], "shown", "") + `,` + report("msg_1", tokens[d0], "clicked", "reply") + `]}`
	if got := postReceipts(f.s, batch); got.status != http.StatusOK || got.body != `{"success":true,"data":{"recorded":2,"duplicates":0}}`+"\n" {
		t.Fatalf("POST /receipts = %d %s", got.status, got.body)
	}
	if got := postReceipts(f.s, batch); got.status != http.StatusOK || !strings.Contains(got.body, `"recorded":0,"duplicates":2`) {
		t.Errorf("the same batch again = %d %s; want both counted as duplicates", got.status, got.body)
	}
	if got := postReceipts(f.s, `{"receipts":[`+report("msg_1", tokens[d1], "dismissed", "")+`]}`); got.status != http.StatusOK {
		t.Errorf("the other device's own dismissal = %d %s", got.status, got.body)
	}

	code, status := f.status(t, testUserID, "msg_1")
	dev0, dev1 := store.DeviceIDString(d0), store.DeviceIDString(d1)
	want := []string{"queued@", "sent@", "accepted@" + dev0, "accepted@" + dev1, "shown@" + dev0, "clicked@" + dev0, "dismissed@" + dev1}
	got := eventTypes(status)
	// The two devices' sends race: their accepted events come in either order.
	if len(got) == len(want) && got[2] == want[3] {
		got[2], got[3] = got[3], got[2]
	}
	if code != http.StatusOK || fmt.Sprint(got) != fmt.Sprint(want) || status.Status != store.EventDismissed {
		t.Errorf("status = %d %+v\nwant events %v, status dismissed", code, status, want)
	}
	if clicked := status.Events[5]; string(clicked.Detail) != `{"action":"reply"}` {
		t.Errorf("clicked detail = %s, want the action", clicked.Detail)
	}
}

// Forged tokens, another message's or device's token, an unknown device
// and a malformed batch each get their own error, and nothing is written.
func TestReceiptsRefuseWhatTheServerDidNotSend(t *testing.T) {
	f := newReceiptFixture(t)
	tokens := f.sendPush(t, "msg_1")
	d0, d1 := f.devices[0].ID, f.devices[1].ID
	forged := fmt.Sprintf("%d.AAAAAAAAAAAAAAAAAAAAAA", d0)
	endpoint0 := `"endpoint":"` + f.devices[0].Subscription.Endpoint + `",`
	for name, c := range map[string]struct {
		body, code string
		status     int
		index      int
	}{
		"forged":            {`{"receipts":[` + report("msg_1", forged, "shown", "") + `]}`, "RECEIPT_TOKEN_INVALID", 403, 0},
		"another message's": {`{"receipts":[` + report("msg_2", tokens[d0], "shown", "") + `]}`, "RECEIPT_TOKEN_INVALID", 403, 0},
		"another device's":  {`{` + endpoint0 + `"receipts":[` + report("msg_1", tokens[d0], "shown", "") + `,` + report("msg_1", tokens[d1], "shown", "") + `]}`, "RECEIPT_OTHER_DEVICE", 403, 1},
		"a gone device's":   {`{"receipts":[` + report("msg_1", "999999.AAAAAAAAAAAAAAAAAAAAAA", "shown", "") + `]}`, "RECEIPT_TOKEN_INVALID", 403, 0},
		"unknown endpoint":  {`{"endpoint":"https://push.example/none","receipts":[` + report("msg_1", tokens[d0], "shown", "") + `]}`, "RECEIPT_DEVICE_UNKNOWN", 404, -1},
		"unknown type":      {`{"receipts":[` + report("msg_1", tokens[d0], "shown", "") + `,` + report("msg_1", tokens[d0], "read", "") + `]}`, "INVALID_RECEIPTS", 400, 1},
		"not a batch":       {`[]`, "INVALID_RECEIPTS", 400, -1},
	} {
		got := postReceipts(f.s, c.body)
		var env struct {
			Error struct {
				Code    string         `json:"code"`
				Details map[string]any `json:"details"`
			} `json:"error"`
		}
		_ = json.Unmarshal([]byte(got.body), &env)
		index, hasIndex := env.Error.Details["index"]
		if got.status != c.status || env.Error.Code != c.code || (c.index >= 0) != hasIndex || (hasIndex && index != float64(c.index)) {
			t.Errorf("%s: %d %s; want %d %s at index %d", name, got.status, got.body, c.status, c.code, c.index)
		}
	}
	if got := post(f.s, "/api/v1/receipts", `{}`, map[string]string{"Content-Type": "text/plain"}); got.status != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain body = %d %s", got.status, got.body)
	}
	_, status := f.status(t, testUserID, "msg_1")
	for _, e := range status.Events {
		if e.Type == store.EventShown {
			t.Errorf("a refused batch recorded %+v", e)
		}
	}
}

// The status route answers only the user's own messages: another user's
// is as unknown as one never sent.
func TestMessageStatusIsTheUsersOwn(t *testing.T) {
	f := newReceiptFixture(t)
	f.sendPush(t, "msg_1")
	const other = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
	for name, c := range map[string]struct{ user, id string }{
		"another user's": {other, "msg_1"},
		"never sent":     {testUserID, "msg_none"},
	} {
		got := do(t, f.s, http.MethodGet, "/api/v1/messages/"+c.id+"/status", map[string]string{"X-User-Id": c.user, "Accept-Language": "en"})
		if got.status != http.StatusNotFound || errorCode(got.body) != "MESSAGE_NOT_FOUND" {
			t.Errorf("%s: %d %s; want 404 MESSAGE_NOT_FOUND", name, got.status, got.body)
		}
	}
	if got := do(t, f.s, http.MethodGet, "/api/v1/messages/msg_1/status", nil); errorCode(got.body) != "USER_ID_REQUIRED" {
		t.Errorf("without X-User-Id: %d %s", got.status, got.body)
	}
}

// The operator sees any user's message's timeline and the daily chart.
func TestAdminSeesTimelinesAndTheDailyChart(t *testing.T) {
	f := newReceiptFixture(t)
	tokens := f.sendPush(t, "msg_1")
	d0 := f.devices[0].ID
	if got := postReceipts(f.s, `{"receipts":[`+report("msg_1", tokens[d0], "shown", "")+`,`+report("msg_1", tokens[d0], "clicked", "")+`]}`); got.status != http.StatusOK {
		t.Fatalf("receipts: %d %s", got.status, got.body)
	}
	got := adminDo(f.s, http.MethodGet, "/api/v1/admin/messages/msg_1/timeline?userId="+testUserID, "")
	var timeline struct {
		Data messageStatusJSON `json:"data"`
	}
	if err := json.Unmarshal([]byte(got.body), &timeline); err != nil || got.status != http.StatusOK || timeline.Data.Status != store.EventClicked || len(timeline.Data.Events) != 6 {
		t.Errorf("admin timeline = %d %s", got.status, got.body)
	}
	if got := adminDo(f.s, http.MethodGet, "/api/v1/admin/messages/msg_1/timeline", ""); got.status != http.StatusBadRequest {
		t.Errorf("admin timeline without userId = %d %s", got.status, got.body)
	}
	if got := adminDo(f.s, http.MethodGet, "/api/v1/admin/messages/msg_1/timeline?userId="+testUserID, ""); got.status != http.StatusOK {
		t.Errorf("admin timeline = %d", got.status)
	}
	chart := adminDo(f.s, http.MethodGet, "/api/v1/admin/messages/per-day?days=2", "")
	var perDay struct {
		Data struct {
			Days []dayJSON `json:"days"`
		} `json:"data"`
	}
	totals := map[string]int{}
	if err := json.Unmarshal([]byte(chart.body), &perDay); err == nil {
		for _, d := range perDay.Data.Days {
			for typ, n := range d.Counts {
				totals[typ] += n
			}
		}
	}
	if chart.status != http.StatusOK || fmt.Sprint(totals) != "map[clicked:1 sent:1 shown:1]" {
		t.Errorf("chart = %d %s; want one sent, one shown, one clicked", chart.status, chart.body)
	}
	if got := adminDo(f.s, http.MethodGet, "/api/v1/admin/messages/per-day?days=29", ""); got.status != http.StatusBadRequest {
		t.Errorf("29 days = %d %s", got.status, got.body)
	}
	if got := send(f.s, http.MethodGet, "/api/v1/admin/messages/per-day", "", nil); got.status != http.StatusUnauthorized {
		t.Errorf("chart without the operator token = %d", got.status)
	}
}

// Whatever a worker (or anyone) posts to /receipts gets an envelope, never
// a 5xx, and a refused body writes nothing.
func FuzzReceipts(f *testing.F) {
	fx := newReceiptFixture(f)
	tokens := fx.sendPush(f, "msg_1")
	tok := tokens[fx.devices[0].ID]
	for _, seed := range []string{
		`{"receipts":[` + report("msg_1", tok, "shown", "") + `]}`,
		`{"endpoint":"` + fx.devices[1].Subscription.Endpoint + `","receipts":[` + report("msg_1", tok, "clicked", "x") + `]}`,
		`{"receipts":[` + report("msg_2", tok, "dismissed", "") + `]}`,
		`{"receipts":[{"messageId":"msg_1","token":"1.AAAAAAAAAAAAAAAAAAAAAA","type":"shown"}]}`,
		`{"receipts":null}`, `[]`, `{`, "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		before, err := fx.st.MessageEventsAfter(t.Context(), 0, store.MaxMessageEventsPage)
		if err != nil {
			t.Fatal(err)
		}
		r := postReceipts(fx.s, body)
		var env struct {
			Success *bool `json:"success"`
		}
		if r.status >= 500 || json.Unmarshal([]byte(r.body), &env) != nil || env.Success == nil {
			t.Fatalf("POST /receipts %q: %d %s", body, r.status, r.body)
		}
		after, err := fx.st.MessageEventsAfter(t.Context(), 0, store.MaxMessageEventsPage)
		if err != nil {
			t.Fatal(err)
		}
		if r.status != http.StatusOK && len(after) != len(before) {
			t.Fatalf("a refused body (%d %s) wrote %d events", r.status, r.body, len(after)-len(before))
		}
	})
}
