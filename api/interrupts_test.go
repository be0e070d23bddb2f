package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"amsg/llm"
	"amsg/llm/llmtest"
	"amsg/loop"
	"amsg/push"
	"amsg/push/clocktest"
	"amsg/push/courier"
	"amsg/push/pushtest"
	"amsg/scheduler"
	"amsg/store"
	"amsg/store/storetest"
)

var sendEmailTool = []any{
	map[string]any{"type": "function", "function": map[string]any{"name": "send_email", "parameters": map[string]any{"type": "object"}}},
	map[string]any{"type": "function", "function": map[string]any{"name": "get_time", "parameters": map[string]any{"type": "object"}}},
}

var approvalReply = llmtest.Reply{Content: "I will send it once you agree.",
	ToolCalls: []llmtest.ToolCall{{ID: "call_mail", Name: "send_email", Arguments: `{"to":"boss@example.com"}`}}}

var afterApprovalReply = llmtest.Reply{Content: "Done, the mail is out."}

// approvalFixture is an instant fixture whose user has two devices.
type approvalFixture struct {
	*instantFixture
	clock  *clocktest.Clock
	phone  push.Subscription
	laptop push.Subscription
}

func newApprovalFixture(t *testing.T) *approvalFixture {
	t.Helper()
	clk := clocktest.New(time.Now())
	f := &approvalFixture{instantFixture: newInstantFixture(t, Config{}, loop.AgentConfig{Now: clk.Now}), clock: clk}
	t.Cleanup(f.s.deps.Instant.Interrupts.Wait)
	f.phone, f.laptop = f.addDevice(t, f.instantFixture), f.addDevice(t, f.instantFixture)
	return f
}

func (f *approvalFixture) addDevice(t *testing.T, into *instantFixture) push.Subscription {
	t.Helper()
	sub := into.push.Subscribe()
	if _, err := into.store.PutSubscription(t.Context(), testUserID, json.RawMessage(jsonBody(t, sub)), time.Time{}); err != nil {
		t.Fatal(err)
	}
	return sub
}

// approvalPush is the part of an approval push the tests read.
type approvalPush struct {
	MessageKind  string            `json:"messageKind"`
	SessionID    string            `json:"sessionId"`
	ToolCalls    []json.RawMessage `json:"toolCalls"`
	Notification struct {
		Show               any    `json:"show"`
		Title              string `json:"title"`
		Body               string `json:"body"`
		Tag                string `json:"tag"`
		Silent             bool   `json:"silent"`
		RequireInteraction bool   `json:"requireInteraction"`
		Actions            []struct {
			Action string `json:"action"`
			Title  string `json:"title"`
		} `json:"actions"`
	} `json:"notification"`
	Message   string `json:"message"`
	Interrupt struct {
		ID            string `json:"id"`
		Kind          string `json:"kind"`
		ToolCallID    string `json:"toolCallId"`
		ExpiresAt     string `json:"expiresAt"`
		DecisionToken string `json:"decisionToken"`
		State         string `json:"state"`
	} `json:"interrupt"`
}

// start runs /instant with approvalTools over JSON and returns the
// approval push as each device got it, after checking both got the same.
func (f *approvalFixture) start(t *testing.T, extra map[string]any) approvalPush {
	t.Helper()
	f.llm.Enqueue(approvalReply)
	body := f.body(map[string]any{"tools": sendEmailTool, "approvalTools": []string{"send_email"}, "sessionId": "sess_mail"})
	for k, v := range extra {
		body[k] = v
	}
	req := encryptedRequest(t, http.MethodPost, "/api/v1/instant", testUserID, body)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Accept-Language", "en-GB")
	got := serve(f.s, req)
	if got.status != http.StatusOK || !strings.Contains(got.body, `"status":"tool_requested"`) {
		t.Fatalf("/instant = %d %s", got.status, got.body)
	}
	var ap approvalPush
	for _, m := range f.messagesTo(t, f.phone, 2) {
		if err := json.Unmarshal(m.Plaintext, &ap); err != nil {
			t.Fatal(err)
		}
		if ap.MessageKind == "tool_request" {
			left := 3600 // the default timeout, in seconds
			if s, ok := extra["approvalTimeoutSeconds"].(int); ok {
				left = s
			}
			if m.Urgency != "high" || m.TTL > left || m.TTL < left-5 {
				t.Errorf("approval push Urgency %q TTL %d, want high and the %d s left", m.Urgency, m.TTL, left)
			}
			return ap
		}
	}
	t.Fatal("no approval push")
	return ap
}

