package sw_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"amsg/builders"
	"amsg/push"
	"amsg/web/browsertest"
)

// round is what one /instant round with reasoning, a tool call and a long
// reply, then a failed /continue, gives the push service under upstream's
// policy (reasoning included), shaped by the builders as amsg sends it.
type round struct {
	sessionID string
	reasoning []byte
	tool      []byte
	chunks    [][]byte // the long reply, split into _multipart chunks
	reply     *push.ContentPush
	errPush   []byte
}

// newRound builds the round at the browser's time, which the chunks' TTL
// is measured from, for the page p shows.
func newRound(t *testing.T, p *browsertest.Page) round {
	t.Helper()
	var page struct {
		Now    int64  `json:"now"`
		Origin string `json:"origin"`
	}
	p.Eval(`({ now: Date.now(), origin: location.origin })`, &page)
	createdAt := time.UnixMilli(page.Now)
	b := builders.Builder{Now: func() time.Time { return createdAt }, PageURL: page.Origin}
	common := func(suffix string) builders.Common {
		return builders.Common{MessageType: push.TypeInstant, Source: push.SourceInstant,
			MessageID: "msg_visible_" + suffix, SessionID: "sess_visible"}
	}
	encode := func(p push.Push, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		out, err := push.Encode(p)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	r := round{sessionID: "sess_visible"}
	rp, _, err := b.BuildReasoningPush(builders.ReasoningArgs{Common: common("reasoning"), ReasoningContent: "plan", ContactName: "Rei"})
	r.reasoning = encode(rp, err)
	r.tool = encode(b.BuildToolRequestPush(builders.ToolRequestArgs{Common: common("tool"), ContactName: "Rei",
		ToolCalls: json.RawMessage(`[{"id":"call_0","type":"function","function":{"name":"get_location","arguments":"{}"}}]`)}))
	r.reply, _, err = b.BuildContentPush(builders.ContentArgs{Common: common("0"), ContactName: "Rei",
		Message: strings.Repeat("早上好，今天也要加油哦！", 200)}) // 7200 bytes: over one push
	long := encode(r.reply, err)
	r.chunks, err = push.SplitMultipart(long, push.KindContent, push.MultipartOptions{ID: "mp_visible", CreatedAt: createdAt, TTL: time.Minute})
	if err != nil || len(r.chunks) < 2 {
		t.Fatalf("%d chunks, %v", len(r.chunks), err)
	}
	r.errPush = encode(b.BuildErrorPush(builders.ErrorArgs{Common: common("error"), Code: "LLM_CALL_FAILED", Message: "AI API error: HTTP 500"}))
	return r
}

// deliverAndCount delivers one push and waits until the worker settled it;
// it returns how many notifications the worker showed meanwhile and the
// notifications shown now. It works while the tab shows about:blank.
func deliverAndCount(t *testing.T, p *browsertest.Page, data []byte) (int, []browsertest.Notification) {
	t.Helper()
	var before struct{ Settled, Shown int }
	p.WorkerEval(`({ settled: self.__amsgTest.pushesSettled(), shown: self.__amsgTest.notificationsShown() })`, &before)
	p.DeliverPush(string(data))
	p.WaitForWorker(`self.__amsgTest.pushesSettled() > ` + strconv.Itoa(before.Settled))
	var after struct {
		Shown         int                        `json:"shown"`
		Notifications []browsertest.Notification `json:"notifications"`
	}
	p.WorkerEval(`(async () => ({
		shown: self.__amsgTest.notificationsShown(),
		notifications: (await self.registration.getNotifications()).map((n) => ({ title: n.title, body: n.body, tag: n.tag, silent: n.silent })),
	}))()`, &after)
	return after.Shown - before.Shown, after.Notifications
}

func tagged(ns []browsertest.Notification, tag string) *browsertest.Notification {
	for i := range ns {
		if ns[i].Tag == tag {
			return &ns[i]
		}
	}
	return nil
}

// Done-when of issue 11, on the worker side: with no window visible, every
// push of the round shows a notification (none is silent, which iOS would
// count against the subscription), the quiet ones under the session's tag
// give way to the reply, and the chunks of the long reply show "receiving"
// until it is complete.
func TestEveryWebPushShowsANotificationWhileHidden(t *testing.T) {
	srv := newTestServer(t, "v-visible")
	_, p := openWorkerPage(t, srv)
	r := newRound(t, p)
	sessionTag := builders.SessionTag(r.sessionID)
	p.Navigate("about:blank") // headless pages are always visible: no window at all is hidden

	quietPushesShowUnderTheSession(t, p, r, sessionTag)
	chunksShowReceivingThenTheReply(t, p, r, sessionTag)
	shown, ns := deliverAndCount(t, p, r.errPush)
	if n := tagged(ns, sessionTag); shown != 1 || n == nil || n.Title != "The reply was interrupted" || n.Body != "AI API error: HTTP 500" {
		t.Errorf("error: shown %d, %+v", shown, ns)
	}
	// A retry of the reply's last chunk, and a duplicate of the tool request,
	// still show something (quietly, in place).
	for name, data := range map[string][]byte{"redelivered chunk": r.chunks[len(r.chunks)-1], "duplicate": r.tool} {
		if shown, ns = deliverAndCount(t, p, data); shown != 1 {
			t.Errorf("%s: shown %d, %+v", name, shown, ns)
		}
	}
}

// quietPushesShowUnderTheSession delivers r's reasoning and tool request,
// each shown silently under the session's tag.
func quietPushesShowUnderTheSession(t *testing.T, p *browsertest.Page, r round, sessionTag string) {
	t.Helper()
	shown, ns := deliverAndCount(t, p, r.reasoning)
	if n := tagged(ns, sessionTag); shown != 1 || n == nil || !n.Silent || n.Body != "Rei is thinking…" {
		t.Errorf("reasoning: shown %d, %+v", shown, ns)
	}
	shown, ns = deliverAndCount(t, p, r.tool)
	if n := tagged(ns, sessionTag); shown != 1 || n == nil || !n.Silent || n.Body != "Rei needs this device to continue" || n.Title != "From Rei" {
		t.Errorf("tool_request: shown %d, %+v", shown, ns)
	}
}

// chunksShowReceivingThenTheReply delivers r's chunks: each but the last
// shows "receiving" silently; the last shows the reply alone, in place of
// the quiet ones.
func chunksShowReceivingThenTheReply(t *testing.T, p *browsertest.Page, r round, sessionTag string) {
	t.Helper()
	receiving := "amsg-receiving-mp_visible"
	for i, chunk := range r.chunks[:len(r.chunks)-1] {
		shown, ns := deliverAndCount(t, p, chunk)
		if n := tagged(ns, receiving); shown != 1 || n == nil || !n.Silent {
			t.Errorf("chunk %d: shown %d, %+v", i+1, shown, ns)
		}
	}
	shown, ns := deliverAndCount(t, p, r.chunks[len(r.chunks)-1])
	reply := tagged(ns, r.reply.MessageID)
	if shown != 1 || reply == nil || reply.Title != "From Rei" || reply.Silent || tagged(ns, receiving) != nil || tagged(ns, sessionTag) != nil {
		t.Errorf("last chunk: shown %d, want the reply alone in place of the quiet ones: %+v", shown, ns)
	}
}

// With a window visible the browsers waive the rule: the worker keeps to
// amsg-sw's display rules, but a tool request is still shown quietly, and the
// reply closes it.
func TestVisiblePageToolRequestAndReply(t *testing.T) {
	srv := newTestServer(t, "v-visible-page")
	_, p := openWorkerPage(t, srv)
	r := newRound(t, p)
	sessionTag := builders.SessionTag(r.sessionID)

	if shown, _ := deliverAndCount(t, p, r.reasoning); shown != 0 {
		t.Errorf("reasoning on a visible page showed %d", shown)
	}
	if shown, ns := deliverAndCount(t, p, r.tool); shown != 1 || tagged(ns, sessionTag) == nil {
		t.Errorf("tool_request on a visible page: shown %d, %+v", shown, ns)
	}
	if shown, ns := deliverAndCount(t, p, r.chunks[0]); shown != 0 || tagged(ns, "amsg-receiving-mp_visible") != nil {
		t.Errorf("a chunk on a visible page: shown %d, %+v", shown, ns)
	}
	reply, _ := push.Encode(r.reply) // over the budget, but the browser takes it
	if shown, ns := deliverAndCount(t, p, reply); shown != 1 || tagged(ns, sessionTag) != nil || tagged(ns, r.reply.MessageID) == nil {
		t.Errorf("the reply: shown %d, want it alone: %+v", shown, ns)
	}
}

// Each Web Push reports the device seen, and a summary naming the whole
// message in _truncated is completed from the outbox: the windows get the
// whole push, and the notification carries it for a click.
func TestWebPushReportsSeenAndCompletesTruncated(t *testing.T) {
	srv := newTestServer(t, "v-truncated")
	_, p := openWorkerPage(t, srv)
	config := map[string]any{"apiBase": "/api/v1", "userId": testUserID, "userKeyHex": testUserKey.Hex(), "clientToken": "tok-2"}
	cfgJSON, _ := json.Marshal(config)
	p.Eval(`amsgTest.writeClientConfig(`+string(cfgJSON)+`)`, nil)
	p.WorkerEval(`(() => {
		PushManager.prototype.getSubscription = async () => ({ endpoint: 'https://push.example/this-phone' });
	})()`, nil)

	full, _, err := builders.Builder{}.BuildContentPush(builders.ContentArgs{
		Common:  builders.Common{MessageType: push.TypeInstant, Source: push.SourceInstant, MessageID: "msg_long", SessionID: "sess_long"},
		Message: strings.Repeat("long text ", 600), ContactName: "Rei",
	})
	if err != nil {
		t.Fatal(err)
	}
	fullJSON, _ := push.Encode(full)
	var fullMap map[string]any
	json.Unmarshal(fullJSON, &fullMap)
	srv.mu.Lock()
	srv.outbox = []map[string]any{
		{"id": 1, "messageId": "msg_other", "push": map[string]any{"messageKind": "content", "messageId": "msg_other", "message": "x"}},
		{"id": 2, "messageId": "msg_long", "push": fullMap},
	}
	srv.mu.Unlock()

	summary := map[string]any{}
	json.Unmarshal(fullJSON, &summary)
	summary["message"] = "long text long text…"
	summary["_truncated"] = map[string]any{"messageId": "msg_long", "bytes": len(fullJSON)}
	p.DeliverPushJSON(summary)
	p.WaitFor(`(window.__browsertestSWMessages || []).some((m) => m.payload && m.payload.messageId === 'msg_long' && !m.payload._truncated)`)

	var whole struct{ Message string }
	for _, e := range envelopesFor(t, p, "msg_long") {
		if _, cut := e.Payload["_truncated"]; !cut {
			whole.Message, _ = e.Payload["message"].(string)
		}
	}
	if whole.Message != full.Message {
		t.Errorf("the windows got %d bytes of text, want the whole %d", len(whole.Message), len(full.Message))
	}
	p.WaitForWorker(`self.registration.getNotifications({ tag: 'msg_long' }).then((ns) => ns.length === 1 && !ns[0].data.payload._truncated)`)
	if seen := srv.devicesSeen(); len(seen) != 1 || seen[0] != (deviceSeen{testUserID, "tok-2", "https://push.example/this-phone"}) {
		t.Errorf("device-seen reports %+v", seen)
	}
}
