package sw_test

import (
	"net/http"
	"strings"
	"testing"

	"amsg/builders"
	"amsg/push"
)

// silent:"when-visible" (upstream's @aab9cff), built by the builders: quiet
// while a window is visible, ringing once none is.
func TestSilentWhenVisibleRingsOnlyWhileHidden(t *testing.T) {
	srv := newTestServer(t, "v-silent")
	_, p := openWorkerPage(t, srv)
	build := func(id string) []byte {
		t.Helper()
		c, _, err := builders.Builder{}.BuildContentPush(builders.ContentArgs{ContactName: "Rei", Message: "tea?",
			Common: builders.Common{MessageType: push.TypeInstant, Source: push.SourceInstant, MessageID: id, SessionID: "sess_silent",
				Notification: &push.Notification{Show: push.Some(push.ShowAlways), Silent: push.Some(push.SilentWhenVisible)}}})
		if err != nil {
			t.Fatal(err)
		}
		out, err := push.Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	shown, ns := deliverAndCount(t, p, build("msg_silent_visible"))
	if n := tagged(ns, "msg_silent_visible"); shown != 1 || n == nil || !n.Silent {
		t.Errorf("with the page visible: shown %d, %+v, want a silent notification", shown, ns)
	}
	p.Navigate("about:blank") // no window at all
	shown, ns = deliverAndCount(t, p, build("msg_silent_hidden"))
	if n := tagged(ns, "msg_silent_hidden"); shown != 1 || n == nil || n.Silent {
		t.Errorf("with no window: shown %d, %+v, want a ringing notification", shown, ns)
	}
}

// A queued request the server refuses with a 4xx is dropped, and the page
// hears it twice: in the enqueue's ack and in the broadcast to every window.
func TestQueueDropReachesThePage(t *testing.T) {
	srv := newTestServer(t, "v-queue-drop")
	b, p := openWorkerPage(t, srv)
	var ack struct {
		Type      string `json:"type"`
		OK        bool   `json:"ok"`
		QueueID   int    `json:"queueId"`
		Delivered bool   `json:"delivered"`
		Dropped   bool   `json:"dropped"`
		Status    int    `json:"status"`
		Error     string `json:"error"`
	}
	p.Eval(`amsgTest.enqueue({url: '/api/v1/echo', body: 'sent'})`, &ack)
	if !ack.OK || !ack.Delivered || ack.Dropped {
		t.Errorf("a delivered request's ack: %+v", ack)
	}
	srv.status.Store(http.StatusUnprocessableEntity)
	p.Eval(`amsgTest.enqueue({url: '/api/v1/echo', body: 'refused', headers: {'X-Secret': 's'}})`, &ack)
	if !ack.OK || ack.Delivered || !ack.Dropped || ack.Status != 422 || ack.Error != "HTTP 422" || ack.QueueID <= 0 {
		t.Errorf("a refused request's ack: %+v", ack)
	}
	p.WaitFor(`(window.__browsertestSWMessages || []).some((m) => m.type === 'REI_QUEUE_RESULT' && m.dropped)`)
	var broadcast []map[string]any
	p.Eval(`window.__browsertestSWMessages.filter((m) => m.type === 'REI_QUEUE_RESULT')`, &broadcast)
	want := map[string]any{"type": "REI_QUEUE_RESULT", "ok": false, "queueId": float64(ack.QueueID), "dropped": true, "status": float64(422),
		"error": "HTTP 422", "request": map[string]any{"url": "/api/v1/echo", "method": "POST"}}
	if len(broadcast) != 1 || !equalJSON(broadcast[0], want) {
		t.Errorf("broadcast %v, want %v", broadcast, want)
	}
	if errs := b.TakeConsoleErrors(); len(errs) != 1 || !strings.Contains(errs[0], "queued request dropped POST /api/v1/echo 422") {
		t.Errorf("console errors %q, want the drop logged once", errs)
	}
	var left []any
	p.Eval(`amsgTest.outbox()`, &left)
	if len(left) != 0 {
		t.Errorf("the dropped request is still queued: %v", left)
	}
}

// The worker's rules for upstream's newest kinds and notices: result shows
// like content, and silent:"when-visible" follows the reading of the windows.
func TestResultKindAndSilentRule(t *testing.T) {
	srv := newTestServer(t, "v-rules")
	_, p := openWorkerPage(t, srv)
	var got struct {
		Event     string `json:"event"`
		Render    bool   `json:"render"`
		Fallback  bool   `json:"fallback"`
		Visible   any    `json:"visible"`
		Hidden    any    `json:"hidden"`
		Untouched any    `json:"untouched"`
	}
	p.WorkerEval(`(() => {
		const t = self.__amsgTest;
		const result = { messageKind: 'result', messageId: 'r1', message: 'done' };
		return {
			event: t.eventNameFor(result),
			render: t.shouldRender(result, [{ visibilityState: 'visible' }]),
			fallback: t.buildFallbackNotification(result).options.silent === true && t.buildFallbackNotification(result).options.body === 'done',
			visible: t.resolveSilent({ silent: 'when-visible' }, [{ visibilityState: 'hidden' }, { visibilityState: 'visible' }]).silent,
			hidden: t.resolveSilent({ silent: 'when-visible' }, [{ visibilityState: 'hidden' }]).silent,
			untouched: t.resolveSilent({ silent: true }, []).silent,
		};
	})()`, &got)
	if got.Event != "rei-amsg-result-received" || !got.Render || !got.Fallback || got.Visible != true || got.Hidden != false || got.Untouched != true {
		t.Errorf("rules: %+v", got)
	}
}

func equalJSON(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if m, ok := v.(map[string]any); ok {
			am, ok := a[k].(map[string]any)
			if !ok || !equalJSON(am, m) {
				return false
			}
			continue
		}
		if a[k] != v {
			return false
		}
	}
	return true
}

// MULTIPART_EXPIRED names why a message was given up: a chunk set that
// changes its total, and a chunk that is not one.
func TestMultipartExpiredReasons(t *testing.T) {
	srv := newTestServer(t, "v-mp-reasons")
	_, p := openWorkerPage(t, srv)
	var now int64
	p.Eval(`Date.now()`, &now)
	first := multipartChunks(t, map[string]any{"messageKind": "content", "message": strings.Repeat("a", 100)}, "mp_conflict", 40, now)
	other := multipartChunks(t, map[string]any{"messageKind": "content", "message": strings.Repeat("b", 200)}, "mp_conflict", 40, now)
	p.DeliverPushJSON(first[0])
	p.DeliverPushJSON(other[1]) // another total for the same id
	bad := multipartChunks(t, map[string]any{"messageKind": "content", "message": "x"}, "mp_bad", 40, now)[0]
	bad["chunk"] = "not base64url!"
	p.DeliverPushJSON(bad)
	p.WaitFor(`window.__browsertestSWMessages.filter((m) => m.event === 'rei-amsg-multipart-expired').length === 2`)
	reasons := map[string]string{}
	for _, e := range envelopes(t, p) {
		if e.Event == "rei-amsg-multipart-expired" {
			id, _ := e.Payload["id"].(string)
			reasons[id], _ = e.Payload["reason"].(string)
		}
	}
	if reasons["mp_conflict"] != "chunk-conflict" || reasons["mp_bad"] != "invalid-chunk" {
		t.Errorf("reasons %v", reasons)
	}
}
