package sw_test

import (
	"encoding/json"
	"testing"

	"amsg/builders"
	"amsg/web/browsertest"
)

// fakeEndpoint makes the worker's own subscription read as endpoint, as
// getSubscription() would on a device subscribed to that push service.
func fakeEndpoint(p *browsertest.Page, endpoint string) {
	p.WorkerEval(`(() => {
		PushManager.prototype.getSubscription = async () => ({ endpoint: `+jsString(endpoint)+` });
	})()`, nil)
}

// Done-when of issue 19, on the worker side: on an Apple subscription every
// Web Push shows a notification while the page is visible (iOS waives
// nothing): the backup of a frame a broken stream lost, a duplicate of what
// the page already showed, a chunk, an unknown kind, reasoning; quietly
// under the session's tag unless it is content to show. On another push
// service the visible-window exemption stays.
func TestApplePushesAlwaysShowWhileVisible(t *testing.T) {
	for _, tt := range []struct {
		endpoint string
		apple    bool
	}{
		{"https://web.push.apple.com/QGfakeAppleDevice", true},
		{"https://fcm.googleapis.com/fcm/send/fake", false},
	} {
		t.Run(tt.endpoint, func(t *testing.T) {
			srv := newTestServer(t, "v-apple")
			_, p := openWorkerPage(t, srv)
			fakeEndpoint(p, tt.endpoint)
			r := newRound(t, p)
			sessionTag := builders.SessionTag(r.sessionID)

			// The stream broke before this frame: its backup is new to the
			// worker and shows as content on every push service.
			lost := map[string]any{"messageKind": "content", "messageId": "msg_lost", "sessionId": r.sessionID, "message": "the frame the stream lost", "contactName": "Rei"}
			lostJSON, _ := json.Marshal(lost)
			if shown, ns := deliverAndCount(t, p, lostJSON); shown != 1 || tagged(ns, "msg_lost") == nil {
				t.Errorf("backup of a lost frame: shown %d, %+v", shown, ns)
			}

			// The page got this frame and bridged it with show:'when-hidden'.
			streamed := map[string]any{"messageKind": "content", "messageId": "msg_streamed", "sessionId": r.sessionID, "message": "read on the page", "contactName": "Rei"}
			bridged, _ := json.Marshal(map[string]any{"notification": map[string]any{"show": "when-hidden"}})
			var ack map[string]any
			p.Eval(`amsgTest.deliver(Object.assign(`+mustJSON(t, streamed)+`, `+string(bridged)+`), {source: 'sse'})`, &ack)
			waitSettled(t, p, "msg_streamed")
			unknown, _ := json.Marshal(map[string]any{"messageKind": "mood", "messageId": "msg_mood", "sessionId": r.sessionID})
			quiet := map[string][]byte{
				"duplicate":    []byte(mustJSON(t, streamed)),
				"chunk":        r.chunks[0],
				"unknown kind": unknown,
				"reasoning":    r.reasoning,
			}
			for _, name := range []string{"duplicate", "chunk", "unknown kind", "reasoning"} {
				shown, ns := deliverAndCount(t, p, quiet[name])
				if !tt.apple {
					if shown != 0 {
						t.Errorf("%s on a visible page of another push service: shown %d, %+v", name, shown, ns)
					}
					continue
				}
				tag := sessionTag
				if name == "chunk" {
					tag = "amsg-receiving-mp_visible"
				}
				if n := tagged(ns, tag); shown != 1 || n == nil || !n.Silent {
					t.Errorf("%s on a visible page of Apple's push service: shown %d, want one quiet notification under %s: %+v", name, shown, tag, ns)
				}
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
