package api

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"amsg/llm"
	"amsg/llm/llmtest"
	"amsg/loop"
	"amsg/push"
	"amsg/push/courier"
	"amsg/scheduler"
	"amsg/store"
	"amsg/store/storetest"
	"amsg/store/usercrypt"

	"github.com/prometheus/client_golang/prometheus"
)

// openAPIServer has every route: tasks with a scheduler, the instant path
// with a fake LLM, metrics, the operator API; pushes go to a fake push
// service, stamped with their receipt tokens.
type openAPIServer struct {
	*instantFixture
}

func newOpenAPIServer(t *testing.T, cfg Config) openAPIServer {
	t.Helper()
	st := storetest.New(t)
	deliveries, fake := newTestCourierWith(t, st, courier.Config{Policy: courier.PolicyUpstream, Receipts: st.ReceiptSigner()})
	sched, err := scheduler.New(scheduler.Config{Logger: testLogger(t)},
		scheduler.Deps{Store: st, Courier: deliveries, LLM: llm.NewClient(llm.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sched.Stop(t.Context()) })
	cfg.AdminToken, cfg.AllowPrivateEndpoints, cfg.LLMPolicy = "t", true, llm.URLPolicy{AllowPrivate: true}
	agent := loop.NewAgent(loop.AgentConfig{Client: llm.NewClient(llm.Config{Policy: llm.URLPolicy{AllowPrivate: true}}),
		Transcripts: loop.NewTranscripts(st, nil), Logger: testLogger(t)})
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	s := newTestServer(t, cfg, Deps{Store: st, Courier: deliveries, Scheduler: sched, Metrics: prometheus.NewRegistry(),
		ServiceWorker: page, AdminPage: page, Instant: &Instant{Agent: agent, KeepAlive: time.Hour,
			Interrupts: scheduler.NewInterrupts(agent, deliveries, scheduler.InterruptsConfig{Logger: testLogger(t)})}})
	t.Cleanup(s.deps.Instant.Interrupts.Wait)
	return openAPIServer{&instantFixture{s: s, store: st, llm: llmtest.NewServer(t), push: fake}}
}

// exchange is one request and the status it must get.
type exchange struct {
	method, path string
	header       map[string]string
	body         string
	// plaintext is what an encrypted body seals, checked against the
	// operation's x-amsg-plaintext.
	plaintext string
	status    int
}

// answerCheck validates real answers against the served document and
// remembers which operations it saw succeed and fail.
type answerCheck struct {
	t    *testing.T
	doc  schemaChecker
	seen map[string]*[2]bool // "GET /api/v1/…": {a success, an error}
}

// serve sends x to s, checks the answer, and returns it.
func (a *answerCheck) serve(s *Server, x exchange) response {
	a.t.Helper()
	resp := serve(s, newRequest(x.method, x.path, x.body, x.header))
	if resp.status != x.status {
		a.t.Errorf("%s %s = %d, want %d: %s", x.method, x.path, resp.status, x.status, resp.body)
		return resp
	}
	a.check(s, x, resp)
	return resp
}

func (a *answerCheck) check(s *Server, x exchange, resp response) {
	a.t.Helper()
	template := a.template(x.path)
	name := x.method + " " + template
	op, ok := a.doc.doc["paths"].(map[string]any)[template].(map[string]any)[strings.ToLower(x.method)].(map[string]any)
	if !ok {
		a.t.Errorf("%s: not in the document", name)
		return
	}
	seen := a.seen[name]
	if seen == nil {
		seen = new([2]bool)
		a.seen[name] = seen
	}
	seen[btoi(resp.status >= 400)] = true
	if resp.status < 400 && x.body != "" {
		a.checkRequest(name, op, x)
	}
	responses := op["responses"].(map[string]any)
	answer, ok := responses[fmt.Sprint(resp.status)].(map[string]any)
	if !ok && resp.status >= 400 {
		answer, ok = responses["default"].(map[string]any)
	}
	if !ok {
		a.t.Errorf("%s: the document has no %d answer", name, resp.status)
		return
	}
	media, _, _ := strings.Cut(resp.header.Get("Content-Type"), ";")
	contents, _ := a.doc.resolve(answer)["content"].(map[string]any)
	content, ok := contents[media].(map[string]any)
	if !ok {
		a.t.Errorf("%s: the %d answer has no %s content", name, resp.status, media)
		return
	}
	switch media {
	case "text/event-stream":
		a.checkEvents(name, content, resp.body)
		return
	case "text/plain", "application/x-ndjson":
		return // a string, as the document says
	}
	schema := content["schema"].(map[string]any)
	var body any
	if err := json.Unmarshal([]byte(resp.body), &body); err != nil {
		a.t.Errorf("%s: %v", name, err)
		return
	}
	if msg := a.doc.check(schema, body, "body"); msg != "" {
		a.t.Errorf("%s %d: %s\n%s", name, resp.status, msg, resp.body)
	}
	if envelope, ok := body.(map[string]any)["error"].(map[string]any); ok {
		a.checkErrorCode(name, op, resp.status, envelope["code"])
	}
	// An encrypted answer's plaintext against the operation's
	// x-amsg-plaintext.
	if plain, ok := schema["x-amsg-plaintext"].(map[string]any); ok {
		var env struct{ Data usercrypt.Envelope }
		_ = json.Unmarshal([]byte(resp.body), &env)
		opened, err := s.deps.Store.Keyring().UserKey(testUserID).Open(env.Data)
		var data any
		if err == nil {
			err = json.Unmarshal(opened, &data)
		}
		if err != nil {
			a.t.Errorf("%s: %v", name, err)
			return
		}
		if msg := a.doc.check(plain, data, "plaintext"); msg != "" {
			a.t.Errorf("%s %d: %s\n%s", name, resp.status, msg, opened)
		}
	}
}

// template is the document's path that path, with its query and
// parameters, is an instance of.
func (a *answerCheck) template(path string) string {
	path, _, _ = strings.Cut(path, "?")
	paths := a.doc.doc["paths"].(map[string]any)
	if _, ok := paths[path]; ok {
		return path
	}
	segments := strings.Split(path, "/")
	for template := range paths {
		if parts := strings.Split(template, "/"); len(parts) == len(segments) && instanceOf(segments, parts) {
			return template
		}
	}
	return path
}

func instanceOf(segments, parts []string) bool {
	for i, p := range parts {
		if p != segments[i] && !strings.HasPrefix(p, "{") {
			return false
		}
	}
	return true
}

// checkRequest holds a request the server took to the operation's
// request schema: an encrypted one's plaintext to x-amsg-plaintext.
func (a *answerCheck) checkRequest(name string, op map[string]any, x exchange) {
	a.t.Helper()
	schema := a.doc.resolve(op["requestBody"].(map[string]any))["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
	body := x.body
	if x.plaintext != "" {
		body = x.plaintext
		alternatives, _ := schema["oneOf"].([]any)
		for _, alt := range append(alternatives, schema) {
			if plain, ok := alt.(map[string]any)["x-amsg-plaintext"].(map[string]any); ok {
				schema = plain
			}
		}
	}
	var v any
	_ = json.Unmarshal([]byte(body), &v)
	if msg := a.doc.check(schema, v, "request"); msg != "" {
		a.t.Errorf("%s: the request the server took: %s", name, msg)
	}
}

// checkErrorCode holds an error answer's code to the operation's
// x-error-codes for its status, or the document's common ones.
func (a *answerCheck) checkErrorCode(name string, op map[string]any, status int, code any) {
	a.t.Helper()
	listed := documentedCodes(op["x-error-codes"])
	maps.Copy(listed, documentedCodes(a.doc.doc["x-amsg-common-error-codes"]))
	if !listed[fmt.Sprintf("%d %v", status, code)] {
		a.t.Errorf("%s answered %d %v, which its x-error-codes %v lack", name, status, code, op["x-error-codes"])
	}
}

// checkEvents validates each frame of an event stream against the
// operation's x-amsg-events; the stream must end with done or error.
func (a *answerCheck) checkEvents(name string, content map[string]any, stream string) {
	a.t.Helper()
	events := content["x-amsg-events"].(map[string]any)
	r := sseReader{bufio.NewReader(strings.NewReader(stream))}
	var last string
	for {
		f, err := r.next()
		if err != nil {
			break
		}
		if f.event == ":" {
			continue
		}
		last = f.event
		event, ok := events[f.event].(map[string]any)
		if !ok {
			a.t.Errorf("%s: event %q is not in x-amsg-events", name, f.event)
			continue
		}
		var data any
		if err := json.Unmarshal([]byte(f.data), &data); err != nil {
			a.t.Errorf("%s: event %s: %v", name, f.event, err)
			continue
		}
		if msg := a.doc.check(event["schema"].(map[string]any), data, "event "+f.event); msg != "" {
			a.t.Errorf("%s: %s\n%s", name, msg, f.data)
		}
	}
	if last != "done" && last != "error" {
		a.t.Errorf("%s: the stream ended with %q:\n%s", name, last, stream)
	}
}

// eventData is the data of the stream's events named event.
func eventData(t *testing.T, stream, event string) []string {
	t.Helper()
	r := sseReader{bufio.NewReader(strings.NewReader(stream))}
	var out []string
	for {
		f, err := r.next()
		if err != nil {
			return out
		}
		if f.event == event {
			out = append(out, f.data)
		}
	}
}

// TestOpenAPISchemasMatchRealAnswers serves every documented operation at
// least once with success and once with an error, and holds each answer to
// the document: its status is documented, its body matches the schema for
// that status (closed objects refuse members they do not list), an
// encrypted answer's plaintext and every server-sent event's data match
// theirs, and an error's code is in the operation's x-error-codes.
func TestOpenAPISchemasMatchRealAnswers(t *testing.T) {
	f := newOpenAPIServer(t, Config{})
	s := f.s
	a := &answerCheck{t: t, doc: servedDocument(t, s), seen: map[string]*[2]bool{}}
	ctx := t.Context()
	if _, err := s.deps.Store.PutSubscription(ctx, testUserID, json.RawMessage(`{"endpoint":"https://fcm.googleapis.com/fcm/send/x","keys":{"p256dh":"BNc","auth":"tBH"}}`), time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.deps.Store.RecordDeliveries(ctx, push.Bookkeeping{Attempts: []push.Attempt{{At: time.Now(), MessageID: "m1", UserID: testUserID,
		DeviceID: 1, PushHost: "fcm.googleapis.com", Try: 1, Status: 400, Outcome: push.OutcomeUnknownSubscription, Error: "400"}}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.deps.Store.InsertTask(ctx, store.NewTask{UserID: testUserID, UUID: "00000000-0000-4000-8000-000000000001",
		MessageType: push.TypeFixed, NextSendAt: time.Now().Add(time.Hour), Payload: json.RawMessage(`{"contactName":"Rei","userMessage":"walk"}`)}); err != nil {
		t.Fatal(err)
	}
	for _, x := range standardExchanges(t, f.push.Subscribe()) {
		a.serve(s, x)
	}
	checkInstantAnswers(t, a, f)
	checkCloudDataAnswers(t, a, s)
	checkMessageEventAnswers(t, a, f)
	checkWebhookAnswers(t, a, s)
	checkAdminAnswers(t, a, s)
	checkErrorAnswers(t, a, s)

	// What reached the push service is the document's Push too.
	pushes := f.push.Pushes()
	if len(pushes) < 5 {
		t.Errorf("only %d pushes reached the push service", len(pushes))
	}
	for _, p := range pushes {
		var v any
		if err := json.Unmarshal(p.JSON, &v); err != nil {
			t.Fatal(err)
		}
		if msg := a.doc.check(map[string]any{"$ref": "#/components/schemas/Push"}, v, "push"); msg != "" {
			t.Errorf("%s\n%s", msg, p.JSON)
		}
	}

	// Every operation answered both ways, but the document itself, which
	// has no error to give.
	for path, ops := range a.doc.doc["paths"].(map[string]any) {
		for method := range ops.(map[string]any) {
			name := strings.ToUpper(method) + " " + path
			seen := a.seen[name]
			switch {
			case seen == nil || !seen[0]:
				t.Errorf("%s: no success answer checked", name)
			case !seen[1] && name != "GET /api/v1/openapi.json":
				t.Errorf("%s: no error answer checked", name)
			}
		}
	}
}

// sealed is an encrypted exchange of plaintext.
func sealed(t *testing.T, method, path, plaintext string, status int) exchange {
	t.Helper()
	return exchange{method: method, path: path, header: encryptedHeaders(testUserID),
		body: browserEncryptRaw(t, browserUserKey(testUserID), plaintext), plaintext: plaintext, status: status}
}

// standardExchanges are the routes a request alone can exercise.
func standardExchanges(t *testing.T, device push.Subscription) []exchange {
	user := map[string]string{"X-User-Id": testUserID}
	admin := map[string]string{"Authorization": "Bearer t"}
	subscription := `{"subscription":` + jsonBody(t, device) + `}`
	fixed := `{"contactName":"Rei","messageType":"fixed","userMessage":"walk","firstSendTime":"` + push.FormatTimestamp(time.Now().Add(time.Hour)) + `","recurrenceType":"none"}`
	// Quiet hours that begin two hours from now, so the sends checked after
	// them are not held back, whatever the time of day the test runs.
	tokyo := time.Now().In(time.FixedZone("JST", 9*3600))
	quiet := `{"timeZone":"Asia/Tokyo","quietHours":{"start":"` + tokyo.Add(2*time.Hour).Format("15:04") + `","end":"` +
		tokyo.Add(3*time.Hour).Format("15:04") + `"},"dailyLimit":20}`
	return []exchange{
		sealed(t, http.MethodPut, "/api/v1/push-subscription", subscription, 200),
		sealed(t, http.MethodPost, "/api/v1/schedule-message", fixed, 201),
		sealed(t, http.MethodPost, "/api/v1/schedule-message", `{"contactName":"Rei","messageType":"fixed"}`, 400),
		sealed(t, http.MethodPost, "/api/v1/outbox/ack", `{"messageIds":["m-none"]}`, 200),
		sealed(t, http.MethodDelete, "/api/v1/outbox", `{"messageIds":["m-none"]}`, 200),
		sealed(t, http.MethodPut, "/api/v1/client-state", `{"entries":[{"namespace":"app","key":"k","value":"v","updatedAt":1}]}`, 200),
		sealed(t, http.MethodPut, "/api/v1/update-message?id=00000000-0000-4000-8000-000000000001", `{"userMessage":"run"}`, 200),
		sealed(t, http.MethodPut, "/api/v1/preferences", quiet, 200),
		sealed(t, http.MethodPut, "/api/v1/preferences", `{"timeZone":"Mars/Olympus"}`, 400),
		sealed(t, http.MethodPut, "/api/v1/llm-credentials", `{"credentials":[{"credId":"main","value":{"apiUrl":"https://llm.example.net/v1/chat/completions","apiKey":"sk-1","primaryModel":"m"}}]}`, 200),
		sealed(t, http.MethodPut, "/api/v1/llm-credentials", `{"credentials":[]}`, 400),
		sealed(t, http.MethodDelete, "/api/v1/llm-credentials", `{"credIds":["main"]}`, 200),
		sealed(t, http.MethodDelete, "/api/v1/llm-credentials", `{"all":true,"credIds":["main"]}`, 400),
		{method: http.MethodGet, path: "/api/v1/llm-credentials", header: user, status: 200},
		{method: http.MethodGet, path: "/api/v1/vapid-public-key", status: 200},
		{method: http.MethodGet, path: "/api/v1/capabilities", status: 200},
		{method: http.MethodGet, path: "/api/v1/openapi.json", status: 200},
		{method: http.MethodGet, path: "/healthz", status: 200},
		{method: http.MethodGet, path: "/metrics", status: 200},
		{method: http.MethodGet, path: "/api/v1/get-user-key", header: user, status: 200},
		{method: http.MethodGet, path: "/api/v1/get-user-key", header: map[string]string{"X-User-Id": "not-a-uuid"}, status: 400},
		{method: http.MethodGet, path: "/api/v1/push-subscription", header: user, status: 200},
		{method: http.MethodGet, path: "/api/v1/devices", header: user, status: 200},
		{method: http.MethodPost, path: "/api/v1/device-seen", header: user, body: `{"endpoint":"` + device.Endpoint + `"}`, status: 200},
		{method: http.MethodPost, path: "/api/v1/device-seen", header: user, body: `{"endpoint":"http://127.0.0.1:9/push/none"}`, status: 404},
		{method: http.MethodDelete, path: "/api/v1/devices?deviceId=999", header: user, status: 200},
		{method: http.MethodDelete, path: "/api/v1/client-state?namespace=app", header: user, status: 200},
		{method: http.MethodDelete, path: "/api/v1/push-subscription?endpoint=https://fcm.googleapis.com/fcm/send/none", header: user, status: 200},
		{method: http.MethodGet, path: "/api/v1/messages", header: user, status: 200},
		{method: http.MethodGet, path: "/api/v1/message?id=00000000-0000-4000-8000-000000000001", header: user, status: 200},
		{method: http.MethodGet, path: "/api/v1/message?id=00000000-0000-4000-8000-000000000009", header: user, status: 404},
		{method: http.MethodPost, path: "/api/v1/init-tenant", status: 200},
		{method: http.MethodPost, path: "/api/v1/send-notifications", status: 200},
		{method: http.MethodGet, path: "/api/v1/outbox", header: user, status: 200},
		{method: http.MethodGet, path: "/api/v1/client-state/namespaces", header: user, status: 200},
		{method: http.MethodGet, path: "/api/v1/preferences", header: user, status: 200},
		{method: http.MethodGet, path: "/api/v1/interrupts", header: user, status: 200},
		{method: http.MethodGet, path: "/api/v1/client-state?namespace=app", header: user, status: 200},
		{method: http.MethodPost, path: "/api/v1/test-push", header: user, status: 200},
		{method: http.MethodDelete, path: "/api/v1/cancel-message?id=00000000-0000-4000-8000-000000000001", header: user, status: 200},
		{method: http.MethodDelete, path: "/api/v1/cancel-message?id=00000000-0000-4000-8000-000000000001", header: user, status: 404},
		{method: http.MethodGet, path: "/api/v1/admin/users", header: admin, status: 200},
		{method: http.MethodGet, path: "/api/v1/admin/users/" + testUserID + "/devices", header: admin, status: 200},
		{method: http.MethodGet, path: "/api/v1/admin/deliveries/failed", header: admin, status: 200},
		{method: http.MethodGet, path: "/api/v1/admin/tasks", header: admin, status: 200},
		{method: http.MethodGet, path: "/api/v1/admin/deliveries/per-minute", header: admin, status: 200},
		{method: http.MethodPost, path: "/api/v1/admin/send", header: admin, body: `{"userId":"` + testUserID + `","message":"hi"}`, status: 200},
		{method: http.MethodPost, path: "/api/v1/admin/send", header: admin, body: `{"userId":"` + testUserID + `"}`, status: 400},
	}
}

// checkInstantAnswers runs a tool round over JSON, its /continue over
// server-sent events, reads the session, then an approval over events and
// its decision.
func checkInstantAnswers(t *testing.T, a *answerCheck, f openAPIServer) {
	s := f.s
	body := func(extra map[string]any) string {
		return jsonBody(t, f.body(extra))
	}
	instant := func(plaintext string, accept string, status int) response {
		x := sealed(t, http.MethodPost, "/api/v1/instant", plaintext, status)
		if accept != "" {
			x.header["Accept"] = accept
		}
		return a.serve(s, x)
	}
	f.llm.Enqueue(toolReply, answerReply)
	instant(body(map[string]any{"tools": getTimeTool, "sessionId": "sess_api"}), "application/json", 200)
	a.serve(s, sealed(t, http.MethodPost, "/api/v1/continue", jsonBody(t, map[string]any{
		"sessionId": "sess_api", "iteration": 1, "contactName": "Rei", "messages": json.RawMessage(toolResult),
		"apiUrl": f.llm.APIURL(), "apiKey": "sk-test", "primaryModel": "m"}), 200))
	a.serve(s, sealed(t, http.MethodPost, "/api/v1/continue", `{"sessionId":"sess_none","messages":[]}`, 400))
	a.serve(s, exchange{method: http.MethodGet, path: "/api/v1/sessions/sess_api",
		header: map[string]string{"X-User-Id": testUserID}, status: 200})
	a.serve(s, exchange{method: http.MethodGet, path: "/api/v1/sessions/sess_api",
		header: map[string]string{"X-User-Id": testUserID, "Accept": loop.TimbalContentType}, status: 200})
	a.serve(s, exchange{method: http.MethodGet, path: "/api/v1/sessions/sess_none",
		header: map[string]string{"X-User-Id": testUserID}, status: 404})
	instant(body(map[string]any{"contactName": nil}), "application/json", 400)

	// An approval: its push carries the decision token.
	f.llm.Enqueue(approvalReply, afterApprovalReply)
	stream := instant(body(map[string]any{"tools": sendEmailTool, "approvalTools": []string{"send_email"}, "sessionId": "sess_mail"}), "", 200)
	var approval approvalPush
	for _, data := range eventData(t, stream.body, "payload") {
		if err := json.Unmarshal([]byte(data), &approval); err != nil {
			t.Fatal(err)
		}
		if approval.Interrupt.ID != "" {
			break
		}
	}
	if approval.Interrupt.ID == "" {
		t.Fatalf("no approval among the events:\n%s", stream.body)
	}
	decision := func(body string, status int) {
		a.serve(s, exchange{method: http.MethodPost, path: "/api/v1/interrupts/" + approval.Interrupt.ID + "/decision",
			header: map[string]string{"Content-Type": "application/json"}, body: body, status: status})
	}
	decision(`{"decision":"maybe","token":"`+approval.Interrupt.DecisionToken+`"}`, 400)
	decision(`{"decision":"deny","token":"`+approval.Interrupt.DecisionToken+`","reason":"not now"}`, 200)
	s.deps.Instant.Interrupts.Wait()

	// A failed round ends its stream with an error event, and answers
	// JSON with 502.
	f.llm.Enqueue(llmtest.Reply{Status: 500, Body: `{"error":{"message":"boom","code":"server_error"}}`})
	instant(body(nil), "", 200)
	f.llm.Enqueue(llmtest.Reply{Status: 500, Body: `{"error":{"message":"boom","code":"server_error"}}`})
	instant(body(nil), "application/json", 502)
}

// checkCloudDataAnswers lists the user's cloud data, plans and runs a
// cleanup of one resource, and reads and restores an owner.
func checkCloudDataAnswers(t *testing.T, a *answerCheck, s *Server) {
	user := map[string]string{"X-User-Id": testUserID}
	get := func(path string, status int) response {
		return a.serve(s, exchange{method: http.MethodGet, path: path, header: user, status: status})
	}
	open := func(resp response, v any) {
		t.Helper()
		var env struct{ Data usercrypt.Envelope }
		_ = json.Unmarshal([]byte(resp.body), &env)
		plain, err := s.deps.Store.Keyring().UserKey(testUserID).Open(env.Data)
		if err == nil {
			err = json.Unmarshal(plain, v)
		}
		if err != nil {
			t.Fatalf("%v: %s", err, resp.body)
		}
	}
	a.serve(s, sealed(t, http.MethodPut, "/api/v1/client-state",
		`{"entries":[{"namespace":"app","key":"owned","value":"v","updatedAt":2,"owner":{"type":"character","id":"rei","label":"Rei"}}]}`, 200))
	get("/api/v1/cloud-data/summary", 200)
	get("/api/v1/cloud-data/summary?ownerType=character", 400)
	var page struct {
		Resources []struct{ ID, Type string }
	}
	open(get("/api/v1/cloud-data/resources?type=state", 200), &page)
	get("/api/v1/cloud-data/resources?limit=0", 400)
	if len(page.Resources) == 0 {
		t.Fatal("no state resource listed")
	}
	var plan struct{ ID string }
	open(a.serve(s, sealed(t, http.MethodPost, "/api/v1/cloud-data/cleanup-plans",
		`{"mode":"purge","resourceIds":["`+page.Resources[0].ID+`"]}`, 200)), &plan)
	a.serve(s, sealed(t, http.MethodPost, "/api/v1/cloud-data/cleanup-plans", `{"mode":"burn"}`, 400))
	var op struct{ ID string }
	open(a.serve(s, sealed(t, http.MethodPost, "/api/v1/cloud-data/cleanup-operations",
		`{"planId":"`+plan.ID+`","idempotencyKey":"k1"}`, 200)), &op)
	a.serve(s, sealed(t, http.MethodPost, "/api/v1/cloud-data/cleanup-operations", `{"planId":"`+plan.ID+`"}`, 400))
	get("/api/v1/cloud-data/cleanup-operations", 200)
	get("/api/v1/cloud-data/cleanup-operations/"+op.ID, 200)
	get("/api/v1/cloud-data/cleanup-operations/none", 404)
	get("/api/v1/cloud-data/owners", 200)
	get("/api/v1/cloud-data/owner?ownerType=character&ownerId=rei", 200)
	get("/api/v1/cloud-data/owner?ownerType=character", 400)
	a.serve(s, sealed(t, http.MethodPost, "/api/v1/cloud-data/owner", `{"action":"restore","owner":{"type":"character","id":"rei"}}`, 200))
	a.serve(s, sealed(t, http.MethodPost, "/api/v1/cloud-data/owner", `{"action":"retire","owner":{"type":"character","id":"rei"}}`, 400))
}

// checkMessageEventAnswers sends the user a message, reports its push
// clicked with the receipt token the push carried, reads the message's
// timeline as the user and as the operator, and the daily chart.
func checkMessageEventAnswers(t *testing.T, a *answerCheck, f openAPIServer) {
	s := f.s
	user := map[string]string{"X-User-Id": testUserID}
	admin := map[string]string{"Authorization": "Bearer t"}
	before := len(f.push.Pushes())
	resp := a.serve(s, exchange{method: http.MethodPost, path: "/api/v1/admin/send", header: admin,
		body: `{"userId":"` + testUserID + `","message":"hi"}`, status: 200})
	var sent struct{ MessageID string }
	decodeData(t, resp.body, &sent)
	var stamped struct{ MessageID, ReceiptToken string }
	var endpoint string
	for _, p := range f.push.Pushes()[before:] {
		if err := json.Unmarshal(p.JSON, &stamped); err != nil {
			t.Fatal(err)
		}
		endpoint = p.Endpoint
	}
	if stamped.MessageID != sent.MessageID || stamped.ReceiptToken == "" {
		t.Fatalf("the push of %s carried no receipt token: %+v", sent.MessageID, stamped)
	}
	receipts := func(body string, status int) {
		a.serve(s, exchange{method: http.MethodPost, path: "/api/v1/receipts",
			header: map[string]string{"Content-Type": "application/json"}, body: body, status: status})
	}
	receipts(`{"endpoint":"`+endpoint+`","receipts":[{"messageId":"`+sent.MessageID+`","token":"`+stamped.ReceiptToken+`","type":"clicked","action":"reply"}]}`, 200)
	receipts(`{"receipts":[]}`, 400)

	a.serve(s, exchange{method: http.MethodGet, path: "/api/v1/messages/" + sent.MessageID + "/status", header: user, status: 200})
	a.serve(s, exchange{method: http.MethodGet, path: "/api/v1/messages/m-none/status", header: user, status: 404})
	resp = a.serve(s, exchange{method: http.MethodGet, path: "/api/v1/admin/messages/" + sent.MessageID + "/timeline?userId=" + testUserID,
		header: admin, status: 200})
	var timeline struct {
		Status string
		Events []struct {
			Type   string
			Detail struct{ Action string }
		}
	}
	decodeData(t, resp.body, &timeline)
	if timeline.Status != store.EventClicked || timeline.Events[len(timeline.Events)-1].Detail.Action != "reply" {
		t.Errorf("the timeline does not end with the click reported: %s", resp.body)
	}
	a.serve(s, exchange{method: http.MethodGet, path: "/api/v1/admin/messages/m-none/timeline?userId=" + testUserID, header: admin, status: 404})
	a.serve(s, exchange{method: http.MethodGet, path: "/api/v1/admin/messages/per-day", header: admin, status: 200})
	a.serve(s, exchange{method: http.MethodGet, path: "/api/v1/admin/messages/per-day?days=0", header: admin, status: 400})
}

// checkWebhookAnswers registers a webhook endpoint, refuses one at a
// private address, lists them, and deletes the one registered twice.
func checkWebhookAnswers(t *testing.T, a *answerCheck, s *Server) {
	admin := map[string]string{"Authorization": "Bearer t"}
	register := func(body string, status int) response {
		return a.serve(s, exchange{method: http.MethodPost, path: "/api/v1/admin/webhooks", header: admin, body: body, status: status})
	}
	resp := register(`{"url":"https://93.184.215.14/hooks","events":["message.sent","task.failed"],"batch":true}`, 201)
	var hook struct{ WebhookID, Secret string }
	decodeData(t, resp.body, &hook)
	if !strings.HasPrefix(hook.Secret, "whsec_") {
		t.Errorf("the registration's answer has no signing secret: %s", resp.body)
	}
	register(`{"url":"https://127.0.0.1/hooks","events":["message.sent"]}`, 400)
	a.serve(s, exchange{method: http.MethodGet, path: "/api/v1/admin/webhooks", header: admin, status: 200})
	a.serve(s, exchange{method: http.MethodDelete, path: "/api/v1/admin/webhooks/" + hook.WebhookID, header: admin, status: 200})
	a.serve(s, exchange{method: http.MethodDelete, path: "/api/v1/admin/webhooks/" + hook.WebhookID, header: admin, status: 404})
}

// checkAdminAnswers starts a broadcast and reads and resumes it, and
// deletes a user.
func checkAdminAnswers(t *testing.T, a *answerCheck, s *Server) {
	admin := map[string]string{"Authorization": "Bearer t"}
	resp := a.serve(s, exchange{method: http.MethodPost, path: "/api/v1/admin/broadcasts", header: admin,
		body: `{"userIds":["` + testUserID + `"],"message":"hi"}`, status: 202})
	var b struct{ BroadcastID string }
	decodeData(t, resp.body, &b)
	s.deps.Broadcasts.Wait()
	a.serve(s, exchange{method: http.MethodGet, path: "/api/v1/admin/broadcasts", header: admin, status: 200})
	a.serve(s, exchange{method: http.MethodGet, path: "/api/v1/admin/broadcasts/" + b.BroadcastID, header: admin, status: 200})
	a.serve(s, exchange{method: http.MethodGet, path: "/api/v1/admin/broadcasts/none", header: admin, status: 404})
	a.serve(s, exchange{method: http.MethodPost, path: "/api/v1/admin/broadcasts/" + b.BroadcastID + "/resume", header: admin, status: 200})
	a.serve(s, exchange{method: http.MethodDelete, path: "/api/v1/admin/users/" + testUserID, header: admin, status: 200})
}

// checkErrorAnswers fails every operation once: the operator's with a
// wrong token, the user's without X-User-Id, the rest at a server that
// wants a client token; and /healthz once the store is closed.
func checkErrorAnswers(t *testing.T, a *answerCheck, s *Server) {
	guarded := newOpenAPIServer(t, Config{ClientToken: "ct"}).s
	for path, ops := range a.doc.doc["paths"].(map[string]any) {
		target := path
		for _, param := range []string{"{sessionId}", "{broadcastId}", "{userId}", "{interruptId}", "{id}", "{messageId}", "{webhookId}"} {
			target = strings.ReplaceAll(target, param, "none")
		}
		for method, op := range ops.(map[string]any) {
			x := exchange{method: strings.ToUpper(method), path: target}
			at := s
			switch {
			case strings.HasPrefix(path, "/api/v1/admin/"):
				x.header = map[string]string{"Authorization": "Bearer wrong"}
			case hasParameter(op.(map[string]any), "#/components/parameters/UserId"):
			case path == "/healthz" || path == "/api/v1/openapi.json":
				continue
			default:
				at = guarded
			}
			resp := serve(at, newRequest(x.method, x.path, x.body, x.header))
			if resp.status < 400 {
				t.Errorf("%s %s = %d, want an error", x.method, path, resp.status)
				continue
			}
			a.check(at, x, resp)
		}
	}
	if err := guarded.deps.Store.Close(); err != nil {
		t.Fatal(err)
	}
	guarded.now = func() time.Time { return time.Now().Add(healthCacheTTL) }
	a.serve(guarded, exchange{method: http.MethodGet, path: "/healthz", status: 503})
}

func hasParameter(op map[string]any, ref string) bool {
	params, _ := op["parameters"].([]any)
	return slices.ContainsFunc(params, func(p any) bool { return p.(map[string]any)["$ref"] == ref })
}