// messagesTo waits until sub has received n messages and returns them.
func (f *approvalFixture) messagesTo(t *testing.T, sub push.Subscription, n int) []pushtest.Message {
	t.Helper()
	var mine []pushtest.Message
	for total := 1; ; total++ {
		msgs, err := f.push.WaitMessages(t.Context(), total)
		if err != nil {
			t.Fatal(err)
		}
		mine = mine[:0]
		for _, m := range msgs {
			if m.Endpoint == sub.Endpoint {
				mine = append(mine, m)
			}
		}
		if len(mine) >= n {
			return mine[:n]
		}
	}
}

// wantAnswer checks that the phone's nth push is the model's answer text.
func (f *approvalFixture) wantAnswer(t *testing.T, nth int, text string) {
	t.Helper()
	var answer approvalPush
	got := f.messagesTo(t, f.phone, nth)[nth-1]
	if err := json.Unmarshal(got.Plaintext, &answer); err != nil || answer.MessageKind != "content" || answer.Message != text {
		t.Errorf("the phone's push %d = %s, want the answer %q", nth, got.Plaintext, text)
	}
}

// transcriptTypes are the types of the approval session's messages, in
// order.
func (f *approvalFixture) transcriptTypes(t *testing.T) string {
	t.Helper()
	var types []string
	for _, m := range f.transcript(t, testUserID, "sess_mail").Messages {
		types = append(types, m.Type)
	}
	return strings.Join(types, " ")
}

func (f *approvalFixture) decide(body map[string]any, id string) response {
	return post(f.s, "/api/v1/interrupts/"+id+"/decision", mustJSON(body), map[string]string{"Content-Type": "application/json", "Accept-Language": "en"})
}

