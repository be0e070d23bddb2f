package api

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"amsg/llm"
	"amsg/loop"
	"amsg/push"
	"amsg/push/clocktest"
	"amsg/push/courier"
	"amsg/push/pushtest"
	"amsg/scheduler"
	"amsg/store"
	"amsg/store/storetest"
)

var taskEpoch = time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)

// taskEnv is a server with a scheduler, its store and fake push service, on
// a test clock.
type taskEnv struct {
	s     *Server
	st    *store.Store
	fake  *pushtest.Server
	clk   *clocktest.Clock // shared by the store, the scheduler and the server
	sched *scheduler.Scheduler
}

func newTaskEnv(t testing.TB, cfg Config) *taskEnv {
	t.Helper()
	return newTaskEnvOn(t, cfg, "")
}

// newTaskEnvOn is newTaskEnv on the PostgreSQL database databaseURL, or
// SQLite when it is "".
func newTaskEnvOn(t testing.TB, cfg Config, databaseURL string) *taskEnv {
	t.Helper()
	return newTaskEnvWaiting(t, cfg, databaseURL, func(ctx context.Context, _ time.Duration) error { return ctx.Err() })
}

// newTaskEnvWaiting is newTaskEnvOn whose scheduler waits with sleep.
func newTaskEnvWaiting(t testing.TB, cfg Config, databaseURL string, sleep func(context.Context, time.Duration) error) *taskEnv {
	t.Helper()
	e := &taskEnv{clk: clocktest.New(taskEpoch)}
	e.st = storetest.Open(t, store.Config{Now: e.clk.Now, Logger: testLogger(t), DatabaseURL: databaseURL})
	deliveries, fake := newTestCourier(t, e.st, courier.PolicyUpstream)
	e.fake = fake
	var err error
	e.sched, err = scheduler.New(scheduler.Config{Now: e.clk.Now, Logger: testLogger(t), Sleep: sleep},
		scheduler.Deps{Store: e.st, Courier: deliveries, LLM: llm.NewClient(llm.Config{Policy: llm.URLPolicy{AllowPrivate: true}})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.sched.Stop(context.Background()) })
	cfg.Now = e.clk.Now
	e.s = newTestServer(t, cfg, Deps{Store: e.st, Courier: deliveries, Scheduler: e.sched})
	return e
}

// subscribe registers a device of userID at the fake push service.
func (e *taskEnv) subscribe(t testing.TB, userID string) push.Subscription {
	t.Helper()
	sub := e.fake.Subscribe()
	raw, _ := json.Marshal(sub)
	if _, err := e.st.PutSubscription(t.Context(), userID, raw, time.Time{}); err != nil {
		t.Fatal(err)
	}
	return sub
}

func (e *taskEnv) schedule(t testing.TB, userID string, body any) response {
	t.Helper()
	return serve(e.s, encryptedRequest(t, http.MethodPost, "/api/v1/schedule-message", userID, body))
}

func (e *taskEnv) update(t *testing.T, userID, id string, body any) response {
	t.Helper()
	return serve(e.s, encryptedRequest(t, http.MethodPut, "/api/v1/update-message?id="+id, userID, body))
}

// fixedTask is a valid fixed task due in a minute, with overrides.
func fixedTask(overrides map[string]any) map[string]any {
	m := map[string]any{"contactName": "Rei", "messageType": "fixed", "userMessage": "该喝水了",
		"firstSendTime": push.FormatTimestamp(taskEpoch.Add(time.Minute))}
	for k, v := range overrides {
		if v == nil {
			delete(m, k)
			continue
		}
		m[k] = v
	}
	return m
}

// null is a JSON null in a fixedTask override (nil deletes the key).
var null = json.RawMessage("null")

