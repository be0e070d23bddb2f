package e2e_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"amsg/llm/llmtest"
	"amsg/web/browsertest"
)

// shownApproval is a notification with its actions, which
// browsertest.Notification leaves out.
type shownApproval struct {
	Title              string `json:"title"`
	Body               string `json:"body"`
	Tag                string `json:"tag"`
	RequireInteraction bool   `json:"requireInteraction"`
	Actions            []struct {
		Action string `json:"action"`
		Title  string `json:"title"`
	} `json:"actions"`
}

func notificationsUnder(p *browsertest.Page, tag string) []shownApproval {
	var out []shownApproval
	p.Eval(`(async () => {
		const reg = await navigator.serviceWorker.getRegistration('/');
		return (await reg.getNotifications({ tag: `+strconv.Quote(tag)+` })).map((n) => ({
			title: n.title, body: n.body, tag: n.tag, requireInteraction: n.requireInteraction,
			actions: (n.actions || []).map((a) => ({ action: a.action, title: a.title })),
		}));
	})()`, &out)
	return out
}

// pushesFor waits until the fake push service decrypted n pushes for
// endpoint in all and returns them.
func pushesFor(t *testing.T, srv *server, endpoint string, n int) []string {
	t.Helper()
	for total := 1; ; total++ {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		pushes, err := srv.Push.WaitPushes(ctx, total)
		cancel()
		if err != nil {
			t.Fatalf("waiting for push %d of %s: %v (errors: %v)", n, endpoint, err, srv.Push.Errors())
		}
		var mine []string
		for _, p := range pushes {
			if p.Endpoint == endpoint {
				mine = append(mine, string(p.JSON))
			}
		}
		if len(mine) >= n {
			return mine
		}
	}
}

// TestApprovalFromTheNotification is issue 21's done-when: this browser and
// a second device of the user get the approval; the Approve (then Deny)
// action dispatched inside amsg's worker posts the decision, the model gets
// the tool result and its answer arrives as a content push, and the second
// device's notification is replaced.
func TestApprovalFromTheNotification(t *testing.T) {
	srv := newServer(t)
	llm := llmtest.NewServer(t)
	b := browsertest.New(t, browsertest.Config{})
	phone, phoneSub := openPage(t, b, srv, "")
	onboard(t, b, phone, srv.URL)
	user := userID(t, phone)

	// The second device: another browser whose subscription the user has.
	other := browsertest.New(t, browsertest.Config{})
	other.GrantNotifications(srv.URL)
	laptop, laptopSub := openPage(t, other, srv, "")
	raw, _ := json.Marshal(laptopSub)
	if _, err := srv.Store.PutSubscription(t.Context(), user, raw, time.Time{}); err != nil {
		t.Fatal(err)
	}

	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "send_email", "parameters": map[string]any{"type": "object"}}}}
	seen := map[string]int{}
	for round, tc := range []struct {
		action, result, notice, elsewhere string
	}{
		{"approve", `{"approved":true}`, "Approved", "Approved on another device"},
		{"deny", `{"approved":false}`, "Declined", "Declined on another device"},
	} {
		t.Run(tc.action, func(t *testing.T) {
			session := "sess_mail_" + tc.action
			tag := "amsg-session-" + session
			llm.Enqueue(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_mail", Name: "send_email", Arguments: `{"to":"boss@example.com"}`}}},
				llmtest.Reply{Content: "Understood: " + tc.action + "."})
			postEncrypted(t, srv, user, "instant", map[string]any{"contactName": "Rei", "apiUrl": llm.APIURL(), "apiKey": "sk-test",
				"primaryModel": "test-model", "sessionId": session, "tools": tools, "approvalTools": []string{"send_email"},
				"messages": []any{map[string]any{"role": "user", "content": "Mail my boss."}}})

			phonePushes := pushesFor(t, srv, phoneSub.Endpoint, seen["phone"]+1)
			laptopPushes := pushesFor(t, srv, laptopSub.Endpoint, seen["laptop"]+1)
			deliverPushes(phone, phonePushes[seen["phone"]])
			deliverPushes(laptop, laptopPushes[seen["laptop"]])
			for name, p := range map[string]*browsertest.Page{"phone": phone, "laptop": laptop} {
				shown := notificationsUnder(p, tag)
				if len(shown) != 1 || len(shown[0].Actions) != 2 || shown[0].Actions[0].Action != "approve" || shown[0].Actions[0].Title != "Approve" ||
					shown[0].Actions[1].Action != "deny" || shown[0].Actions[1].Title != "Deny" || !shown[0].RequireInteraction ||
					shown[0].Body != "Rei asks for your approval: send_email" {
					t.Fatalf("%s shows %+v, want the approval with two actions", name, shown)
				}
			}

			clickAction(phone, tag, tc.action, round+1)
			if shown := notificationsUnder(phone, tag); len(shown) != 1 || shown[0].Body != tc.notice || len(shown[0].Actions) != 0 {
				t.Errorf("the phone shows %+v after its decision, want %q", shown, tc.notice)
			}

			requests := llm.WaitRequests(2 * (round + 1))
			if got, _ := requests[len(requests)-1].ToolResult("call_mail"); got != tc.result {
				t.Errorf("the model got %s, want %s", got, tc.result)
			}

			// The phone gets the answer, the laptop the outcome and the answer.
			phonePushes = pushesFor(t, srv, phoneSub.Endpoint, seen["phone"]+2)
			laptopPushes = pushesFor(t, srv, laptopSub.Endpoint, seen["laptop"]+3)
			seen["phone"], seen["laptop"] = len(phonePushes), len(laptopPushes)
			var answer struct {
				MessageKind, Message string
			}
			_ = json.Unmarshal([]byte(phonePushes[len(phonePushes)-1]), &answer)
			if answer.MessageKind != "content" || answer.Message != "Understood: "+tc.action+"." {
				t.Fatalf("the phone's last push = %s, want the answer", phonePushes[len(phonePushes)-1])
			}
			deliverPushes(phone, phonePushes[len(phonePushes)-1])
			waitEnvelope(t, phone, answerID(t, phonePushes[len(phonePushes)-1]))

			// The laptop's own click comes too late.
			clickAction(laptop, tag, "approve", round+1)
			if shown := notificationsUnder(laptop, tag); len(shown) != 1 || shown[0].Body != "Already answered" {
				t.Errorf("the laptop shows %+v after a late click, want Already answered", shown)
			}
			deliverPushes(laptop, laptopPushes[len(laptopPushes)-2])
			if shown := notificationsUnder(laptop, tag); len(shown) != 1 || shown[0].Body != tc.elsewhere || len(shown[0].Actions) != 0 {
				t.Errorf("the laptop shows %+v, want its approval replaced by %q", shown, tc.elsewhere)
			}
		})
	}
}