func TestApprovalFromOneDeviceResumesTheLoop(t *testing.T) {
	f := newApprovalFixture(t)
	ap := f.start(t, nil)
	n := ap.Notification
	if ap.Interrupt.Kind != "approval" || ap.Interrupt.ToolCallID != "call_mail" || ap.Interrupt.DecisionToken == "" || len(ap.ToolCalls) != 1 {
		t.Fatalf("interrupt = %+v, toolCalls %s", ap.Interrupt, ap.ToolCalls)
	}
	if len(n.Actions) != 2 || n.Actions[0].Action != "approve" || n.Actions[0].Title != "Approve" || n.Actions[1].Action != "deny" ||
		n.Actions[1].Title != "Deny" || !n.RequireInteraction || n.Silent || n.Tag != "amsg-session-sess_mail" ||
		n.Body != "Rei asks for your approval: send_email" {
		t.Errorf("notification = %+v", n)
	}
	f.messagesTo(t, f.laptop, 2) // the laptop got it too

	f.llm.Enqueue(afterApprovalReply)
	got := f.decide(map[string]any{"decision": "approve", "token": ap.Interrupt.DecisionToken, "endpoint": f.phone.Endpoint}, ap.Interrupt.ID)
	if got.status != http.StatusOK || !strings.Contains(got.body, `"state":"approved"`) || !strings.Contains(got.body, `"notice":"Approved"`) {
		t.Fatalf("decision = %d %s", got.status, got.body)
	}
	if result, _ := f.llm.WaitRequests(2)[1].ToolResult("call_mail"); result != `{"approved":true}` {
		t.Errorf("tool result = %s", result)
	}
	// The laptop's notification is replaced under the same tag; the phone,
	// which decided, gets only the answer.
	var outcome approvalPush
	laptop := f.messagesTo(t, f.laptop, 4)
	_ = json.Unmarshal(laptop[2].Plaintext, &outcome)
	if outcome.MessageKind != "content" || outcome.Notification.Tag != n.Tag || outcome.Notification.Body != "Approved on another device" ||
		!outcome.Notification.Silent || outcome.Interrupt.State != "approved" || outcome.Interrupt.ID != ap.Interrupt.ID {
		t.Errorf("the laptop's outcome push = %s", laptop[2].Plaintext)
	}
	f.wantAnswer(t, 3, "Done, the mail is out.")

	f.s.deps.Instant.Interrupts.Wait()
	if types := f.transcriptTypes(t); types != "input tool-calls interrupt decision tool-results reply" {
		t.Errorf("transcript = %v", types)
	}
	f.clock.Add(scheduler.DefaultRecoverAfter)
	if n, err := f.s.deps.Instant.Interrupts.Recover(t.Context()); err != nil || n != 0 {
		t.Errorf("Recover after the round was followed = %d, %v; want 0", n, err)
	}
	devices, err := f.store.Devices(t.Context(), testUserID)
	if err != nil {
		t.Fatal(err)
	}
	var phoneID int64
	for _, d := range devices {
		if d.Subscription.Endpoint == f.phone.Endpoint {
			phoneID = d.ID
		}
	}
	loaded, err := f.s.deps.Instant.Agent.Transcripts().Load(t.Context(), loop.UserOwner(testUserID), "sess_mail")
	if err != nil {
		t.Fatal(err)
	}
	decided := loaded.Messages[3].Interrupt
	if decided == nil || decided.State != "approved" || decided.DecidedBy != phoneID || decided.DecidedAt == "" || decided.ID != ap.Interrupt.ID {
		t.Errorf("the transcript's decision = %+v, want the phone (%d) and a time", decided, phoneID)
	}

	// The token is spent.
	got = f.decide(map[string]any{"decision": "deny", "token": ap.Interrupt.DecisionToken}, ap.Interrupt.ID)
	if got.status != http.StatusConflict || !strings.Contains(got.body, "INTERRUPT_ALREADY_DECIDED") || !strings.Contains(got.body, `"notice":"Already answered"`) {
		t.Errorf("replayed decision = %d %s", got.status, got.body)
	}
}

func TestDenialGivesTheModelTheReason(t *testing.T) {
	f := newApprovalFixture(t)
	ap := f.start(t, nil)
	f.llm.Enqueue(afterApprovalReply)
	got := f.decide(map[string]any{"decision": "deny", "token": ap.Interrupt.DecisionToken, "reason": "not today"}, ap.Interrupt.ID)
	if got.status != http.StatusOK || !strings.Contains(got.body, `"notice":"Declined"`) {
		t.Fatalf("decision = %d %s", got.status, got.body)
	}
	if result, _ := f.llm.WaitRequests(2)[1].ToolResult("call_mail"); result != `{"approved":false,"reason":"not today"}` {
		t.Errorf("tool result = %s", result)
	}
	var outcome approvalPush
	_ = json.Unmarshal(f.messagesTo(t, f.phone, 3)[2].Plaintext, &outcome)
	if outcome.Notification.Body != "Declined on another device" {
		t.Errorf("outcome without an endpoint goes to every device: %+v", outcome)
	}
}

func TestConcurrentDecisionsHaveOneWinner(t *testing.T) {
	f := newApprovalFixture(t)
	ap := f.start(t, nil)
	f.llm.Enqueue(afterApprovalReply, afterApprovalReply)
	statuses := make([]int, 2)
	var wg sync.WaitGroup
	for i, decision := range []string{"approve", "deny"} {
		wg.Go(func() {
			statuses[i] = f.decide(map[string]any{"decision": decision, "token": ap.Interrupt.DecisionToken}, ap.Interrupt.ID).status
		})
	}
	wg.Wait()
	if statuses[0]+statuses[1] != http.StatusOK+http.StatusConflict {
		t.Fatalf("statuses = %v, want one 200 and one 409", statuses)
	}
	f.llm.WaitRequests(2)
	f.s.deps.Instant.Interrupts.Wait()
	if n := len(f.llm.Requests()); n != 2 {
		t.Errorf("the model was called %d times; the loop resumed more than once", n)
	}
}