// errorOf returns the error object of an error envelope as compact JSON.
func errorOf(t testing.TB, body string) (code string, details string) {
	t.Helper()
	var env struct {
		Success bool `json:"success"`
		Error   struct {
			Code    string          `json:"code"`
			Details json.RawMessage `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &env); err != nil || env.Success {
		t.Fatalf("not an error envelope: %s", body)
	}
	return env.Error.Code, string(env.Error.Details)
}

// decrypted opens an encrypted read response with the browser's key and
// decodes its plaintext into v.
func decrypted(t *testing.T, userID string, got response, v any) {
	t.Helper()
	plaintext := openResponse(t, userID, got)
	if err := json.Unmarshal([]byte(plaintext), v); err != nil {
		t.Fatalf("%s: %v", plaintext, err)
	}
}

func TestScheduleMessageValidationOrder(t *testing.T) {
	e := newTaskEnv(t, Config{})
	e.subscribe(t, testUserID)
	future := push.FormatTimestamp(taskEpoch.Add(time.Hour))
	llm := map[string]any{"messageType": "prompted", "userMessage": nil, "completePrompt": "hi",
		"apiUrl": "https://llm.example/v1", "apiKey": "k", "primaryModel": "m"}
	with := func(base map[string]any, more map[string]any) map[string]any {
		m := map[string]any{}
		for k, v := range base {
			m[k] = v
		}
		for k, v := range more {
			m[k] = v
		}
		return m
	}
	for _, c := range []struct {
		name    string
		body    map[string]any
		code    string
		details string
	}{
		{"no contactName", fixedTask(map[string]any{"contactName": nil}), "INVALID_PARAMETERS", `{"missingFields":["contactName"]}`},
		{"contactName not a string", fixedTask(map[string]any{"contactName": 5, "messageType": "bogus"}), "INVALID_PARAMETERS", `{"missingFields":["contactName"]}`},
		{"bad messageType", fixedTask(map[string]any{"messageType": "later"}), "INVALID_MESSAGE_TYPE", `{"providedType":"later","allowedTypes":["fixed","prompted","auto","instant"]}`},
		{"no messageType", fixedTask(map[string]any{"messageType": nil}), "INVALID_MESSAGE_TYPE", `{"allowedTypes":["fixed","prompted","auto","instant"]}`},
		{"immediate not boolean", fixedTask(map[string]any{"immediate": "yes", "firstSendTime": "bad"}), "INVALID_PARAMETERS", `{"invalidFields":["immediate"]}`},
		{"immediate null", fixedTask(map[string]any{"immediate": null}), "INVALID_PARAMETERS", `{"invalidFields":["immediate"]}`},
		{"immediate with instant", fixedTask(map[string]any{"immediate": true, "messageType": "instant"}), "INVALID_PARAMETERS", `{"invalidFields":["immediate"]}`},
		{"immediate with a bad time", fixedTask(map[string]any{"immediate": true, "firstSendTime": "soon"}), "INVALID_TIMESTAMP", `{"field":"firstSendTime"}`},
		{"no firstSendTime", fixedTask(map[string]any{"firstSendTime": nil}), "INVALID_TIMESTAMP", `{"field":"firstSendTime"}`},
		{"unparseable firstSendTime", fixedTask(map[string]any{"firstSendTime": "tomorrow"}), "INVALID_TIMESTAMP", `{"field":"firstSendTime"}`},
		{"firstSendTime now", fixedTask(map[string]any{"firstSendTime": push.FormatTimestamp(taskEpoch)}), "INVALID_TIMESTAMP", `{"field":"firstSendTime","reason":"must be in the future"}`},
		{"bad supersedesUuid", fixedTask(map[string]any{"supersedesUuid": "x"}), "INVALID_PARAMETERS", `{"invalidFields":["supersedesUuid"]}`},
		{"supersedes itself", fixedTask(map[string]any{"uuid": "11111111-1111-1111-1111-111111111111", "supersedesUuid": "11111111-1111-1111-1111-111111111111"}), "INVALID_PARAMETERS", `{"invalidFields":["supersedesUuid"]}`},
		{"pushSubscription without endpoint", fixedTask(map[string]any{"pushSubscription": map[string]any{"keys": 1}}), "INVALID_PUSH_SUBSCRIPTION", `{"invalidFields":["pushSubscription"]}`},
		{"bad recurrenceType", fixedTask(map[string]any{"recurrenceType": "monthly"}), "INVALID_PARAMETERS", `{"invalidFields":["recurrenceType"]}`},
		{"bad tzId", fixedTask(map[string]any{"tzId": "Mars/Base"}), "INVALID_PARAMETERS", `{"invalidFields":["tzId"]}`},
		{"cron without cronExpr", fixedTask(map[string]any{"recurrenceType": "cron"}), "INVALID_PARAMETERS", `{"invalidFields":["cronExpr"]}`},
		{"bad cronExpr", fixedTask(map[string]any{"recurrenceType": "cron", "cronExpr": "every day"}), "INVALID_PARAMETERS", `{"invalidFields":["cronExpr"]}`},
		{"cronExpr on a daily task", fixedTask(map[string]any{"recurrenceType": "daily", "cronExpr": "0 9 * * *"}), "INVALID_PARAMETERS", `{"invalidFields":["cronExpr"]}`},
		{"maxTokens zero", fixedTask(map[string]any{"maxTokens": 0}), "INVALID_PARAMETERS", `{"invalidFields":["maxTokens"]}`},
		{"maxTokens fraction", fixedTask(map[string]any{"maxTokens": 1.5}), "INVALID_PARAMETERS", `{"invalidFields":["maxTokens"]}`},
		{"userMessage a number", fixedTask(map[string]any{"userMessage": 5}), "INVALID_PARAMETERS", `{"invalidFields":["userMessage (must be a string)"]}`},
		{"fixed without userMessage", fixedTask(map[string]any{"userMessage": ""}), "INVALID_PARAMETERS", `{"missingFields":["userMessage (required for fixed type)"]}`},
		{"both prompts", fixedTask(map[string]any{"completePrompt": "a", "messages": []any{}}), "INVALID_PARAMETERS", `{"invalidFields":["completePrompt","messages"]}`},
		{"empty messages", fixedTask(map[string]any{"messages": []any{}}), "INVALID_PARAMETERS", `{"invalidFields":["messages"]}`},
		{"prompted without anything", fixedTask(map[string]any{"messageType": "prompted"}), "INVALID_PARAMETERS", `{"missingFields":["completePrompt or messages","apiUrl","apiKey","primaryModel"]}`},
		{"auto without a key", with(fixedTask(llm), map[string]any{"messageType": "auto", "apiKey": ""}), "INVALID_PARAMETERS", `{"missingFields":["apiKey"]}`},
		{"apiUrl not a URL", with(fixedTask(llm), map[string]any{"apiUrl": "not a url"}), "INVALID_PARAMETERS", `{"invalidFields":["apiUrl"]}`},
		{"instant recurring", fixedTask(map[string]any{"messageType": "instant", "recurrenceType": "daily"}), "INVALID_PARAMETERS", `{"invalidFields":["recurrenceType (must be \"none\" for instant type)"]}`},
		{"instant without content", fixedTask(map[string]any{"messageType": "instant", "userMessage": nil}), "INVALID_PARAMETERS", `{"missingFields":["userMessage or ((completePrompt | messages) + apiUrl + apiKey + primaryModel)"]}`},
		{"temperature a string", fixedTask(map[string]any{"temperature": "hot"}), "INVALID_PARAMETERS", `{"invalidFields":["temperature (must be a finite number)"]}`},
		{"bad uuid", fixedTask(map[string]any{"uuid": "abc", "avatarUrl": "data:x"}), "INVALID_PARAMETERS", `{"invalidFields":["uuid (invalid UUID format)"]}`},
		{"messageSubtype a number", fixedTask(map[string]any{"messageSubtype": 1}), "INVALID_PARAMETERS", `{"invalidFields":["messageSubtype"]}`},
		{"bad splitPattern", fixedTask(map[string]any{"splitPattern": "("}), "INVALID_PARAMETERS", `{"invalidFields":["splitPattern"]}`},
		{"llmExtraBody an array", fixedTask(map[string]any{"llmExtraBody": []int{1}}), "INVALID_PARAMETERS", `{"invalidFields":["llmExtraBody"]}`},
		{"metadata a string", fixedTask(map[string]any{"metadata": "x"}), "INVALID_PARAMETERS", `{"invalidFields":["metadata"]}`},
	} {
		got := e.schedule(t, testUserID, c.body)
		code, details := errorOf(t, got.body)
		if got.status != http.StatusBadRequest || code != c.code || details != c.details {
			t.Errorf("%s: %d %s %s, want 400 %s %s", c.name, got.status, code, details, c.code, c.details)
		}
	}
	// What passes: a lenient time, a soft-cleared avatar, and no row for
	// any of the refused requests.
	got := e.schedule(t, testUserID, fixedTask(map[string]any{"firstSendTime": strings.TrimSuffix(future, ".000Z"), "avatarUrl": "data:image/png;base64,AAA"}))
	if got.status != http.StatusCreated {
		t.Fatalf("valid task: %d %s", got.status, got.body)
	}
	if tasks, total, _ := e.st.Tasks(t.Context(), testUserID, "", 100, 0); total != 1 || tasks[0].NextSendAt.Format(time.RFC3339) != strings.TrimSuffix(future, ".000Z")+"Z" {
		t.Errorf("%d tasks stored", total)
	}
}

func TestScheduleMessageCreatesTheStandardsTask(t *testing.T) {
	e := newTaskEnv(t, Config{})
	e.subscribe(t, testUserID)
	body := fixedTask(map[string]any{"uuid": "0f8fad5b-d9cb-469f-a165-70867728950e", "tzId": "asia/tokyo", "recurrenceType": "daily",
		"metadata": map[string]any{"charId": "c1", "amsgClientTaskId": "t1"}, "messageSubtype": "reminder",
		"firstSendTime": "2026-06-01T18:30:00+09:00", "apiKey": "sk-secret"})
	got := e.schedule(t, testUserID, body)
	want := `{"success":true,"data":{"id":1,"uuid":"0f8fad5b-d9cb-469f-a165-70867728950e","contactName":"Rei","nextSendAt":"2026-06-01T09:30:00.000Z","status":"pending","createdAt":"2026-06-01T09:00:00.000Z"}}` + "\n"
	if got.status != http.StatusCreated || got.body != want {
		t.Fatalf("schedule = %d %s\nwant %s", got.status, got.body, want)
	}
	task, err := e.st.Task(t.Context(), testUserID, "0f8fad5b-d9cb-469f-a165-70867728950e")
	if err != nil {
		t.Fatal(err)
	}
	wantPayload := `{"contactName":"Rei","avatarUrl":null,"messageType":"fixed","messageSubtype":"reminder","userMessage":"该喝水了",` +
		`"firstSendTime":"2026-06-01T09:30:00.000Z","recurrenceType":"daily","tzId":"asia/tokyo","apiUrl":null,"apiKey":"sk-secret",` +
		`"primaryModel":null,"completePrompt":null,"messages":null,"maxTokens":null,"temperature":null,"splitPattern":null,` +
		`"llmExtraBody":null,"metadata":{"amsgClientTaskId":"t1","charId":"c1"}}`
	if string(task.Payload) != wantPayload {
		t.Errorf("stored payload\n got %s\nwant %s", task.Payload, wantPayload)
	}

	// The projection never shows credentials.
	var list struct {
		Tasks      []map[string]any `json:"tasks"`
		Pagination map[string]any   `json:"pagination"`
	}
	decrypted(t, testUserID, do(t, e.s, http.MethodGet, "/api/v1/messages", map[string]string{"X-User-Id": testUserID}), &list)
	if len(list.Tasks) != 1 || mustJSON(list.Tasks[0]) != `{"charId":"c1","clientTaskId":"t1","contactName":"Rei","createdAt":"2026-06-01T09:00:00.000Z",`+
		`"id":1,"lastError":null,"messageSubtype":"reminder","messageType":"fixed","nextSendAt":"2026-06-01T09:30:00.000Z",`+
		`"recurrenceType":"daily","retryCount":0,"status":"pending","tzId":"asia/tokyo","updatedAt":"2026-06-01T09:00:00.000Z","uuid":"0f8fad5b-d9cb-469f-a165-70867728950e"}` {
		t.Errorf("list %s", mustJSON(list))
	}
	if mustJSON(list.Pagination) != `{"hasMore":false,"limit":20,"offset":0,"total":1}` {
		t.Errorf("pagination %s", mustJSON(list.Pagination))
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestScheduleMessageNeedsADeviceAndAcceptsALegacySubscription(t *testing.T) {
	e := newTaskEnv(t, Config{AllowPrivateEndpoints: true})
	got := e.schedule(t, testUserID, fixedTask(nil))
	if code, _ := errorOf(t, got.body); got.status != http.StatusConflict || code != "PUSH_SUBSCRIPTION_MISSING" {
		t.Fatalf("no device: %d %s", got.status, got.body)
	}
	sub := e.fake.Subscribe()
	got = e.schedule(t, testUserID, fixedTask(map[string]any{"pushSubscription": sub}))
	if got.status != http.StatusCreated {
		t.Fatalf("with a legacy pushSubscription: %d %s", got.status, got.body)
	}
	devices, _ := e.st.Devices(t.Context(), testUserID)
	if len(devices) != 1 || devices[0].Subscription.Endpoint != sub.Endpoint {
		t.Errorf("devices %+v", devices)
	}
	// A null one is ignored.
	if got := e.schedule(t, testUserID, fixedTask(map[string]any{"pushSubscription": null})); got.status != http.StatusCreated {
		t.Errorf("null pushSubscription: %d %s", got.status, got.body)
	}
}

func TestScheduleMessageUUIDConflictAndSupersede(t *testing.T) {
	e := newTaskEnv(t, Config{})
	e.subscribe(t, testUserID)
	const first, second = "0f8fad5b-d9cb-469f-a165-70867728950e", "7c9e6679-7425-40de-944b-e07fc1f90ae7"
	if got := e.schedule(t, testUserID, fixedTask(map[string]any{"uuid": first})); got.status != http.StatusCreated {
		t.Fatal(got.body)
	}
	got := e.schedule(t, testUserID, fixedTask(map[string]any{"uuid": first}))
	if code, _ := errorOf(t, got.body); got.status != http.StatusConflict || code != "TASK_UUID_CONFLICT" {
		t.Errorf("duplicate uuid: %d %s", got.status, got.body)
	}
	got = e.schedule(t, testUserID, fixedTask(map[string]any{"uuid": second, "supersedesUuid": first}))
	var data map[string]any
	decodeData(t, got.body, &data)
	if data["superseded"] != true || data["uuid"] != second {
		t.Errorf("supersede: %s", got.body)
	}
	got = e.schedule(t, testUserID, fixedTask(map[string]any{"supersedesUuid": first}))
	decodeData(t, got.body, &data)
	if data["superseded"] != false {
		t.Errorf("supersede of a gone task: %s", got.body)
	}
}

func TestScheduleImmediateThenSendNotifications(t *testing.T) {
	e := newTaskEnv(t, Config{ClientToken: "tok"})
	e.subscribe(t, testUserID)
	req := encryptedRequest(t, http.MethodPost, "/api/v1/schedule-message", testUserID, fixedTask(map[string]any{"immediate": true, "firstSendTime": nil}))
	req.Header.Set("X-Client-Token", "tok")
	got := serve(e.s, req)
	if got.status != http.StatusCreated || !strings.Contains(got.body, `"nextSendAt":"2026-06-01T09:00:00.000Z"`) {
		t.Fatalf("immediate: %d %s", got.status, got.body)
	}
	if got := post(e.s, "/api/v1/send-notifications", "", nil); got.status != http.StatusUnauthorized {
		t.Errorf("send-notifications without the token: %d", got.status)
	}
	got = post(e.s, "/api/v1/send-notifications", "", map[string]string{"X-Client-Token": "tok"})
	var sum scheduler.Summary
	decodeData(t, got.body, &sum)
	if sum.TotalTasks != 1 || sum.SuccessCount != 1 || sum.Details.DeletedOnceOffTasks != 1 || len(e.fake.Pushes()) != 1 {
		t.Errorf("tick %s, %d pushes", got.body, len(e.fake.Pushes()))
	}
	if !strings.Contains(got.body, `"failedTasks":[]`) || !strings.Contains(got.body, `"claimSkippedTasks":0`) {
		t.Errorf("summary shape %s", got.body)
	}
}

func TestScheduleInstant(t *testing.T) {
	e := newTaskEnv(t, Config{})
	sub := e.subscribe(t, testUserID)
	got := e.schedule(t, testUserID, fixedTask(map[string]any{"messageType": "instant", "userMessage": "你好。再见！"}))
	var data map[string]any
	decodeData(t, got.body, &data)
	if got.status != http.StatusOK || data["messagesSent"] != float64(2) || data["status"] != "sent" || data["retriesUsed"] != float64(0) ||
		data["sentAt"] != "2026-06-01T09:00:00.000Z" || len(e.fake.Pushes()) != 2 {
		t.Fatalf("instant: %d %s", got.status, got.body)
	}
	if _, total, _ := e.st.Tasks(t.Context(), testUserID, "", 10, 0); total != 0 {
		t.Errorf("a delivered instant task was kept")
	}
	e.fake.Respond(sub, 3, pushtest.Response{Status: http.StatusRequestEntityTooLarge})
	got = e.schedule(t, testUserID, fixedTask(map[string]any{"messageType": "instant", "uuid": "7c9e6679-7425-40de-944b-e07fc1f90ae7"}))
	code, details := errorOf(t, got.body)
	if got.status != http.StatusInternalServerError || code != "MESSAGE_SEND_FAILED" ||
		!strings.HasPrefix(details, `{"code":"PROCESSING_ERROR","message":"Web Push delivery failed on 1 device(s)`) || !strings.HasSuffix(details, `"retriesAttempted":2,"pushStatus":413}`) {
		t.Errorf("failed instant: %d %s", got.status, got.body)
	}
	got = do(t, e.s, http.MethodGet, "/api/v1/message?id=7c9e6679-7425-40de-944b-e07fc1f90ae7", map[string]string{"X-User-Id": testUserID})
	code, details = errorOf(t, got.body)
	if got.status != http.StatusConflict || code != "TASK_ALREADY_COMPLETED" || !strings.HasPrefix(details, `{"lastError":{"at":"2026-06-01T09:00:00.000Z","occurrence":"2026-06-01T09:01:00.000Z","reason":"Web Push delivery failed`) ||
		!strings.HasSuffix(details, `"status":"failed"}`) {
		t.Errorf("detail of the failed instant task: %d %s", got.status, got.body)
	}
}

func TestUpdateMessage(t *testing.T) {
	e := newTaskEnv(t, Config{})
	e.subscribe(t, testUserID)
	const id = "0f8fad5b-d9cb-469f-a165-70867728950e"
	if got := e.schedule(t, testUserID, fixedTask(map[string]any{"uuid": id, "avatarUrl": "https://img.example/a.png",
		"apiUrl": "https://llm.example/v1", "metadata": map[string]any{"charId": "c1"}})); got.status != http.StatusCreated {
		t.Fatal(got.body)
	}
	checkUpdateGate(t, e, id)
	checkUpdateRefusals(t, e, id)
	checkUpdateMerge(t, e, id)
}

// checkUpdateGate: the gate's own order: task id, user id, then encryption.
func checkUpdateGate(t *testing.T, e *taskEnv, id string) {
	t.Helper()
	for _, c := range []struct {
		name, path string
		header     map[string]string
		body, code string
	}{
		{"no id", "/api/v1/update-message", map[string]string{}, "", "TASK_ID_REQUIRED"},
		{"no user", "/api/v1/update-message?id=" + id, map[string]string{"X-Payload-Encrypted": "true"}, "", "USER_ID_REQUIRED"},
		{"bad user", "/api/v1/update-message?id=" + id, map[string]string{"X-User-Id": "nope"}, "", "INVALID_USER_ID_FORMAT"},
		{"not encrypted", "/api/v1/update-message?id=" + id, map[string]string{"X-User-Id": testUserID}, "", "ENCRYPTION_REQUIRED"},
		{"version", "/api/v1/update-message?id=" + id, map[string]string{"X-User-Id": testUserID, "X-Payload-Encrypted": "true"}, "", "UNSUPPORTED_ENCRYPTION_VERSION"},
		{"envelope", "/api/v1/update-message?id=" + id, encryptedHeaders(testUserID), "{}", "INVALID_ENCRYPTED_PAYLOAD"},
		{"not JSON", "/api/v1/update-message?id=" + id, encryptedHeaders(testUserID), browserEncryptRaw(t, browserUserKey(testUserID), "nope"), "DECRYPTION_FAILED"},
		{"array", "/api/v1/update-message?id=" + id, encryptedHeaders(testUserID), browserEncrypt(t, browserUserKey(testUserID), []int{}), "INVALID_UPDATE_DATA"},
	} {
		got := serve(e.s, newRequest(http.MethodPut, c.path, c.body, c.header))
		if code, _ := errorOf(t, got.body); code != c.code {
			t.Errorf("%s: %d %s, want %s", c.name, got.status, got.body, c.code)
		}
	}
}

// checkUpdateRefusals: each invalid field, and an unknown task.
func checkUpdateRefusals(t *testing.T, e *taskEnv, id string) {
	t.Helper()
	for _, c := range []struct {
		name    string
		body    map[string]any
		status  int
		code    string
		details string
	}{
		{"bad nextSendAt", map[string]any{"nextSendAt": "soon"}, 400, "INVALID_UPDATE_DATA", `{"invalidFields":["nextSendAt"]}`},
		{"blank contactName", map[string]any{"contactName": "  "}, 400, "INVALID_UPDATE_DATA", `{"invalidFields":["contactName"]}`},
		{"null contactName", map[string]any{"contactName": nil}, 400, "INVALID_UPDATE_DATA", `{"invalidFields":["contactName"]}`},
		{"bad recurrenceType", map[string]any{"recurrenceType": "hourly"}, 400, "INVALID_UPDATE_DATA", `{"invalidFields":["recurrenceType"]}`},
		{"bad tzId", map[string]any{"tzId": 5}, 400, "INVALID_UPDATE_DATA", `{"invalidFields":["tzId"]}`},
		{"bad maxTokens", map[string]any{"maxTokens": -1}, 400, "INVALID_UPDATE_DATA", `{"invalidFields":["maxTokens"]}`},
		{"both prompts", map[string]any{"completePrompt": "a", "messages": []any{map[string]any{"role": "user", "content": "x"}}}, 400, "INVALID_UPDATE_DATA", `{"invalidFields":["completePrompt","messages"]}`},
		{"bad messages", map[string]any{"messages": []any{map[string]any{"role": "bot", "content": "x"}}}, 400, "INVALID_UPDATE_DATA", `{"invalidFields":["messages"]}`},
		{"bad temperature", map[string]any{"temperature": "x"}, 400, "INVALID_UPDATE_DATA", `{"invalidFields":["temperature"]}`},
		{"bad splitPattern", map[string]any{"splitPattern": []any{1}}, 400, "INVALID_UPDATE_DATA", `{"invalidFields":["splitPattern"]}`},
		{"pushSubscription", map[string]any{"pushSubscription": nil}, 400, "PUSH_SUBSCRIPTION_NOT_ACCEPTED", `{"invalidFields":["pushSubscription"]}`},
		{"cron without expression", map[string]any{"recurrenceType": "cron"}, 400, "INVALID_UPDATE_DATA", `{"invalidFields":["cronExpr"]}`},
		{"bad messageSubtype", map[string]any{"messageSubtype": 5}, 400, "INVALID_UPDATE_DATA", `{"invalidFields":["messageSubtype"]}`},
		{"bad llmExtraBody", map[string]any{"llmExtraBody": []int{1}}, 400, "INVALID_UPDATE_DATA", `{"invalidFields":["llmExtraBody"]}`},
	} {
		got := e.update(t, testUserID, id, c.body)
		code, details := errorOf(t, got.body)
		if got.status != c.status || code != c.code || details != c.details {
			t.Errorf("%s: %d %s %s", c.name, got.status, code, details)
		}
	}
	if got := e.update(t, testUserID, "7c9e6679-7425-40de-944b-e07fc1f90ae7", map[string]any{}); got.status != http.StatusNotFound {
		t.Errorf("unknown task: %d %s", got.status, got.body)
	}
}

// checkUpdateMerge: a patch merges with the standard's semantics, a switch
// away from cron drops the expression, and a failed task cannot be updated.
func checkUpdateMerge(t *testing.T, e *taskEnv, id string) {
	t.Helper()
	e.clk.Add(time.Second)
	patch := json.RawMessage(`{"nextSendAt":"2026-06-02T00:00:00Z","contactName":"Ayu","userMessage":null,"avatarUrl":"data:x",` +
		`"apiKey":null,"tzId":"Asia/Tokyo","recurrenceType":"cron","cronExpr":"0 9 * * *","metadata":{"charId":"c2"},"unknown":1}`)
	got := e.update(t, testUserID, id, patch)
	// updatedFields lists what was stored: not the null userMessage and
	// apiKey (kept), the invalid avatarUrl (kept) or the unknown key.
	want := `{"success":true,"data":{"uuid":"` + id + `","updatedFields":["nextSendAt","contactName","tzId",` +
		`"recurrenceType","cronExpr","metadata"],"updatedAt":"2026-06-01T09:00:01.000Z"}}` + "\n"
	if got.status != http.StatusOK || got.body != want {
		t.Fatalf("update = %d %s\nwant %s", got.status, got.body, want)
	}
	task, _ := e.st.Task(t.Context(), testUserID, id)
	p, _ := scheduler.DecodePayload(task.Payload)
	if !task.NextSendAt.Equal(time.Date(2026, 6, 2, 0, 0, 0, 0, time.UTC)) || p.ContactName != "Ayu" || *p.UserMessage != "该喝水了" ||
		*p.AvatarURL != "https://img.example/a.png" || *p.TzID != "Asia/Tokyo" || p.RecurrenceType != "cron" || p.CronExpr != "0 9 * * *" ||
		string(p.Metadata) != `{"charId":"c2"}` || p.FirstSendTime != "2026-06-01T09:01:00.000Z" {
		t.Errorf("merged payload %s, next %s", task.Payload, task.NextSendAt)
	}
	// Back to daily drops the expression.
	if got := e.update(t, testUserID, id, map[string]any{"recurrenceType": "daily"}); got.status != http.StatusOK {
		t.Fatal(got.body)
	}
	task, _ = e.st.Task(t.Context(), testUserID, id)
	if p, _ := scheduler.DecodePayload(task.Payload); p.CronExpr != "" || p.RecurrenceType != "daily" {
		t.Errorf("after switching to daily: %s", task.Payload)
	}

	// messageSubtype and llmExtraBody are stored, and null restores their
	// defaults.
	for _, c := range []struct {
		patch, fields, subtype, extra string
	}{
		{`{"messageSubtype":"greeting","llmExtraBody":{"top_p":0.5},"notAField":1,"avatarUrl":null}`, `["messageSubtype","llmExtraBody"]`, "greeting", `{"top_p":0.5}`},
		{`{"llmExtraBody":null,"messageSubtype":null}`, `["llmExtraBody","messageSubtype"]`, "chat", ""},
	} {
		got := e.update(t, testUserID, id, json.RawMessage(c.patch))
		if !strings.Contains(got.body, `"updatedFields":`+c.fields) {
			t.Errorf("update %s: %s, want updatedFields %s", c.patch, got.body, c.fields)
		}
		task, _ = e.st.Task(t.Context(), testUserID, id)
		if p, _ := scheduler.DecodePayload(task.Payload); p.MessageSubtype != c.subtype || string(p.LLMExtraBody) != c.extra {
			t.Errorf("after %s: %s", c.patch, task.Payload)
		}
	}

	// A failed task cannot be updated.
	if _, err := e.st.DeleteSubscriptions(t.Context(), testUserID); err != nil {
		t.Fatal(err)
	}
	if got := e.update(t, testUserID, id, map[string]any{"nextSendAt": "2026-06-01T09:00:01Z"}); got.status != http.StatusOK {
		t.Fatal(got.body)
	}
	if _, err := e.sched.Tick(t.Context()); err != nil { // no device: the occurrence is skipped
		t.Fatal(err)
	}
	task, _ = e.st.Task(t.Context(), testUserID, id)
	if task.Status != store.TaskPending || !strings.Contains(string(task.LastError), "PUSH_SUBSCRIPTION_MISSING") {
		t.Errorf("recurring task without a device: %+v %s", task, task.LastError)
	}
}

// While an occurrence is being delivered (its lease live), an update that
// would move it is refused with 409 TASK_IN_FLIGHT and changes nothing;
// other edits are stored and leave the occurrence alone.
func TestUpdateOfATaskInFlight(t *testing.T) {
	e := newTaskEnv(t, Config{})
	e.subscribe(t, testUserID)
	const id = "0f8fad5b-d9cb-469f-a165-70867728950e"
	e.schedule(t, testUserID, fixedTask(map[string]any{"uuid": id, "immediate": true}))
	claimed, err := e.st.ClaimDueTasks(t.Context(), e.clk.Now(), time.Minute, 1)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	for _, patch := range []map[string]any{
		{"nextSendAt": "2026-06-02T00:00:00Z"},
		{"recurrenceType": "daily"},
		{"tzId": "Asia/Tokyo"},
		{"contactName": "Ayu", "nextSendAt": "2026-06-02T00:00:00Z"},
	} {
		got := e.update(t, testUserID, id, patch)
		if code, _ := errorOf(t, got.body); got.status != http.StatusConflict || code != "TASK_IN_FLIGHT" {
			t.Errorf("update %v in flight: %d %s", patch, got.status, got.body)
		}
	}
	task, _ := e.st.Task(t.Context(), testUserID, id)
	if p, _ := scheduler.DecodePayload(task.Payload); !task.NextSendAt.Equal(claimed[0].NextSendAt) || p.ContactName != "Rei" || p.TzID != nil {
		t.Errorf("a refused update changed the task: %s at %s", task.Payload, task.NextSendAt)
	}
	// The same time is no move, and a content edit is stored without
	// touching the lease or the occurrence.
	same := push.FormatTimestamp(claimed[0].NextSendAt)
	if got := e.update(t, testUserID, id, map[string]any{"contactName": "Ayu", "nextSendAt": same}); got.status != http.StatusOK {
		t.Fatalf("edit in flight: %d %s", got.status, got.body)
	}
	task, _ = e.st.Task(t.Context(), testUserID, id)
	if task.Lease() != claimed[0].Lease() {
		t.Errorf("the edit moved the lease: %+v, was %+v", task.Lease(), claimed[0].Lease())
	}
	// Once the lease is over the task may move again.
	e.clk.Add(time.Minute + time.Millisecond)
	if got := e.update(t, testUserID, id, map[string]any{"nextSendAt": "2026-06-02T00:00:00Z"}); got.status != http.StatusOK {
		t.Errorf("update after the lease: %d %s", got.status, got.body)
	}
}

// claimedAhead schedules a one-shot task due a minute after taskEpoch and
// starts the scheduler 50 ms before then, returning once the task is
// claimed ahead and waits, held by g, for its time.
func claimedAhead(t *testing.T) (e *taskEnv, g *clocktest.Gate, id string, due time.Time) {
	t.Helper()
	g = clocktest.NewGate()
	e = newTaskEnvWaiting(t, Config{}, "", g.Sleep)
	e.subscribe(t, testUserID)
	id = "0f8fad5b-d9cb-469f-a165-70867728950e"
	if got := e.schedule(t, testUserID, fixedTask(map[string]any{"uuid": id})); got.status != http.StatusCreated {
		t.Fatal(got.body)
	}
	due = taskEpoch.Add(time.Minute)
	e.clk.Set(due.Add(-50 * time.Millisecond))
	e.sched.Start()
	if d := <-g.Asked; d != 50*time.Millisecond {
		t.Fatalf("the claim ahead waits %s, want 50ms", d)
	}
	return e, g, id, due
}

// A task the scheduler claimed ahead of its time is not in flight yet: a
// move is stored, the claim taken back, and the one-shot task is sent once,
// at its new time, never at its old one.
func TestUpdateMovesATaskClaimedAhead(t *testing.T) {
	e, g, id, old := claimedAhead(t)
	moved := old.Add(time.Hour)
	if got := e.update(t, testUserID, id, map[string]any{"nextSendAt": push.FormatTimestamp(moved)}); got.status != http.StatusOK {
		t.Fatalf("moving a task claimed ahead: %d %s", got.status, got.body)
	}
	if task, _ := e.st.Task(t.Context(), testUserID, id); !task.NextSendAt.Equal(moved) || !task.LeaseUntil.IsZero() {
		t.Fatalf("after the move: %+v, want the new time and no lease", task)
	}
	e.clk.Set(old)
	g.Open()
	e.clk.Set(moved)
	e.sched.Wake()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := e.fake.WaitPushes(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := e.sched.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	pushes := e.fake.Pushes()
	var m map[string]any
	if len(pushes) != 1 || json.Unmarshal(pushes[0].JSON, &m) != nil || m["occurrenceMs"] != float64(moved.UnixMilli()) {
		t.Errorf("%d pushes, the first %s; want one, at the new time", len(pushes), pushes[0].JSON)
	}
}

// An edit of a task whose occurrence began (a push went out, the rest
// waits to retry) is stored for the next occurrence; the retry sends the
// text the occurrence began with.
func TestEditDuringARetryKeepsTheOccurrence(t *testing.T) {
	e := newTaskEnv(t, Config{})
	sub := e.subscribe(t, testUserID)
	const id = "0f8fad5b-d9cb-469f-a165-70867728950e"
	e.schedule(t, testUserID, fixedTask(map[string]any{"uuid": id, "immediate": true, "userMessage": "一。二。三。"}))
	e.fake.Respond(sub, 1, pushtest.Response{Status: http.StatusCreated})
	// A 403 is not retried in the sender: the occurrence backs off.
	e.fake.Respond(sub, 1, pushtest.Response{Status: http.StatusForbidden})
	if _, err := e.sched.Tick(t.Context()); err != nil {
		t.Fatal(err)
	}
	task, _ := e.st.Task(t.Context(), testUserID, id)
	if task.RetryCount != 1 {
		t.Fatalf("after the failed attempt: %+v", task)
	}
	if got := e.update(t, testUserID, id, map[string]any{"userMessage": "改。改。改。"}); got.status != http.StatusOK {
		t.Fatalf("edit: %d %s", got.status, got.body)
	}
	if _, err := e.sched.Tick(t.Context()); err != nil { // the edit cleared the backoff
		t.Fatal(err)
	}
	var texts []string
	for _, p := range e.fake.Pushes() {
		var m struct{ Message string }
		_ = json.Unmarshal(p.JSON, &m)
		texts = append(texts, m.Message)
	}
	if strings.Join(texts, "") != "一。二。三。" {
		t.Errorf("pushes %q, want the occurrence's own text once", texts)
	}
}

func TestListMessagesParameters(t *testing.T) {
	e := newTaskEnv(t, Config{})
	e.subscribe(t, testUserID)
	for i := range 3 {
		e.schedule(t, testUserID, fixedTask(map[string]any{"firstSendTime": push.FormatTimestamp(taskEpoch.Add(time.Duration(3-i) * time.Minute))}))
	}
	list := func(query string) (response, []string, map[string]any) {
		got := do(t, e.s, http.MethodGet, "/api/v1/messages"+query, map[string]string{"X-User-Id": testUserID})
		if got.status != http.StatusOK {
			return got, nil, nil
		}
		var body struct {
			Tasks []struct {
				NextSendAt string `json:"nextSendAt"`
			} `json:"tasks"`
			Pagination map[string]any `json:"pagination"`
		}
		decrypted(t, testUserID, got, &body)
		var times []string
		for _, task := range body.Tasks {
			times = append(times, task.NextSendAt[14:16])
		}
		return got, times, body.Pagination
	}
	for _, c := range []struct {
		query string
		times string
		page  string
	}{
		{"", "[01 02 03]", `{"hasMore":false,"limit":20,"offset":0,"total":3}`},
		{"?limit=2", "[01 02]", `{"hasMore":true,"limit":2,"offset":0,"total":3}`},
		{"?limit=2abc&offset=2", "[03]", `{"hasMore":false,"limit":2,"offset":2,"total":3}`},
		{"?limit=500", "[01 02 03]", `{"hasMore":false,"limit":100,"offset":0,"total":3}`},
		{"?status=pending", "[01 02 03]", `{"hasMore":false,"limit":20,"offset":0,"total":3}`},
		{"?status=failed", "[]", `{"hasMore":false,"limit":20,"offset":0,"total":0}`},
		{"?status=garbage", "[]", `{"hasMore":false,"limit":20,"offset":0,"total":0}`},
	} {
		got, times, page := list(c.query)
		if fmt.Sprint(times) != c.times || mustJSON(page) != c.page {
			t.Errorf("%s: %v %s (%d %s)", c.query, times, mustJSON(page), got.status, got.body)
		}
	}
	for _, q := range []string{"?limit=0", "?limit=abc", "?limit=-3", "?offset=-1", "?offset=x"} {
		got, _, _ := list(q)
		if code, _ := errorOf(t, got.body); got.status != http.StatusBadRequest || code != "INVALID_PARAMETERS" {
			t.Errorf("%s: %d %s", q, got.status, got.body)
		}
	}
	if got := do(t, e.s, http.MethodGet, "/api/v1/messages", nil); got.status != http.StatusBadRequest {
		t.Errorf("without a user id: %d", got.status)
	}
}

func TestGetAndCancelMessage(t *testing.T) {
	e := newTaskEnv(t, Config{})
	e.subscribe(t, testUserID)
	const id = "0f8fad5b-d9cb-469f-a165-70867728950e"
	e.schedule(t, testUserID, fixedTask(map[string]any{"uuid": id, "metadata": map[string]any{"charId": "c1", "notes": []int{1}}}))
	get := func(query string, userID string) response {
		return do(t, e.s, http.MethodGet, "/api/v1/message"+query, map[string]string{"X-User-Id": userID})
	}
	var detail struct {
		Task map[string]any `json:"task"`
	}
	decrypted(t, testUserID, get("?id="+id, testUserID), &detail)
	if mustJSON(detail.Task["metadata"]) != `{"charId":"c1","notes":[1]}` || detail.Task["uuid"] != id {
		t.Errorf("detail %s", mustJSON(detail))
	}
	for _, c := range []struct {
		query, user, code string
		status            int
	}{
		{"", testUserID, "TASK_ID_REQUIRED", 400},
		{"?id=" + id, "", "USER_ID_REQUIRED", 400},
		{"?id=" + id, "123e4567-e89b-42d3-a456-426614174000", "TASK_NOT_FOUND", 404},
	} {
		got := get(c.query, c.user)
		if code, _ := errorOf(t, got.body); got.status != c.status || code != c.code {
			t.Errorf("GET /message%s as %q: %d %s", c.query, c.user, got.status, got.body)
		}
	}
	cancel := func(query string) response {
		return do(t, e.s, http.MethodDelete, "/api/v1/cancel-message"+query, map[string]string{"X-User-Id": testUserID})
	}
	if got := cancel(""); !strings.Contains(got.body, "TASK_ID_REQUIRED") {
		t.Errorf("cancel without id: %s", got.body)
	}
	got := cancel("?id=" + id)
	if want := `{"success":true,"data":{"uuid":"` + id + `","message":"任务已成功取消","status":"cancelled","deletedAt":"2026-06-01T09:00:00.000Z"}}` + "\n"; got.body != want {
		t.Errorf("cancel = %s", got.body)
	}
	if got := cancel("?id=" + id); got.status != http.StatusNotFound {
		t.Errorf("second cancel: %d %s", got.status, got.body)
	}

	// data.status says what the cancel found: a task being delivered (its
	// lease live), or one that had finished.
	const delivering, failed = "7c9e6679-7425-40de-944b-e07fc1f90ae7", "16fd2706-8baf-433b-82eb-8c7fada847da"
	e.schedule(t, testUserID, fixedTask(map[string]any{"uuid": delivering, "immediate": true}))
	claimed, err := e.st.ClaimDueTasks(t.Context(), e.clk.Now(), time.Minute, 1)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	e.schedule(t, testUserID, fixedTask(map[string]any{"uuid": failed, "immediate": true}))
	claimed, err = e.st.ClaimDueTasks(t.Context(), e.clk.Now(), time.Minute, 1)
	if err != nil || len(claimed) != 1 || e.st.FailTask(t.Context(), claimed[0].Lease(), 0, nil) != nil {
		t.Fatalf("claim and fail: %v %v", claimed, err)
	}
	for uuid, want := range map[string]string{delivering: "cancelled_mid_delivery", failed: "cancelled_after_delivery"} {
		if got := cancel("?id=" + uuid); !strings.Contains(got.body, `"status":"`+want+`"`) {
			t.Errorf("cancel %s: %s, want status %s", uuid, got.body, want)
		}
	}
}

func TestCapabilitiesListTheTaskFeatures(t *testing.T) {
	e := newTaskEnv(t, Config{})
	got := do(t, e.s, http.MethodGet, "/api/v1/capabilities", nil)
	for _, f := range []string{"task-timezone", "task-cron", "schedule-supersede", "get-message-detail", "tick-lease-heartbeat", "llm-extra-body"} {
		if !strings.Contains(got.body, `"`+f+`"`) {
			t.Errorf("capabilities lack %s: %s", f, got.body)
		}
	}
	// With the instant path too, a feature both have is listed once.
	s := newTestServer(t, Config{}, Deps{Store: e.st, Scheduler: e.sched, Instant: &Instant{Agent: loop.NewAgent(loop.AgentConfig{})}})
	var body struct {
		Features []string `json:"features"`
	}
	if err := json.Unmarshal([]byte(do(t, s, http.MethodGet, "/api/v1/capabilities", nil).body), &body); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range body.Features {
		if seen[f] {
			t.Errorf("capability %s listed twice: %v", f, body.Features)
		}
		seen[f] = true
	}
	if !seen["instant"] || !seen["llm-extra-body"] || !seen["task-cron"] {
		t.Errorf("capabilities %v", body.Features)
	}
}

func TestParseTime(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`"2026-06-01T09:00:00.123Z"`, "2026-06-01T09:00:00.123Z"},
		{`"2026-06-01T09:00:00Z"`, "2026-06-01T09:00:00.000Z"},
		{`"2026-06-01T18:00:00+09:00"`, "2026-06-01T09:00:00.000Z"},
		{`"2026-06-01T09:00:00"`, "2026-06-01T09:00:00.000Z"},
		{`"2026-06-01T09:00"`, "2026-06-01T09:00:00.000Z"},
		{`"2026-06-01t09:00:00.5z"`, "2026-06-01T09:00:00.500Z"},
		{`"2026-06-01"`, "2026-06-01T00:00:00.000Z"},
		{`"2026-06-01T09:00:00.123456Z"`, "2026-06-01T09:00:00.123Z"},
		{`1780304400000`, "2026-06-01T09:00:00.000Z"},
	} {
		got, ok := parseTime(json.RawMessage(c.in))
		if !ok || push.FormatTimestamp(got) != c.want {
			t.Errorf("parseTime(%s) = %s, %v; want %s", c.in, push.FormatTimestamp(got), ok, c.want)
		}
	}
	for _, in := range []string{`"tomorrow"`, `""`, `"2026-13-01"`, `null`, `true`, `{}`, `1.5`, `"10000-01-01T00:00:00Z"`, `1e300`} {
		if _, ok := parseTime(json.RawMessage(in)); ok {
			t.Errorf("parseTime(%s) accepted", in)
		}
	}
}

// FuzzUpdateMessage sends arbitrary decrypted patches to a pending task:
// every answer is the standard's success or a 400 with its code, never a
// 500, and a refused patch leaves the task as it was.
func FuzzUpdateMessage(f *testing.F) {
	for _, seed := range []string{
		`{"userMessage":"x"}`,
		`{"nextSendAt":"2030-01-01T00:00:00Z","recurrenceType":"cron","cronExpr":"0 9 * * 1-5","tzId":"Asia/Tokyo"}`,
		`{"recurrenceType":"weekly","tzId":"Mars/Base"}`,
		`{"contactName":"","metadata":[],"avatarUrl":"data:x"}`,
		`{"messageType":"prompted","completePrompt":"p","apiUrl":"http://x","apiKey":"k","primaryModel":"m"}`,
		`{"nextSendAt":1e400,"splitPattern":"(","maxTokens":-1}`,
		`{}`,
	} {
		f.Add(seed)
	}
	e := newTaskEnv(f, Config{})
	e.subscribe(f, testUserID)
	var created struct {
		UUID string `json:"uuid"`
	}
	decodeData(f, e.schedule(f, testUserID, fixedTask(nil)).body, &created)
	detail := func(t *testing.T) string {
		task, err := e.st.Task(t.Context(), testUserID, created.UUID)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%+v %s", task, task.Payload)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(body), &obj) != nil || obj == nil {
			return
		}
		before := detail(t)
		got := e.update(t, testUserID, created.UUID, json.RawMessage(body))
		switch got.status {
		case http.StatusOK:
		case http.StatusBadRequest:
			if code, _ := errorOf(t, got.body); code == "" {
				t.Fatalf("400 without a code: %s", got.body)
			}
			if after := detail(t); after != before {
				t.Fatalf("refused patch %s changed the task:\n%s\n%s", body, before, after)
			}
		default:
			t.Fatalf("%d %s for %s", got.status, got.body, body)
		}
	})
}

