package sw_test

import (
	"strconv"
	"testing"

	"amsg/web/browsertest"
)

type shownActions struct {
	Body    string `json:"body"`
	Actions []struct {
		Action string `json:"action"`
		Title  string `json:"title"`
	} `json:"actions"`
}

// actionsUnder reads the notifications under tag with their actions, which
// browsertest.Notification leaves out.
func actionsUnder(t *testing.T, p *browsertest.Page, tag string) []shownActions {
	t.Helper()
	var out []shownActions
	p.Eval(`(async () => {
		const reg = await navigator.serviceWorker.getRegistration('/');
		return (await reg.getNotifications({ tag: `+strconv.Quote(tag)+` })).map((n) => ({
			body: n.body, actions: (n.actions || []).map((a) => ({ action: a.action, title: a.title })),
		}));
	})()`, &out)
	return out
}

func approvalPayload(id, tag string) map[string]any {
	return map[string]any{"messageKind": "tool_request", "messageId": id, "sessionId": "sess_a",
		"toolCalls": []any{map[string]any{"id": "c1"}},
		"notification": map[string]any{"show": "always", "title": "From Rei", "body": "Rei asks for your approval: send_email",
			"tag": tag, "requireInteraction": true, "actions": []any{
				map[string]any{"action": "approve", "title": "Approve"},
				map[string]any{"action": "launch", "title": "Launch"},
				map[string]any{"action": "deny", "title": "Deny"},
				map[string]any{"action": "deny"},
			}},
		"interrupt": map[string]any{"id": "int_" + id, "kind": "approval", "toolCallId": "c1", "decisionToken": "tok"}}
}

// An approval shows its approve and deny actions and nothing else; a
// decision that cannot reach the server shows the approval again, with its
// buttons, so the person can answer once the device is back online.
func TestApprovalActionsAndAnOfflineDecision(t *testing.T) {
	srv := newTestServer(t, "v-approvals")
	b, p := openWorkerPage(t, srv)
	p.DeliverPushJSON(approvalPayload("m-approval", "amsg-session-sess_a"))
	waitSettled(t, p, "m-approval")
	shown := actionsUnder(t, p, "amsg-session-sess_a")
	if len(shown) != 1 || len(shown[0].Actions) != 2 || shown[0].Actions[0].Action != "approve" || shown[0].Actions[1].Action != "deny" ||
		shown[0].Actions[1].Title != "Deny" {
		t.Fatalf("shown %+v, want the approve and deny actions", shown)
	}

	noToken := approvalPayload("m-no-token", "amsg-session-sess_b")
	noToken["interrupt"].(map[string]any)["decisionToken"] = ""
	p.DeliverPushJSON(noToken)
	waitSettled(t, p, "m-no-token")
	if shown := actionsUnder(t, p, "amsg-session-sess_b"); len(shown) != 1 || len(shown[0].Actions) != 0 {
		t.Errorf("an approval without a token shows %+v, want no actions", shown)
	}

	srv.offline.Store(true)
	p.WorkerEval(`(async () => {
		const [n] = await self.registration.getNotifications({ tag: 'amsg-session-sess_a' });
		self.dispatchEvent(new NotificationEvent('notificationclick', { notification: n, action: 'approve' }));
		return true;
	})()`, nil)
	p.WaitForWorker(`self.__amsgTest.approvalsSettled() >= 1`)
	b.TakeConsoleErrors() // the failed request
	if shown := actionsUnder(t, p, "amsg-session-sess_a"); len(shown) != 1 || len(shown[0].Actions) != 2 {
		t.Errorf("after an offline decision the device shows %+v, want the approval again", shown)
	}
}