func TestDecisionTokens(t *testing.T) {
	f := newApprovalFixture(t)
	ap := f.start(t, nil)
	id, token := ap.Interrupt.ID, ap.Interrupt.DecisionToken
	altered := []byte(token)
	altered[3] ^= 1
	for _, tc := range []struct {
		name   string
		id     string
		body   map[string]any
		status int
		code   string
	}{
		{"missing token", id, map[string]any{"decision": "approve"}, 400, "INVALID_PAYLOAD_FORMAT"},
		{"bad decision", id, map[string]any{"decision": "maybe", "token": token}, 400, "INVALID_PAYLOAD_FORMAT"},
		{"altered token", id, map[string]any{"decision": "approve", "token": string(altered)}, 403, "INTERRUPT_TOKEN_INVALID"},
		{"another interrupt's token", id, map[string]any{"decision": "approve", "token": f.s.deps.Instant.Agent.DecisionToken("int_other")}, 403, "INTERRUPT_TOKEN_INVALID"},
		{"unknown interrupt", "int_other", map[string]any{"decision": "approve", "token": f.s.deps.Instant.Agent.DecisionToken("int_other")}, 404, "INTERRUPT_NOT_FOUND"},
	} {
		got := f.decide(tc.body, tc.id)
		if got.status != tc.status || !strings.Contains(got.body, tc.code) {
			t.Errorf("%s: %d %s, want %d %s", tc.name, got.status, got.body, tc.status, tc.code)
		}
	}
	in, err := f.store.Interrupt(t.Context(), id)
	if err != nil || in.State != store.InterruptPending {
		t.Fatalf("after refused decisions: %+v, %v", in, err)
	}
	list := do(t, f.s, http.MethodGet, "/api/v1/interrupts?status=pending", map[string]string{"X-User-Id": testUserID})
	var pending struct {
		Interrupts []interruptJSON `json:"interrupts"`
	}
	decrypted(t, testUserID, list, &pending)
	if len(pending.Interrupts) != 1 || pending.Interrupts[0].ID != id || pending.Interrupts[0].Tool != "send_email" ||
		pending.Interrupts[0].DecisionToken != token || string(pending.Interrupts[0].Arguments) != `{"to":"boss@example.com"}` {
		t.Errorf("pending = %+v", pending)
	}
	if got := do(t, f.s, http.MethodGet, "/api/v1/interrupts?status=done", map[string]string{"X-User-Id": testUserID}); got.status != 400 {
		t.Errorf("status=done: %d %s", got.status, got.body)
	}
	if got := do(t, f.s, http.MethodGet, "/api/v1/capabilities", nil); !strings.Contains(got.body, `"interrupt-approvals"`) {
		t.Errorf("capabilities = %s", got.body)
	}
}

func TestExpiredApprovalResumesAsNotApproved(t *testing.T) {
	f := newApprovalFixture(t)
	ap := f.start(t, map[string]any{"approvalTimeoutSeconds": 60})
	f.llm.Enqueue(afterApprovalReply)
	if n, err := f.s.deps.Instant.Interrupts.Expire(t.Context()); err != nil || n != 0 {
		t.Fatalf("sweep before the expiry settled %d, %v", n, err)
	}
	f.clock.Add(time.Minute)
	if n, err := f.s.deps.Instant.Interrupts.Expire(t.Context()); err != nil || n != 1 {
		t.Fatalf("sweep at the expiry settled %d, %v", n, err)
	}
	if result, _ := f.llm.WaitRequests(2)[1].ToolResult("call_mail"); result != `{"approved":false,"expired":true}` {
		t.Errorf("tool result = %s", result)
	}
	var outcome approvalPush
	_ = json.Unmarshal(f.messagesTo(t, f.laptop, 3)[2].Plaintext, &outcome)
	if outcome.Notification.Body != "No longer waiting" || outcome.Interrupt.State != "expired" {
		t.Errorf("outcome = %+v", outcome)
	}
	got := f.decide(map[string]any{"decision": "approve", "token": ap.Interrupt.DecisionToken}, ap.Interrupt.ID)
	if got.status != http.StatusGone || !strings.Contains(got.body, "INTERRUPT_EXPIRED") || !strings.Contains(got.body, "No longer waiting") {
		t.Errorf("late decision = %d %s", got.status, got.body)
	}
}