// FuzzScheduleMessage sends arbitrary decrypted bodies: every answer is one
// of the standard's, never a 500.
func FuzzScheduleMessage(f *testing.F) {
	for _, seed := range []string{
		mustJSON(fixedTask(nil)),
		mustJSON(fixedTask(map[string]any{"recurrenceType": "cron", "cronExpr": "*/5 * * * *", "tzId": "UTC"})),
		`{"contactName":"a","messageType":"auto","firstSendTime":"2030-01-01","messages":[{"role":"user","content":"x"}],"apiUrl":"http://x","apiKey":"k","primaryModel":"m"}`,
		`{"contactName":"a","messageType":"fixed","immediate":true,"userMessage":"x","splitPattern":["(a)","b"],"maxTokens":1e9}`,
		`{"contactName":"a","messageType":"fixed","firstSendTime":1e20,"userMessage":{}}`,
		`{}`,
	} {
		f.Add(seed)
	}
	e := newTaskEnv(f, Config{})
	e.subscribe(f, testUserID)
	f.Fuzz(func(t *testing.T, body string) {
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(body), &obj) != nil || obj == nil {
			return
		}
		got := e.schedule(t, testUserID, json.RawMessage(body))
		switch got.status {
		case http.StatusOK, http.StatusCreated:
			return
		case http.StatusBadRequest, http.StatusConflict, http.StatusInternalServerError:
			code, _ := errorOf(t, got.body)
			if got.status == http.StatusInternalServerError && code != "MESSAGE_SEND_FAILED" {
				t.Fatalf("500 %s for %s", got.body, body)
			}
		default:
			t.Fatalf("%d %s for %s", got.status, got.body, body)
		}
	})
}

