package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"amsg/llm/llmtest"
	"amsg/push"
	"amsg/push/pushtest"
	"amsg/push/webpush"
	"amsg/store"
	"amsg/store/usercrypt"
)

// The tests below drive the real binary over HTTP, with its pushes going to
// a fake push service in the test process.

const (
	taskUser  = "550e8400-e29b-41d4-a716-446655440000"
	masterKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
)

// taskRig is a data directory, the keys the binary runs with, a fake push
// service those keys sign for, and a browser subscription at it.
type taskRig struct {
	dir   string
	env   []string
	push  *pushtest.Server
	sub   push.Subscription
	key   usercrypt.Key
	vapid [2]string
}

func newTaskRig(t *testing.T, env ...string) *taskRig {
	t.Helper()
	public, private, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	ring, err := usercrypt.NewKeyring(masterKey)
	if err != nil {
		t.Fatal(err)
	}
	r := &taskRig{dir: t.TempDir(), push: pushtest.NewServer(public), key: ring.UserKey(taskUser), vapid: [2]string{public, private}}
	t.Cleanup(r.push.Close)
	r.sub = r.push.Subscribe()
	r.env = append([]string{"AMSG_ALLOW_PRIVATE_ENDPOINTS=true", "AMSG_MASTER_KEY=" + masterKey,
		"AMSG_VAPID_PUBLIC_KEY=" + public, "AMSG_VAPID_PRIVATE_KEY=" + private}, env...)
	return r
}

// useMasterKey makes the rig's calls use the user key under masterKey.
func (r *taskRig) useMasterKey(t *testing.T, masterKey string) {
	t.Helper()
	ring, err := usercrypt.NewKeyring(masterKey)
	if err != nil {
		t.Fatal(err)
	}
	r.key = ring.UserKey(taskUser)
}

func (r *taskRig) start(t *testing.T) *amsgProcess {
	t.Helper()
	return startAmsg(t, r.dir, r.env...)
}

// call sends one API request as amsg-client does: the body encrypted with
// the user key, encrypted responses opened. It returns the status and the
// envelope's data (or error) as raw JSON.
func (r *taskRig) call(t *testing.T, p *amsgProcess, method, path string, body any) (int, json.RawMessage) {
	t.Helper()
	status, data, _ := r.callWith(t, p, method, path, body, nil)
	return status, data
}