func TestApprovalToolsAreChecked(t *testing.T) {
	f := newApprovalFixture(t)
	for _, tc := range []struct {
		name  string
		extra map[string]any
		user  bool
		code  string
	}{
		{"unknown tool", map[string]any{"approvalTools": []string{"launch_rocket"}}, true, "INVALID_APPROVAL_TOOLS"},
		{"not an array", map[string]any{"approvalTools": "send_email"}, true, "INVALID_APPROVAL_TOOLS"},
		{"without a user", map[string]any{"approvalTools": []string{"send_email"}}, false, "INVALID_APPROVAL_TOOLS"},
		{"absurd timeout", map[string]any{"approvalTools": []string{"send_email"}, "approvalTimeoutSeconds": 1e9}, true, "INVALID_APPROVAL_TIMEOUT"},
		{"fractional timeout", map[string]any{"approvalTools": []string{"send_email"}, "approvalTimeoutSeconds": 60.5}, true, "INVALID_APPROVAL_TIMEOUT"},
	} {
		body := f.body(map[string]any{"tools": sendEmailTool})
		for k, v := range tc.extra {
			body[k] = v
		}
		headers := withHeaders(jsonHeaders, nil)
		if tc.user {
			headers["X-User-Id"] = testUserID
		} else {
			body["pushSubscription"] = f.phone
		}
		got := post(f.s, "/api/v1/instant", jsonBody(t, body), headers)
		if got.status != http.StatusBadRequest || !strings.Contains(got.body, tc.code) {
			t.Errorf("%s: %d %s", tc.name, got.status, got.body)
		}
	}
	if n := len(f.llm.Requests()); n != 0 {
		t.Errorf("the model was called %d times for refused requests", n)
	}
}

// Two instances on one PostgreSQL database: the loop starts on one, the
// decision reaches the other, which resumes it.
func TestDecisionAtTheOtherInstance(t *testing.T) {
	url := storetest.DatabaseURL(t)
	llmServer := llmtest.NewServer(t)
	var fixtures [2]*instantFixture
	for i := range fixtures {
		st := storetest.Open(t, store.Config{DatabaseURL: url})
		deliveries, fake := newTestCourier(t, st, courier.PolicyUpstream)
		agent := loop.NewAgent(loop.AgentConfig{Client: llm.NewClient(llm.Config{Policy: llm.URLPolicy{AllowPrivate: true}}),
			Transcripts: loop.NewTranscripts(st, nil), Logger: testLogger(t), Instance: []string{"a", "b"}[i]})
		s := newTestServer(t, Config{AllowPrivateEndpoints: true, LLMPolicy: llm.URLPolicy{AllowPrivate: true}},
			Deps{Store: st, Courier: deliveries, Instant: &Instant{Agent: agent,
				Interrupts: scheduler.NewInterrupts(agent, deliveries, scheduler.InterruptsConfig{Logger: testLogger(t)})}})
		t.Cleanup(s.deps.Instant.Interrupts.Wait)
		fixtures[i] = &instantFixture{s: s, store: st, llm: llmServer, push: fake}
	}
	a, b := fixtures[0], fixtures[1]
	f := &approvalFixture{instantFixture: a}
	f.phone = f.addDevice(t, a)
	ap := f.start(t, nil)

	llmServer.Enqueue(afterApprovalReply)
	f.instantFixture = b
	got := f.decide(map[string]any{"decision": "approve", "token": ap.Interrupt.DecisionToken}, ap.Interrupt.ID)
	if got.status != http.StatusOK {
		t.Fatalf("decision at b = %d %s", got.status, got.body)
	}
	if result, _ := llmServer.WaitRequests(2)[1].ToolResult("call_mail"); result != `{"approved":true}` {
		t.Errorf("tool result = %s", result)
	}
	b.s.deps.Instant.Interrupts.Wait()
	if got := f.decide(map[string]any{"decision": "approve", "token": ap.Interrupt.DecisionToken}, ap.Interrupt.ID); got.status != http.StatusConflict {
		t.Errorf("second decision at b = %d", got.status)
	}
	f.instantFixture = a
	if got := f.decide(map[string]any{"decision": "deny", "token": ap.Interrupt.DecisionToken}, ap.Interrupt.ID); got.status != http.StatusConflict {
		t.Errorf("second decision at a = %d", got.status)
	}
}