// TestApprovalScreen: a click on the approval's body opens #/interrupt/<id>,
// which lists the pending approval from the server with its tool and
// arguments; its Approve button decides it, and the loop resumes.
func TestApprovalScreen(t *testing.T) {
	srv := newServer(t)
	llm := llmtest.NewServer(t)
	b := browsertest.New(t, browsertest.Config{})
	p, sub := openPage(t, b, srv, "")
	onboard(t, b, p, srv.URL)
	user := userID(t, p)
	llm.Enqueue(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_mail", Name: "send_email", Arguments: `{"to":"boss@example.com"}`}}},
		llmtest.Reply{Content: "Sent."})
	postEncrypted(t, srv, user, "instant", map[string]any{"contactName": "Rei", "apiUrl": llm.APIURL(), "apiKey": "sk-test",
		"primaryModel": "test-model", "sessionId": "sess_screen", "approvalTools": []string{"send_email"},
		"tools":    []any{map[string]any{"type": "function", "function": map[string]any{"name": "send_email", "parameters": map[string]any{"type": "object"}}}},
		"messages": []any{map[string]any{"role": "user", "content": "Mail my boss."}}})
	var approval struct {
		Interrupt struct {
			ID string `json:"id"`
		} `json:"interrupt"`
	}
	_ = json.Unmarshal([]byte(pushesFor(t, srv, sub.Endpoint, 1)[0]), &approval)

	var planned struct {
		URL string `json:"url"`
	}
	p.WorkerEval(`self.__amsgTest.planClick({ payload: { sessionId: 'sess_screen', interrupt: { kind: 'approval', id: `+strconv.Quote(approval.Interrupt.ID)+` } } })`, &planned)
	if planned.URL != srv.URL+"/#/interrupt/"+approval.Interrupt.ID {
		t.Errorf("a click on the approval opens %q", planned.URL)
	}
	p.Navigate(srv.URL + "/#/interrupt/" + approval.Interrupt.ID)
	p.WaitFor(`document.querySelector('.approval button[data-decision="approve"]')`)
	var text string
	p.Eval(`document.querySelector('.approval').textContent`, &text)
	if !strings.Contains(text, "send_email") || !strings.Contains(text, "boss@example.com") {
		t.Errorf("the approval screen shows %q", text)
	}
	p.Eval(`document.querySelector('.approval button[data-decision="approve"]').click()`, nil)
	if got, _ := llm.WaitRequests(2)[1].ToolResult("call_mail"); got != `{"approved":true}` {
		t.Errorf("the model got %s", got)
	}
	p.WaitFor(`!document.querySelector('.approval button')`)

	// The conversation, restored from the outbox and the transcript, shows
	// the approval settled.
	p.Navigate(srv.URL + "/#/chat/sess_screen")
	p.WaitFor(`document.querySelector('.approval .approval-state') && document.querySelector('.approval .approval-state').textContent.includes('Approved')`)
}

// clickAction dispatches notificationclick with action on the notification
// under tag inside the page's worker, as the browser does when the button
// is pressed, and waits until the worker has handled its settled-th
// approval click.
func clickAction(p *browsertest.Page, tag, action string, settled int) {
	p.WorkerEval(`(async () => {
		const [n] = await self.registration.getNotifications({ tag: `+strconv.Quote(tag)+` });
		self.dispatchEvent(new NotificationEvent('notificationclick', { notification: n, action: `+strconv.Quote(action)+` }));
		return true;
	})()`, nil)
	p.WaitForWorker(`self.__amsgTest.approvalsSettled() >= ` + strconv.Itoa(settled))
}

func answerID(t *testing.T, plaintext string) string {
	t.Helper()
	var p struct {
		MessageID string `json:"messageId"`
	}
	if err := json.Unmarshal([]byte(plaintext), &p); err != nil {
		t.Fatal(err)
	}
	return p.MessageID
}

// waitEnvelope waits until the page received the push of messageId id from
// its worker.
func waitEnvelope(t *testing.T, p *browsertest.Page, id string) {
	t.Helper()
	p.WaitFor(`(window.__browsertestSWMessages || []).some((m) => m.payload && m.payload.messageId === ` + strconv.Quote(id) + `)`)
}