// callWith is call with more request headers; it returns the response's
// headers too.
func (r *taskRig) callWith(t *testing.T, p *amsgProcess, method, path string, body any, header map[string]string) (int, json.RawMessage, http.Header) {
	t.Helper()
	var reader io.Reader
	if body != nil {
		plaintext, _ := json.Marshal(body)
		env, _ := json.Marshal(r.key.Seal(plaintext))
		reader = bytes.NewReader(env)
	}
	req, err := http.NewRequest(method, p.URL+"/api/v1/"+path, reader)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-User-Id", taskUser)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Payload-Encrypted", "true")
		req.Header.Set("X-Encryption-Version", "1")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var envelope struct {
		Success   bool            `json:"success"`
		Encrypted bool            `json:"encrypted"`
		Data      json.RawMessage `json:"data"`
		Error     json.RawMessage `json:"error"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &envelope); err != nil {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if !envelope.Success {
		return resp.StatusCode, envelope.Error, resp.Header
	}
	if envelope.Encrypted {
		var sealed usercrypt.Envelope
		_ = json.Unmarshal(envelope.Data, &sealed)
		plaintext, err := r.key.Open(sealed)
		if err != nil {
			t.Fatalf("%s %s: response does not open: %v", method, path, err)
		}
		return resp.StatusCode, plaintext, resp.Header
	}
	return resp.StatusCode, envelope.Data, resp.Header
}

// register puts the rig's subscription as the user's device.
func (r *taskRig) register(t *testing.T, p *amsgProcess) {
	t.Helper()
	if status, body := r.call(t, p, http.MethodPut, "push-subscription", map[string]any{"subscription": r.sub}); status != http.StatusOK {
		t.Fatalf("push-subscription: %d %s", status, body)
	}
}

func (r *taskRig) schedule(t *testing.T, p *amsgProcess, task map[string]any) (id int64, uuid string) {
	t.Helper()
	status, body := r.call(t, p, http.MethodPost, "schedule-message", task)
	var data struct {
		ID   int64  `json:"id"`
		UUID string `json:"uuid"`
	}
	if status != http.StatusCreated || json.Unmarshal(body, &data) != nil {
		t.Fatalf("schedule-message: %d %s", status, body)
	}
	return data.ID, data.UUID
}

func waitPushes(t *testing.T, fake *pushtest.Server, n int, within time.Duration) []pushtest.Push {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	pushes, err := fake.WaitPushes(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	return pushes
}

func messageID(t *testing.T, p pushtest.Push) string {
	var m struct {
		MessageID string `json:"messageId"`
	}
	if err := json.Unmarshal(p.JSON, &m); err != nil {
		t.Fatal(err)
	}
	return m.MessageID
}

// A task's burst is cut by SIGKILL. After a restart the task waits for the
// dead process's lease to end, then goes out whole with the same messageIds
// (the service worker drops the ones it has), and once delivered it is
// never sent again.
func TestCrashMidBurstRedeliversWithTheSameIDsAfterTheLease(t *testing.T) {
	const lease, heartbeat, burst = 2 * time.Second, 400 * time.Millisecond, 6
	r := newTaskRig(t, "AMSG_TICK=100ms", "AMSG_TASK_LEASE="+lease.String(), "AMSG_TASK_HEARTBEAT="+heartbeat.String(), "AMSG_PUSH_INTERVAL=200ms")
	p := r.start(t)
	r.register(t, p)
	sentences := make([]string, burst)
	for i := range sentences {
		sentences[i] = fmt.Sprintf("第%d句。", i+1)
	}
	id, _ := r.schedule(t, p, map[string]any{"contactName": "Rei", "messageType": "fixed", "immediate": true,
		"userMessage": strings.Join(sentences, "")})

	first := waitPushes(t, r.push, 2, 20*time.Second)
	p.Kill(t)
	killedAt := time.Now()
	delivered := len(r.push.Pushes())
	if delivered >= burst {
		t.Fatalf("the whole burst went out before the kill (%d pushes)", delivered)
	}

	p = r.start(t)
	// The restart resumes the burst where its outbox marks say it stopped:
	// pushes marked delivered are not sent again, the one in flight at the
	// kill (sent, its mark not yet committed) may be; the rest follow, each
	// under its own id.
	p.WaitLog(t, "scheduler: task delivered", 30*time.Second)
	all := r.push.Pushes()
	second := all[delivered:]
	if n := len(second); n < burst-delivered || n > burst-delivered+1 {
		t.Fatalf("%d pushes after the restart, %d before: want the %d undelivered, plus at most the one in flight",
			n, delivered, burst-delivered)
	}
	// The lease was last renewed at most a heartbeat (give or take a late
	// renewal) before the kill; a restart that ignored it would resend
	// within a tick.
	if resumed := r.push.Messages()[delivered].ReceivedAt.Sub(killedAt); resumed < lease-2*heartbeat {
		t.Errorf("redelivery began %s after the kill, before the lease (%s, renewed every %s) could have ended", resumed, lease, heartbeat)
	}
	occurrence := messageID(t, first[0])
	occurrence = occurrence[:strings.LastIndex(occurrence, "_")]
	if !strings.HasPrefix(occurrence, fmt.Sprintf("msg_task_%d@", id)) {
		t.Fatalf("first id %s", messageID(t, first[0]))
	}
	for i, pu := range all[:delivered] {
		if got, want := messageID(t, pu), fmt.Sprintf("%s_%d", occurrence, i); got != want {
			t.Errorf("push %d before the crash has id %s, want %s", i, got, want)
		}
	}
	for i, pu := range second {
		if got, want := messageID(t, pu), fmt.Sprintf("%s_%d", occurrence, burst-len(second)+i); got != want {
			t.Errorf("redelivered push %d has id %s, want %s", i, got, want)
		}
	}
	total := len(all)

	// The push service may see the last push before the task's row says
	// sent; wait for the scheduler to record it.
	p.WaitLog(t, "scheduler: task delivered", 10*time.Second)
	// Delivered: a tick now finds nothing, before and after another restart.
	for round := range 2 {
		status, body := r.call(t, p, http.MethodPost, "send-notifications", nil)
		if status != http.StatusOK || !strings.Contains(string(body), `"totalTasks":0`) {
			t.Errorf("round %d: send-notifications %d %s", round, status, body)
		}
		if status, body := r.call(t, p, http.MethodGet, "messages", nil); !strings.Contains(string(body), `"total":0`) {
			t.Errorf("round %d: messages %d %s", round, status, body)
		}
		if round == 0 {
			if err := p.Stop(t); err != nil {
				t.Fatal(err)
			}
			p = r.start(t)
		}
	}
	if n := len(r.push.Pushes()); n != total {
		t.Errorf("%d pushes in all, want %d", n, total)
	}
	if errs := r.push.Errors(); len(errs) != 0 {
		t.Errorf("push service errors: %v", errs)
	}
}

// Tasks that fell due while the server was down fire when it starts; one
// more than the stale threshold late is expired instead; and a graceful
// stop leaves no lease behind.
func TestTasksDueWhileDownFireOnStartUnlessStale(t *testing.T) {
	r := newTaskRig(t, "AMSG_TICK=100ms")
	p := r.start(t)
	r.register(t, p)
	if err := p.Stop(t); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(t.Context(), store.Config{Path: filepath.Join(r.dir, "amsg.db"), MasterKey: masterKey,
		VAPIDPublicKey: r.vapid[0], VAPIDPrivateKey: r.vapid[1]})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, c := range []struct {
		uuid string
		late time.Duration
	}{{"11111111-1111-4111-8111-111111111111", 5 * time.Minute}, {"22222222-2222-4222-8222-222222222222", 61 * time.Minute}} {
		payload := fmt.Sprintf(`{"contactName":"Rei","avatarUrl":null,"messageType":"fixed","messageSubtype":"chat","userMessage":"%s",`+
			`"firstSendTime":"%s","recurrenceType":"none","tzId":null,"metadata":{}}`, c.uuid, push.FormatTimestamp(now.Add(-c.late)))
		if _, _, err := st.InsertTask(t.Context(), store.NewTask{UserID: taskUser, UUID: c.uuid, MessageType: push.TypeFixed,
			NextSendAt: now.Add(-c.late), Payload: json.RawMessage(payload)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	p = r.start(t)
	pushes := waitPushes(t, r.push, 1, 20*time.Second)
	if !strings.Contains(string(pushes[0].JSON), `"message":"11111111-1111-4111-8111-111111111111"`) {
		t.Errorf("delivered %s", pushes[0].JSON)
	}
	// The stale task is expired beside the delivery, not before it.
	p.WaitLog(t, "scheduler: stale occurrence skipped", 10*time.Second)
	status, body := r.call(t, p, http.MethodGet, "message?id=22222222-2222-4222-8222-222222222222", nil)
	if status != http.StatusConflict || !strings.Contains(string(body), `"code":"TASK_ALREADY_COMPLETED"`) || !strings.Contains(string(body), `"reason":"stale"`) {
		t.Errorf("stale task: %d %s", status, body)
	}
	if len(r.push.Pushes()) != 1 {
		t.Errorf("%d pushes; the stale task must not be sent", len(r.push.Pushes()))
	}
}

// Done-when: a fixed task scheduled 2 s ahead reaches the push service
// within 1.5 s of its time, with the default 1 s tick. The lateness is
// bounded by one tick plus the time to claim and send; on a busy 2-vCPU
// machine that is well under the bound.
func TestFixedTaskArrivesOnTime(t *testing.T) {
	r := newTaskRig(t)
	p := r.start(t)
	r.register(t, p)
	due := time.Now().Add(2 * time.Second).Truncate(time.Millisecond)
	r.schedule(t, p, map[string]any{"contactName": "Rei", "messageType": "fixed", "userMessage": "准时",
		"firstSendTime": push.FormatTimestamp(due)})
	waitPushes(t, r.push, 1, 10*time.Second)
	got := r.push.Messages()[0].ReceivedAt
	lateness := got.Sub(due)
	t.Logf("delivered %s after its time", lateness)
	if lateness < 0 || lateness > 1500*time.Millisecond {
		t.Errorf("delivered %s after its time, want 0 to 1.5 s", lateness)
	}
}

// Done-when: a daily Asia/Tokyo task keeps 09:00 Tokyo time across a DST
// change of the server's own zone (the process runs in New York time). The
// task is moved before New York's last change; the scheduler finds it
// stale and fast-forwards it on the Tokyo wall clock, stepping from that
// nominal time across the change.
func TestDailyTokyoTaskKeepsItsTimeAcrossAnotherZonesDSTChange(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	change := now
	for _, offset := change.In(ny).Zone(); ; change = change.Add(-24 * time.Hour) {
		if _, o := change.Add(-24 * time.Hour).In(ny).Zone(); o != offset {
			break
		}
	}
	nominal := time.Date(change.Year(), change.Month(), change.Day()-3, 0, 0, 0, 0, time.UTC) // 09:00 in Tokyo

	r := newTaskRig(t, "AMSG_TICK=100ms", "TZ=America/New_York")
	p := r.start(t)
	r.register(t, p)
	_, uuid := r.schedule(t, p, map[string]any{"contactName": "Rei", "messageType": "fixed", "userMessage": "おはよう",
		"recurrenceType": "daily", "tzId": "Asia/Tokyo", "firstSendTime": push.FormatTimestamp(now.Add(time.Hour))})
	if status, body := r.call(t, p, http.MethodPut, "update-message?id="+uuid, map[string]any{"nextSendAt": push.FormatTimestamp(nominal)}); status != http.StatusOK {
		t.Fatalf("update: %d %s", status, body)
	}
	var detail struct {
		Task struct {
			NextSendAt string          `json:"nextSendAt"`
			LastError  json.RawMessage `json:"lastError"`
		} `json:"task"`
	}
	p.WaitLog(t, "scheduler: stale occurrence skipped", 20*time.Second)
	_, body := r.call(t, p, http.MethodGet, "message?id="+uuid, nil)
	if err := json.Unmarshal(body, &detail); err != nil {
		t.Fatal(err)
	}
	next, _ := time.Parse(time.RFC3339, detail.Task.NextSendAt)
	if tokyo := next.In(time.FixedZone("JST", 9*3600)); tokyo.Hour() != 9 || tokyo.Minute() != 0 || !next.After(now) || next.Sub(now) > 24*time.Hour {
		t.Errorf("next %s (%s Tokyo), want the first 09:00 Tokyo after now; New York changed at %s", next, next.In(time.FixedZone("JST", 9*3600)), change.Format(time.DateOnly))
	}
	if !strings.Contains(string(detail.Task.LastError), `"reason":"stale"`) {
		t.Errorf("lastError %s", detail.Task.LastError)
	}
}

// Done-when: update, cancel, list and detail as the standard says,
// including 409 TASK_ALREADY_COMPLETED with the failed task's lastError.
func TestTaskLifecycleOverHTTP(t *testing.T) {
	r := newTaskRig(t, "AMSG_TICK=100ms")
	p := r.start(t)
	r.register(t, p)
	later := push.FormatTimestamp(time.Now().Add(time.Hour))
	_, keep := r.schedule(t, p, map[string]any{"contactName": "Rei", "messageType": "fixed", "userMessage": "a", "firstSendTime": later,
		"metadata": map[string]any{"charId": "c1"}})
	status, body := r.call(t, p, http.MethodPut, "update-message?id="+keep, map[string]any{"contactName": "Ayu", "metadata": map[string]any{"charId": "c2"}})
	if status != http.StatusOK || !strings.Contains(string(body), `"updatedFields":["contactName","metadata"]`) {
		t.Fatalf("update: %d %s", status, body)
	}
	status, body = r.call(t, p, http.MethodGet, "message?id="+keep, nil)
	if status != http.StatusOK || !strings.Contains(string(body), `"contactName":"Ayu"`) || !strings.Contains(string(body), `"metadata":{"charId":"c2"}`) {
		t.Errorf("detail: %d %s", status, body)
	}

	// A one-off task whose only device is gone fails for good.
	r.push.Unsubscribe(r.sub)
	_, failing := r.schedule(t, p, map[string]any{"contactName": "Rei", "messageType": "fixed", "userMessage": "b", "immediate": true})
	p.WaitLog(t, "scheduler: delivery failed for good", 20*time.Second)
	status, body = r.call(t, p, http.MethodGet, "message?id="+failing, nil)
	if status != http.StatusConflict || !strings.Contains(string(body), `"code":"TASK_ALREADY_COMPLETED"`) ||
		!strings.Contains(string(body), `"status":"failed"`) || !strings.Contains(string(body), `"code":"PUSH_SUBSCRIPTION_MISSING"`) {
		t.Fatalf("failed task detail: %d %s", status, body)
	}
	status, body = r.call(t, p, http.MethodPut, "update-message?id="+failing, map[string]any{"userMessage": "c"})
	if status != http.StatusConflict || !strings.Contains(string(body), "TASK_ALREADY_COMPLETED") {
		t.Errorf("update of a failed task: %d %s", status, body)
	}
	status, body = r.call(t, p, http.MethodGet, "messages?status=failed", nil)
	if status != http.StatusOK || !strings.Contains(string(body), `"uuid":"`+failing+`"`) || !strings.Contains(string(body), `"total":1`) {
		t.Errorf("failed list: %d %s", status, body)
	}
	for _, id := range []string{failing, keep} {
		if status, body := r.call(t, p, http.MethodDelete, "cancel-message?id="+id, nil); status != http.StatusOK {
			t.Errorf("cancel %s: %d %s", id, status, body)
		}
	}
	if status, body := r.call(t, p, http.MethodGet, "messages", nil); !strings.Contains(string(body), `"total":0`) {
		t.Errorf("after cancelling: %d %s", status, body)
	}
}

// An LLM burst is decided once: a prompted occurrence killed (SIGKILL)
// mid-burst resumes after the lease with the answer it recorded before its
// first push left, each sentence under its own id, and never asks the LLM
// again (a second answer would go out under the same ids).
func TestCrashMidLLMBurstResendsTheRecordedAnswer(t *testing.T) {
	const burst = 6
	r := newTaskRig(t, "AMSG_TICK=100ms", "AMSG_TASK_LEASE=2s", "AMSG_TASK_HEARTBEAT=400ms", "AMSG_PUSH_INTERVAL=200ms")
	llm := llmtest.NewServer(t)
	sentences := make([]string, burst)
	for i := range sentences {
		sentences[i] = fmt.Sprintf("第%d句。", i+1)
	}
	llm.Enqueue(llmtest.Reply{Content: strings.Join(sentences, "")}, llmtest.Reply{Content: "另一个回答。另一个回答。"})
	p := r.start(t)
	r.register(t, p)
	r.schedule(t, p, map[string]any{"contactName": "Rei", "messageType": "prompted", "immediate": true,
		"completePrompt": "say six things", "apiUrl": llm.APIURL(), "apiKey": "k", "primaryModel": "m"})

	waitPushes(t, r.push, 2, 20*time.Second)
	p.Kill(t)
	delivered := len(r.push.Pushes())
	if delivered >= burst {
		t.Fatalf("the whole burst went out before the kill (%d pushes)", delivered)
	}
	p = r.start(t)
	p.WaitLog(t, "scheduler: task delivered", 30*time.Second)

	if n := len(llm.Requests()); n != 1 {
		t.Errorf("the LLM was asked %d times, want once", n)
	}
	seen := map[string]bool{}
	for _, pu := range r.push.Pushes() {
		var m struct{ MessageID, Message string }
		if err := json.Unmarshal(pu.JSON, &m); err != nil {
			t.Fatal(err)
		}
		i, err := strconv.Atoi(m.MessageID[strings.LastIndex(m.MessageID, "_")+1:])
		if err != nil || i >= burst || m.Message != sentences[i] {
			t.Errorf("push %s carries %q: not the recorded answer's sentence", m.MessageID, m.Message)
			continue
		}
		seen[m.MessageID] = true
	}
	if len(seen) != burst {
		t.Errorf("%d distinct pushes of the %d-sentence answer reached the push service", len(seen), burst)
	}
}