func FuzzDecodeDecision(f *testing.F) {
	for _, seed := range []string{
		`{"decision":"approve","token":"abc"}`,
		`{"decision":"deny","token":"abc","reason":"no","endpoint":"https://push.example/x"}`,
		`{"decision":"deny","token":"abc","reason":null}`,
		`{"decision":1,"token":"abc"}`,
		`{"decision":"approve","token":""}`,
		`[]`, `null`, `"x"`, `{`, ``, `{"token":{"a":1}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := decodeDecision(body)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Status != http.StatusBadRequest {
				t.Fatalf("decodeDecision(%q) = %v, want a 400 *Error", body, err)
			}
			return
		}
		if (d.Decision != "approve" && d.Decision != "deny") || d.Token == "" || len(d.Token) > maxDecisionToken ||
			len(d.Endpoint) > maxDecisionEndpoint || (d.Reason != "" && d.Decision != "deny") {
			t.Fatalf("decodeDecision(%q) accepted %+v", body, d)
		}
	})
}

// A round that calls an approval tool and a browser tool resumes once both
// are answered: a /continue while the approval waits is refused, and the
// last of the decision and the browser's results resumes it with both.
func TestApprovalBesideABrowserTool(t *testing.T) {
	f := newApprovalFixture(t)
	f.llm.Enqueue(llmtest.Reply{ToolCalls: []llmtest.ToolCall{
		{ID: "call_mail", Name: "send_email", Arguments: `{"to":"boss@example.com"}`},
		{ID: "call_time", Name: "get_time", Arguments: `{}`}}})
	req := encryptedRequest(t, http.MethodPost, "/api/v1/instant", testUserID,
		f.body(map[string]any{"tools": sendEmailTool, "approvalTools": []string{"send_email"}, "sessionId": "sess_both"}))
	req.Header.Set("Accept", "application/json")
	if got := serve(f.s, req); got.status != http.StatusOK || !strings.Contains(got.body, `"messagesSent":2`) {
		t.Fatalf("/instant = %d %s", got.status, got.body)
	}
	var ap approvalPush
	var browserCalls []json.RawMessage
	for _, m := range f.messagesTo(t, f.phone, 2) {
		var p approvalPush
		_ = json.Unmarshal(m.Plaintext, &p)
		if p.Interrupt.ID != "" {
			ap = p
		} else {
			browserCalls = p.ToolCalls
		}
	}
	if ap.Interrupt.ToolCallID != "call_mail" || len(browserCalls) != 1 || !strings.Contains(string(browserCalls[0]), "call_time") {
		t.Fatalf("approval %+v, browser calls %s", ap, browserCalls)
	}
	cont := func() response {
		req := encryptedRequest(t, http.MethodPost, "/api/v1/continue", testUserID, map[string]any{
			"sessionId": "sess_both", "contactName": "Rei", "apiUrl": f.llm.APIURL(), "apiKey": "sk-test", "primaryModel": "m",
			"messages": []any{map[string]any{"role": "tool", "tool_call_id": "call_time", "content": "12:00"}}})
		req.Header.Set("Accept", "application/json")
		return serve(f.s, req)
	}
	if got := cont(); got.status != http.StatusConflict || !strings.Contains(got.body, "waits for the person") {
		t.Fatalf("/continue before the decision = %d %s", got.status, got.body)
	}
	got := f.decide(map[string]any{"decision": "approve", "token": ap.Interrupt.DecisionToken}, ap.Interrupt.ID)
	if got.status != http.StatusOK {
		t.Fatalf("decision = %d %s", got.status, got.body)
	}
	f.s.deps.Instant.Interrupts.Wait()
	if n := len(f.llm.Requests()); n != 1 {
		t.Fatalf("the loop resumed without the browser's result (%d model calls)", n)
	}
	f.llm.Enqueue(afterApprovalReply)
	if got := cont(); got.status != http.StatusOK || !strings.Contains(got.body, `"status":"finished"`) {
		t.Fatalf("/continue after the decision = %d %s", got.status, got.body)
	}
	last := f.llm.Requests()[1]
	mail, _ := last.ToolResult("call_mail")
	clock, _ := last.ToolResult("call_time")
	if mail != `{"approved":true}` || clock != "12:00" {
		t.Errorf("the model got mail %q and time %q", mail, clock)
	}
}

// Shutdown waits for a loop resumed after an approval: Stop returns once
// the resumed round has answered, its answer delivered.
func TestShutdownWaitsForAResumedRound(t *testing.T) {
	f := newApprovalFixture(t)
	ap := f.start(t, nil)
	answer := f.llm.Stream()
	if got := f.decide(map[string]any{"decision": "approve", "token": ap.Interrupt.DecisionToken}, ap.Interrupt.ID); got.status != http.StatusOK {
		t.Fatalf("decision = %d %s", got.status, got.body)
	}
	f.llm.WaitRequests(2) // the resumed round is at the model
	stopped := make(chan error, 1)
	go func() { stopped <- f.s.deps.Instant.Interrupts.Stop(t.Context()) }()
	answer.Content("Done, the mail is out.")
	answer.Done()
	if err := <-stopped; err != nil {
		t.Fatalf("Stop = %v", err)
	}
	f.wantAnswer(t, 4, "Done, the mail is out.")
}

// A shutdown that cannot wait interrupts a resumed round: Stop returns
// once the round has returned, which recorded its failure in the
// transcript.
func TestShutdownInterruptsAResumedRound(t *testing.T) {
	f := newApprovalFixture(t)
	ap := f.start(t, nil)
	f.llm.Stream() // a model that never answers
	if got := f.decide(map[string]any{"decision": "approve", "token": ap.Interrupt.DecisionToken}, ap.Interrupt.ID); got.status != http.StatusOK {
		t.Fatalf("decision = %d %s", got.status, got.body)
	}
	f.llm.WaitRequests(2)
	gone, cancel := context.WithCancel(t.Context())
	cancel()
	if err := f.s.deps.Instant.Interrupts.Stop(gone); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stop = %v, want the context's error", err)
	}
	if types := f.transcriptTypes(t); types != "input tool-calls interrupt decision tool-results error" {
		t.Errorf("transcript = %v, want the interrupted round's error last", types)
	}
}

// Started with the scheduler, Interrupts settles the approvals that expired
// while no instance ran at its first sweep, and Stop ends the sweep once
// the loop it resumed has answered.
func TestStartSettlesExpiredApprovalsUntilStop(t *testing.T) {
	f := newApprovalFixture(t)
	f.start(t, map[string]any{"approvalTimeoutSeconds": 60})
	f.llm.Enqueue(afterApprovalReply)
	f.clock.Add(time.Minute)
	interrupts := f.s.deps.Instant.Interrupts
	interrupts.Start()
	if result, _ := f.llm.WaitRequests(2)[1].ToolResult("call_mail"); result != `{"approved":false,"expired":true}` {
		t.Errorf("tool result = %s", result)
	}
	if err := interrupts.Stop(t.Context()); err != nil {
		t.Fatalf("Stop = %v", err)
	}
	if types := f.transcriptTypes(t); types != "input tool-calls interrupt decision tool-results reply" {
		t.Errorf("transcript when Stop returned = %v", types)
	}
}

// An approval settled while amsg stops is not followed by the stopping
// instance; the sweep of the instance that runs next resumes its loop once
// RecoverAfter has passed, and only once.
func TestApprovalSettledDuringShutdownResumesAfterRestart(t *testing.T) {
	f := newApprovalFixture(t)
	ap := f.start(t, nil)
	stopping := f.s.deps.Instant.Interrupts
	if err := stopping.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := f.decide(map[string]any{"decision": "approve", "token": ap.Interrupt.DecisionToken}, ap.Interrupt.ID); got.status != http.StatusOK {
		t.Fatalf("decision = %d %s", got.status, got.body)
	}
	if types := f.transcriptTypes(t); types != "input tool-calls interrupt decision" {
		t.Fatalf("transcript while stopped = %v", types)
	}

	restarted := scheduler.NewInterrupts(f.s.deps.Instant.Agent, f.s.deps.Courier, scheduler.InterruptsConfig{Logger: testLogger(t)})
	if n, err := restarted.Recover(t.Context()); err != nil || n != 0 {
		t.Fatalf("Recover before RecoverAfter = %d, %v; want 0: the settling instance may still follow it", n, err)
	}
	f.clock.Add(scheduler.DefaultRecoverAfter)
	f.llm.Enqueue(afterApprovalReply)
	if n, err := restarted.Recover(t.Context()); err != nil || n != 1 {
		t.Fatalf("Recover = %d, %v; want the one round", n, err)
	}
	restarted.Wait()
	if result, _ := f.llm.WaitRequests(2)[1].ToolResult("call_mail"); result != `{"approved":true}` {
		t.Errorf("tool result = %s", result)
	}
	f.wantAnswer(t, 3, "Done, the mail is out.")
	if types := f.transcriptTypes(t); types != "input tool-calls interrupt decision tool-results reply" {
		t.Errorf("transcript = %v", types)
	}
	if n, err := restarted.Recover(t.Context()); err != nil || n != 0 {
		t.Errorf("Recover after the round was followed = %d, %v; want 0", n, err)
	}
	if got := len(f.llm.Requests()); got != 2 {
		t.Errorf("the model was asked %d times, want 2", got)
	}
}

// Instances whose sweeps find the same unfollowed approval at once run its
// round once: the transcript's fenced append lets one resume it.
func TestRecoveredApprovalRunsOnceAcrossInstances(t *testing.T) {
	f := newApprovalFixture(t)
	ap := f.start(t, nil)
	if err := f.s.deps.Instant.Interrupts.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := f.decide(map[string]any{"decision": "deny", "reason": "not today", "token": ap.Interrupt.DecisionToken}, ap.Interrupt.ID); got.status != http.StatusOK {
		t.Fatalf("decision = %d %s", got.status, got.body)
	}
	f.clock.Add(scheduler.DefaultRecoverAfter)
	f.llm.Enqueue(llmtest.Reply{Content: "Fine, I will not send it."})
	instances := make([]*scheduler.Interrupts, 3)
	var wg sync.WaitGroup
	for i := range instances {
		instances[i] = scheduler.NewInterrupts(f.s.deps.Instant.Agent, f.s.deps.Courier, scheduler.InterruptsConfig{Logger: testLogger(t)})
		wg.Go(func() {
			if _, err := instances[i].Recover(t.Context()); err != nil {
				t.Errorf("Recover: %v", err)
			}
		})
	}
	wg.Wait()
	for _, in := range instances {
		in.Wait()
	}
	if got := len(f.llm.Requests()); got != 2 {
		t.Errorf("the model was asked %d times, want 2: the round ran once", got)
	}
	if result, _ := f.llm.WaitRequests(2)[1].ToolResult("call_mail"); result != `{"approved":false,"reason":"not today"}` {
		t.Errorf("tool result = %s", result)
	}
	if types := f.transcriptTypes(t); types != "input tool-calls interrupt decision tool-results reply" {
		t.Errorf("transcript = %v", types)
	}
}