// Schedule and update check the credentials alike, each with its own code
// and message for a non-string; update checks userMessage first.
func TestCredentialErrors(t *testing.T) {
	e, id := newTaskEnvWithTask(t)
	llm := map[string]any{"messageType": "prompted", "userMessage": nil, "completePrompt": "hi",
		"apiUrl": "https://llm.example/v1", "apiKey": "k", "primaryModel": "m"}
	llmTask := func(more map[string]any) map[string]any {
		m := fixedTask(llm)
		maps.Copy(m, more)
		return m
	}
	const badURL = `"Invalid apiUrl: \"not a url\". Please provide a valid absolute URL."`
	for _, c := range []struct {
		name   string
		update bool
		body   map[string]any
		want   string
	}{
		{"schedule apiKey a number", false, llmTask(map[string]any{"apiKey": 5}),
			`{"code":"INVALID_PARAMETERS","message":"缺少必需参数或参数格式错误","details":{"invalidFields":["apiKey"]}}`},
		{"schedule primaryModel and apiUrl", false, llmTask(map[string]any{"primaryModel": true, "apiUrl": "not a url"}),
			`{"code":"INVALID_PARAMETERS","message":"缺少必需参数或参数格式错误","details":{"invalidFields":["primaryModel"]}}`},
		{"schedule bad apiUrl", false, llmTask(map[string]any{"apiUrl": "not a url"}),
			`{"code":"INVALID_PARAMETERS","message":` + badURL + `,"details":{"invalidFields":["apiUrl"]}}`},
		{"update userMessage before apiKey", true, map[string]any{"apiKey": 5, "userMessage": 5},
			`{"code":"INVALID_UPDATE_DATA","message":"更新数据格式错误","details":{"invalidFields":["userMessage"]}}`},
		{"update apiUrl a number", true, map[string]any{"apiUrl": 1, "apiKey": 5},
			`{"code":"INVALID_UPDATE_DATA","message":"更新数据格式错误","details":{"invalidFields":["apiUrl"]}}`},
		{"update primaryModel before a bad apiUrl", true, map[string]any{"apiUrl": "not a url", "primaryModel": []int{}},
			`{"code":"INVALID_UPDATE_DATA","message":"更新数据格式错误","details":{"invalidFields":["primaryModel"]}}`},
		{"update bad apiUrl", true, map[string]any{"apiUrl": "not a url"},
			`{"code":"INVALID_UPDATE_DATA","message":` + badURL + `,"details":{"invalidFields":["apiUrl"]}}`},
	} {
		var got response
		if c.update {
			got = e.update(t, testUserID, id, c.body)
		} else {
			got = e.schedule(t, testUserID, c.body)
		}
		if want := `{"success":false,"error":` + c.want + `}`; got.status != http.StatusBadRequest || strings.TrimSpace(got.body) != want {
			t.Errorf("%s: %d %s, want %s", c.name, got.status, got.body, want)
		}
	}
}

// A cancel of a task this instance claimed ahead of its time, before that
// time, answers "cancelled": nothing of it was sent, and nothing is.
func TestCancelOfATaskClaimedAheadSaysCancelled(t *testing.T) {
	e, g, id, due := claimedAhead(t)
	got := do(t, e.s, http.MethodDelete, "/api/v1/cancel-message?id="+id, map[string]string{"X-User-Id": testUserID})
	if !strings.Contains(got.body, `"status":"cancelled"`) {
		t.Errorf("cancel of a task claimed ahead = %d %s, want status cancelled", got.status, got.body)
	}
	e.clk.Set(due)
	g.Open()
	if err := e.sched.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if pushes := e.fake.Pushes(); len(pushes) != 0 {
		t.Errorf("%d pushes after the cancel, want none", len(pushes))
	}
}
