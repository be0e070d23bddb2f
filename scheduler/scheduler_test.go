package scheduler

import (
	"cmp"
	"context"
	"crypto/x509"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"amsg/llm"
	"amsg/llm/llmtest"
	"amsg/loop"
	"amsg/push"
	"amsg/push/clocktest"
	"amsg/push/courier"
	"amsg/push/pushtest"
	"amsg/push/webpush"
	"amsg/store"
	"amsg/store/driver"
	"amsg/store/storetest"
)

const (
	alice = "550e8400-e29b-41d4-a716-446655440000"
	bob   = "123e4567-e89b-42d3-a456-426614174000"
)

// harness is a scheduler wired to a real store, a fake push service and a
// fake LLM, with a settable clock and sleeps that return at once (and are
// recorded).
type harness struct {
	t       *testing.T
	path    string // the store's database
	st      *store.Store
	push    *pushtest.Server
	llm     *llmtest.Server
	clk     *clocktest.Clock
	sched   *Scheduler
	courier *courier.Courier

	newCourier   func(courier.Store) *courier.Courier
	newScheduler func() // sets sched, with courier

	sleep *clocktest.Sleeper
}

var start = time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	return newPolicyHarness(t, cfg, courier.PolicyUpstream)
}

// newPolicyHarness is newHarness with the courier under policy.
func newPolicyHarness(t *testing.T, cfg Config, policy courier.Policy) *harness {
	t.Helper()
	return newHarnessOn(t, cfg, policy, pushtest.Options{})
}

// newHarnessOn is newPolicyHarness with the fake push service started with
// pushOpts (with TLS, the sender trusts its certificate).
func newHarnessOn(t *testing.T, cfg Config, policy courier.Policy, pushOpts pushtest.Options) *harness {
	t.Helper()
	h := &harness{t: t, path: filepath.Join(t.TempDir(), "amsg.db"), clk: clocktest.New(start), sleep: &clocktest.Sleeper{}}
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	h.st = storetest.Open(t, store.Config{Path: h.path, Now: h.clk.Now, Logger: logger})
	sec := h.st.Secrets()
	h.push = pushtest.NewServerWithOptions(sec.VAPIDPublicKey, pushOpts)
	t.Cleanup(h.push.Close)
	h.llm = llmtest.NewServer(t)
	var roots *x509.CertPool
	if pushOpts.TLS {
		roots = x509.NewCertPool()
		roots.AppendCertsFromPEM(h.push.CertPEM())
	}
	sender, err := webpush.NewSender(webpush.Config{VAPIDPublicKey: sec.VAPIDPublicKey, VAPIDPrivateKey: sec.VAPIDPrivateKey,
		Subject: "mailto:ops@amsg.test", AllowPrivateEndpoints: true, MaxAttempts: 1, Logger: logger, RootCAs: roots})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger, cfg.Now = logger, h.clk.Now
	if cfg.Sleep == nil {
		cfg.Sleep = h.sleep.Sleep
	}
	h.newCourier = func(st courier.Store) *courier.Courier {
		return courier.New(sender, st, courier.Config{Policy: policy, Logger: logger})
	}
	h.newScheduler = func() {
		sched, err := New(cfg, Deps{Store: h.st, Courier: h.courier,
			LLM: llm.NewClient(llm.Config{Policy: llm.URLPolicy{AllowPrivate: true}, Logger: logger}), Transcripts: loop.NewTranscripts(h.st, h.clk.Now)})
		if err != nil {
			t.Fatal(err)
		}
		h.sched = sched
		t.Cleanup(func() { _ = sched.Stop(context.Background()) })
	}
	h.courier = h.newCourier(h.st)
	h.newScheduler()
	return h
}

// courierReading makes the harness's courier (and its scheduler, anew)
// read devices through st.
func (h *harness) courierReading(st courier.Store) {
	h.courier = h.newCourier(st)
	h.newScheduler()
}

// subscribe registers a device for userID at the fake push service.
func (h *harness) subscribe(userID string) push.Subscription {
	h.t.Helper()
	sub := h.push.Subscribe()
	raw, _ := json.Marshal(sub)
	if _, err := h.st.PutSubscription(h.t.Context(), userID, raw, time.Time{}); err != nil {
		h.t.Fatal(err)
	}
	h.courier.Forget(userID) // as the API does
	return sub
}

var uuidCounter int

func (h *harness) insert(userID string, p Payload, next time.Time) store.Task {
	h.t.Helper()
	p.ContactName = cmp.Or(p.ContactName, "Rei")
	p.MessageSubtype = cmp.Or(p.MessageSubtype, "chat")
	p.RecurrenceType = cmp.Or(p.RecurrenceType, push.RecurrenceNone)
	p.FirstSendTime = push.FormatTimestamp(next)
	raw, err := p.Encode()
	if err != nil {
		h.t.Fatal(err)
	}
	uuidCounter++
	task, _, err := h.st.InsertTask(h.t.Context(), store.NewTask{UserID: userID, UUID: fmt.Sprintf("00000000-0000-4000-8000-%012d", uuidCounter),
		MessageType: p.MessageType, NextSendAt: next, Payload: raw})
	if err != nil {
		h.t.Fatal(err)
	}
	return task
}

func (h *harness) tick() Summary {
	h.t.Helper()
	s, err := h.sched.Tick(h.t.Context())
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

func (h *harness) task(userID, uuid string) store.Task {
	h.t.Helper()
	task, err := h.st.Task(h.t.Context(), userID, uuid)
	if err != nil {
		h.t.Fatalf("task %s: %v", uuid, err)
	}
	return task
}

func (h *harness) gone(userID, uuid string) bool {
	_, err := h.st.Task(h.t.Context(), userID, uuid)
	return err != nil
}

// pushes returns the pushes the fake service received, decoded as maps.
func (h *harness) pushes() []map[string]any {
	var out []map[string]any
	for _, p := range h.push.Pushes() {
		var m map[string]any
		if err := json.Unmarshal(p.JSON, &m); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func ids(pushes []map[string]any) []string {
	var out []string
	for _, p := range pushes {
		out = append(out, fmt.Sprint(p["messageId"]))
	}
	return out
}

func str(s string) *string { return &s }

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFixedTaskDeliversTheStandardsPushAndIsDeleted(t *testing.T) {
	h := newHarness(t, Config{})
	h.subscribe(alice)
	task := h.insert(alice, Payload{MessageType: push.TypeFixed, ContactName: "Rei", UserMessage: str("该喝水了"),
		Metadata: json.RawMessage(`{"charId":"c1"}`)}, start)

	sum := h.tick()
	if sum.TotalTasks != 1 || sum.SuccessCount != 1 || sum.Details.DeletedOnceOffTasks != 1 || sum.ProcessedAt != "2026-06-01T09:00:00.000Z" {
		t.Errorf("summary %+v", sum)
	}
	pushes := h.push.Pushes()
	if len(pushes) != 1 {
		t.Fatalf("%d pushes", len(pushes))
	}
	want := fmt.Sprintf(`{"messageKind":"content","messageType":"fixed","source":"scheduled","messageId":"msg_task_%[1]d@%[2]d_0",`+
		`"sessionId":"sess_task_%[1]d@%[2]d","timestamp":"2026-06-01T09:00:00.000Z","message":"该喝水了","title":"From Rei",`+
		`"contactName":"Rei","avatarUrl":null,"messageSubtype":"chat","messageIndex":1,"totalMessages":1,`+
		`"taskId":%[1]d,"taskUuid":"%[3]s","recurrenceType":"none","occurrenceMs":%[2]d,"metadata":{"charId":"c1"}}`,
		task.ID, start.UnixMilli(), task.UUID)
	if string(pushes[0].JSON) != want {
		t.Errorf("push\n got %s\nwant %s", pushes[0].JSON, want)
	}
	if hdr := h.push.Messages()[0].Header.Get("TTL"); hdr != "3600" {
		t.Errorf("TTL %q, want the stale guard's hour for a scheduled push", hdr)
	}
	if !h.gone(alice, task.UUID) {
		t.Error("a delivered one-off task was kept")
	}
	if errs := h.push.Errors(); len(errs) != 0 {
		t.Errorf("push service errors: %v", errs)
	}
}

func TestTickLeavesTasksThatAreNotDue(t *testing.T) {
	h := newHarness(t, Config{})
	h.subscribe(alice)
	task := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("later")}, start.Add(time.Millisecond))
	if sum := h.tick(); sum.TotalTasks != 0 || len(h.push.Pushes()) != 0 {
		t.Fatalf("a task due in 1 ms fired: %+v", sum)
	}
	h.clk.Add(time.Millisecond)
	if sum := h.tick(); sum.SuccessCount != 1 || !h.gone(alice, task.UUID) {
		t.Errorf("due task: %+v", sum)
	}
}

func TestBurstIsSegmentedAndPacedWithOneSessionID(t *testing.T) {
	h := newHarness(t, Config{})
	h.subscribe(alice)
	task := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("早上好。今天下雨！记得带伞？")}, start)
	h.tick()
	pushes := h.pushes()
	base := fmt.Sprintf("msg_task_%d@%d_", task.ID, start.UnixMilli())
	if got := strings.Join(ids(pushes), " "); got != base+"0 "+base+"1 "+base+"2" {
		t.Fatalf("ids %s", got)
	}
	for i, p := range pushes {
		if p["message"] != []string{"早上好。", "今天下雨！", "记得带伞？"}[i] || p["messageIndex"] != float64(i+1) ||
			p["totalMessages"] != float64(3) || p["sessionId"] != pushes[0]["sessionId"] {
			t.Errorf("push %d: %v", i, p)
		}
	}
	if fmt.Sprint(h.sleep.Waits()) != "[1.5s 1.5s]" {
		t.Errorf("pacing %v, want 1.5 s between pushes", h.sleep.Waits())
	}
	page, err := h.st.UnackedOutbox(t.Context(), alice, 0, 10)
	if err != nil || len(page.Entries) != 3 {
		t.Fatalf("outbox %+v, %v", page, err)
	}
	for i, e := range page.Entries {
		if e.MessageID != ids(pushes)[i] || e.TaskUUID != task.UUID || e.MessageIndex != i+1 || e.TotalMessages != 3 ||
			e.DeliveredAt.IsZero() || string(e.Payload) != string(h.push.Pushes()[i].JSON) {
			t.Errorf("outbox entry %d: %+v", i, e)
		}
	}
}

func TestPromptedTaskSendsReasoningFirstThenTheAnswer(t *testing.T) {
	h := newHarness(t, Config{})
	h.subscribe(alice)
	h.llm.Enqueue(llmtest.Reply{ReasoningContent: "用户早上要提醒。", Content: "早安！今天也加油。"})
	task := h.insert(alice, Payload{MessageType: push.TypePrompted, CompletePrompt: str("say good morning"),
		APIURL: str(h.llm.APIURL()), APIKey: str("sk-test"), PrimaryModel: str("m1"),
		LLMExtraBody: json.RawMessage(`{"top_p":0.5,"model":"ignored"}`)}, start)
	h.tick()
	pushes := h.pushes()
	base := fmt.Sprintf("msg_task_%d@%d_", task.ID, start.UnixMilli())
	if got := strings.Join(ids(pushes), " "); got != base+"reasoning "+base+"0 "+base+"1" {
		t.Fatalf("ids %s", got)
	}
	if pushes[0]["messageKind"] != "reasoning" || pushes[0]["reasoningContent"] != "用户早上要提醒。" || pushes[0]["messageIndex"] != nil ||
		pushes[1]["message"] != "早安！" || pushes[2]["message"] != "今天也加油。" || pushes[1]["sessionId"] != pushes[0]["sessionId"] ||
		pushes[1]["messageType"] != "prompted" || pushes[1]["source"] != "scheduled" {
		t.Errorf("pushes %v", pushes)
	}
	req := h.llm.Requests()[0]
	if req.Header.Get("Authorization") != "Bearer sk-test" || string(req.Body["model"]) != `"m1"` || string(req.Body["top_p"]) != "0.5" ||
		string(req.Body["temperature"]) != "0.8" || string(req.Body["messages"]) != `[{"role":"user","content":"say good morning"}]` {
		t.Errorf("LLM request %s", req.Raw)
	}
}

// Each LLM round an occurrence runs is recorded in the occurrence's session
// transcript, a failed call included, so GET /sessions/sess_task_… shows
// what the model was asked, what it answered and which pushes carried it.
func TestPromptedRoundsAreRecordedInTheOccurrencesTranscript(t *testing.T) {
	h := newHarness(t, Config{})
	h.subscribe(alice)
	h.llm.Enqueue(
		llmtest.Reply{Status: http.StatusServiceUnavailable, Body: `{"error":{"message":"busy"}}`},
		llmtest.Reply{ReasoningContent: "想一想。", Content: "早安！加油。", Usage: &llmtest.Usage{PromptTokens: 7, CompletionTokens: 5}},
	)
	task := h.insert(alice, Payload{MessageType: push.TypeAuto, CompletePrompt: str("check in"),
		APIURL: str(h.llm.APIURL()), APIKey: str("sk-test"), PrimaryModel: str("m1")}, start)
	h.tick() // the call fails: the occurrence backs off
	h.clk.Set(h.task(alice, task.UUID).RetryAfter)
	h.tick() // the retry delivers

	session := fmt.Sprintf("sess_task_%d@%d", task.ID, start.UnixMilli())
	tr, err := loop.NewTranscripts(h.st, nil).Load(t.Context(), loop.UserOwner(alice), session)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range tr.Messages {
		got = append(got, fmt.Sprintf("%s %q %s %v", m.Type, m.Text, m.Code, m.Pushes))
	}
	base := fmt.Sprintf("msg_task_%d@%d_", task.ID, start.UnixMilli())
	url, _ := llm.NormalizeAPIURL(h.llm.APIURL())
	want := []string{
		`input "check in"  []`,
		`error "AI API error: 503 Service Unavailable. Request URL: ` + url + `" LLM_CALL_FAILED []`,
		`input "check in"  []`,
		`reasoning "想一想。"  [` + base + `reasoning]`,
		`reply "早安！加油。"  [` + base + `0 ` + base + `1]`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("transcript:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if string(tr.Messages[0].Messages) != `[{"role":"user","content":"check in"}]` {
		t.Errorf("input messages %s", tr.Messages[0].Messages)
	}
	if tr.Usage.Input != 7 || tr.Usage.Output != 5 {
		t.Errorf("usage %+v", tr.Usage)
	}
}

// A burst cut short by a failure is finished on retry with the pushes it
// started: the sentences already shown stay the first answer's, and the LLM
// is not asked again (a new answer would go out under the same messageIds).
func TestRetryFinishesTheBurstItStarted(t *testing.T) {
	h := newHarness(t, Config{})
	sub := h.subscribe(alice)
	h.llm.Enqueue(
		llmtest.Reply{ReasoningContent: "plan", Content: "一。二。三。"},
		llmtest.Reply{Content: "别的回答。"}, // would be asked for on a retry that starts over
	)
	task := h.insert(alice, Payload{MessageType: push.TypePrompted, CompletePrompt: str("p"),
		APIURL: str(h.llm.APIURL()), APIKey: str("k"), PrimaryModel: str("m")}, start)
	// The reasoning and the first sentence go out, the second fails.
	h.push.Respond(sub, 2, pushtest.Response{Status: http.StatusCreated})
	h.push.Respond(sub, 1, pushtest.Response{Status: http.StatusInternalServerError})
	if sum := h.tick(); sum.FailedCount != 1 {
		t.Fatalf("first attempt %s", mustJSON(t, sum))
	}
	h.clk.Set(h.task(alice, task.UUID).RetryAfter)
	if sum := h.tick(); sum.SuccessCount != 1 {
		t.Fatalf("retry %s", mustJSON(t, sum))
	}

	if n := len(h.llm.Requests()); n != 1 {
		t.Errorf("the LLM was asked %d times, want once", n)
	}
	base := fmt.Sprintf("msg_task_%d@%d_", task.ID, start.UnixMilli())
	var got []string
	for _, p := range h.pushes() {
		got = append(got, fmt.Sprintf("%s %v", p["messageId"], p["message"]))
	}
	want := []string{base + "reasoning <nil>", base + "0 一。", base + "1 二。", base + "2 三。"}
	if !slices.Equal(got, want) {
		t.Errorf("delivered %q, want each push of the first answer once: %q", got, want)
	}
}

// A stored message's burst is built again on a retry, and the retry sends
// only the pushes an earlier attempt did not deliver, under the same ids:
// the outbox, which records each push with its delivery, says which. The
// owner edited the message in between, as the API does: the occurrence is
// committed first, and the retry sends the text it began with.
func TestRetryOfAFixedBurstSendsOnlyWhatWasNotDelivered(t *testing.T) {
	h := newHarness(t, Config{})
	sub := h.subscribe(alice)
	task := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("一。二。三。")}, start)
	h.push.Respond(sub, 1, pushtest.Response{Status: http.StatusCreated})
	h.push.Respond(sub, 1, pushtest.Response{Status: http.StatusInternalServerError})
	if sum := h.tick(); sum.FailedCount != 1 {
		t.Fatalf("first attempt %s", mustJSON(t, sum))
	}
	retryAt := h.task(alice, task.UUID).RetryAfter
	if err := h.sched.CommitOccurrence(t.Context(), h.task(alice, task.UUID)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.st.UpdatePendingTask(t.Context(), alice, task.UUID, func(t store.Task) (store.TaskUpdate, error) {
		p, _ := TaskPayload(t)
		p.UserMessage = str("改了。改了。改了。")
		raw, err := p.Encode()
		return store.TaskUpdate{Payload: raw}, err
	}); err != nil {
		t.Fatal(err)
	}
	h.clk.Set(retryAt)
	if sum := h.tick(); sum.SuccessCount != 1 || !h.gone(alice, task.UUID) {
		t.Fatalf("retry %s", mustJSON(t, sum))
	}
	base := fmt.Sprintf("msg_task_%d@%d_", task.ID, start.UnixMilli())
	if got, want := strings.Join(ids(h.pushes()), " "), base+"0 "+base+"1 "+base+"2"; got != want {
		t.Errorf("delivered %s, want each push once: %s", got, want)
	}
	for i, p := range h.pushes() {
		if want := []string{"一。", "二。", "三。"}[i]; p["message"] != want {
			t.Errorf("push %d says %v, want the committed %s", i, p["message"], want)
		}
	}
	page, err := h.st.UnackedOutbox(t.Context(), alice, 0, 10)
	if err != nil || len(page.Entries) != 3 {
		t.Fatalf("outbox %+v, %v", page, err)
	}
	for i, e := range page.Entries {
		if e.MessageID != base+strconv.Itoa(i) || e.DeliveredAt.IsZero() {
			t.Errorf("outbox entry %d: %s delivered at %v", i, e.MessageID, e.DeliveredAt)
		}
	}
}

// A burst that reached nobody starts afresh: an attempt that failed on its
// first push asks the LLM again.
func TestRetryOfABurstThatReachedNobodyStartsAfresh(t *testing.T) {
	h := newHarness(t, Config{})
	sub := h.subscribe(alice)
	h.llm.Enqueue(llmtest.Reply{Content: "旧。"}, llmtest.Reply{Content: "新。"})
	task := h.insert(alice, Payload{MessageType: push.TypePrompted, CompletePrompt: str("p"),
		APIURL: str(h.llm.APIURL()), APIKey: str("k"), PrimaryModel: str("m")}, start)
	h.push.Respond(sub, 1, pushtest.Response{Status: http.StatusInternalServerError})
	h.tick()
	h.clk.Set(h.task(alice, task.UUID).RetryAfter)
	h.tick()
	if pushes := h.pushes(); len(pushes) != 1 || pushes[0]["message"] != "新。" || len(h.llm.Requests()) != 2 {
		t.Errorf("pushes %v after %d LLM calls", pushes, len(h.llm.Requests()))
	}
}

// A fixed task has no LLM round, so nothing is recorded.
func TestFixedTaskRecordsNoTranscript(t *testing.T) {
	h := newHarness(t, Config{})
	h.subscribe(alice)
	task := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("hi")}, start)
	h.tick()
	if len(h.pushes()) != 1 {
		t.Fatalf("pushes %v", h.pushes())
	}
	_, err := loop.NewTranscripts(h.st, nil).Load(t.Context(), loop.UserOwner(alice), fmt.Sprintf("sess_task_%d@%d", task.ID, start.UnixMilli()))
	if !errors.Is(err, loop.ErrSessionNotFound) {
		t.Errorf("a fixed task has a transcript: %v", err)
	}
}

func TestRecurringTaskAdvancesOnItsWallClockAndClearsLastError(t *testing.T) {
	h := newHarness(t, Config{})
	sub := h.subscribe(alice)
	nominal := time.Date(2026, 3, 7, 13, 0, 0, 0, time.UTC) // 08:00 in New York, the day before DST
	h.clk.Set(nominal)
	task := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("早"), RecurrenceType: push.RecurrenceDaily,
		TzID: str("america/new_york")}, nominal)

	h.push.Respond(sub, 1, pushtest.Response{Status: http.StatusInternalServerError})
	sum := h.tick()
	if sum.FailedCount != 1 || sum.Details.FailedTasks[0].NextRetryAt != "2026-03-07T13:02:00.000Z" || *sum.Details.FailedTasks[0].RetryCount != 1 {
		t.Fatalf("first attempt %s", mustJSON(t, sum))
	}
	got := h.task(alice, task.UUID)
	if !got.NextSendAt.Equal(nominal) || got.RetryCount != 1 || got.LastError == nil {
		t.Fatalf("after the failure %+v: next_send_at must not move", got)
	}
	h.clk.Add(2 * time.Minute)
	sum = h.tick()
	if sum.SuccessCount != 1 || sum.Details.UpdatedRecurringTasks != 1 {
		t.Fatalf("retry %s", mustJSON(t, sum))
	}
	got = h.task(alice, task.UUID)
	if want := time.Date(2026, 3, 8, 12, 0, 0, 0, time.UTC); !got.NextSendAt.Equal(want) || got.RetryCount != 0 ||
		!got.RetryAfter.IsZero() || got.LastError != nil || !got.LeaseUntil.IsZero() {
		t.Errorf("after the retry %+v, want next %s and no error", got, want)
	}
	// Both attempts carried the same ids: the service worker shows one.
	msgs := h.push.Requests()
	var first, second map[string]any
	_ = json.Unmarshal(msgs[0].Plaintext, &first)
	_ = json.Unmarshal(msgs[1].Plaintext, &second)
	if first["messageId"] != second["messageId"] || first["messageId"] != fmt.Sprintf("msg_task_%d@%d_0", task.ID, nominal.UnixMilli()) {
		t.Errorf("retry ids %v and %v", first["messageId"], second["messageId"])
	}
}

func TestRetriesEndInFailureOrASkippedOccurrence(t *testing.T) {
	h := newHarness(t, Config{})
	sub := h.subscribe(alice)
	oneOff := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("a")}, start)
	weekly := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("b"), RecurrenceType: push.RecurrenceWeekly}, start)
	h.push.Respond(sub, 8, pushtest.Response{Status: http.StatusServiceUnavailable, Body: "overloaded"})
	waits := []time.Duration{2 * time.Minute, 4 * time.Minute, 6 * time.Minute}
	for i, wait := range waits {
		sum := h.tick()
		if sum.FailedCount != 2 || sum.Details.FailedTasks[0].Status != "" {
			t.Fatalf("attempt %d: %s", i+1, mustJSON(t, sum))
		}
		h.clk.Add(wait)
	}
	sum := h.tick()
	byID := map[int64]FailedTask{}
	for _, f := range sum.Details.FailedTasks {
		byID[f.TaskID] = f
	}
	if f := byID[oneOff.ID]; f.Status != "permanently_failed" || *f.RetryCount != 3 || !strings.Contains(f.Reason, "Web Push delivery failed") {
		t.Errorf("one-off after 4 attempts: %+v", f)
	}
	if f := byID[weekly.ID]; f.Status != "occurrence_skipped" || f.NextSendAt != "2026-06-08T09:00:00.000Z" {
		t.Errorf("weekly after 4 attempts: %+v", f)
	}
	failed := h.task(alice, oneOff.UUID)
	var le map[string]any
	_ = json.Unmarshal(failed.LastError, &le)
	if failed.Status != store.TaskFailed || failed.RetryCount != 3 || le["occurrence"] != "2026-06-01T09:00:00.000Z" || le["code"] != "PUSH_SEND_FAILED" {
		t.Errorf("failed task %+v %s", failed, failed.LastError)
	}
	skipped := h.task(alice, weekly.UUID)
	if skipped.Status != store.TaskPending || skipped.RetryCount != 0 || skipped.LastError == nil ||
		!skipped.NextSendAt.Equal(start.Add(7*24*time.Hour)) {
		t.Errorf("skipped task %+v", skipped)
	}
}

// A task whose payload cannot be read (it does not decrypt, is not JSON, or
// names no valid recurrence) fails for good at its first attempt, with the
// error recorded: it cannot read better on a retry, and with its recurrence
// unknown it must not be moved a day on forever as if it recurred.
func TestATaskWhosePayloadCannotBeReadFailsForGood(t *testing.T) {
	h := newHarness(t, Config{})
	h.subscribe(alice)
	sealedBroken := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("a")}, start)
	db, err := sql.Open("sqlite", "file:"+h.path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE tasks SET payload = '00:00:00' WHERE id = ?`, sealedBroken.ID); err != nil {
		t.Fatal(err)
	}
	uuidCounter++
	notJSON, _, err := h.st.InsertTask(t.Context(), store.NewTask{UserID: alice, UUID: fmt.Sprintf("00000000-0000-4000-8000-%012d", uuidCounter),
		MessageType: push.TypeFixed, NextSendAt: start, Payload: json.RawMessage(`{"messageType":`)})
	if err != nil {
		t.Fatal(err)
	}
	badRecurrence := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("c"), RecurrenceType: "hourly"}, start)
	reasons := map[int64]string{sealedBroken.ID: "does not decrypt", notJSON.ID: "task payload", badRecurrence.ID: `unknown recurrenceType "hourly"`}

	sum := h.tick()
	if sum.FailedCount != 3 || len(h.push.Pushes()) != 0 {
		t.Fatalf("first attempt: %s, %d pushes", mustJSON(t, sum), len(h.push.Pushes()))
	}
	for _, f := range sum.Details.FailedTasks {
		if f.Status != "permanently_failed" || !f.Permanent || *f.RetryCount != 0 || !strings.Contains(f.Reason, reasons[f.TaskID]) {
			t.Errorf("task %d: %s", f.TaskID, mustJSON(t, f))
		}
	}
	for _, task := range []store.Task{sealedBroken, notJSON, badRecurrence} {
		got := h.task(alice, task.UUID)
		var le map[string]any
		_ = json.Unmarshal(got.LastError, &le)
		if got.Status != store.TaskFailed || got.RetryCount != 0 || le["permanent"] != true ||
			le["occurrence"] != "2026-06-01T09:00:00.000Z" || !strings.Contains(fmt.Sprint(le["reason"]), reasons[task.ID]) {
			t.Errorf("task %d: %s after %d retries, last error %s", task.ID, got.Status, got.RetryCount, got.LastError)
		}
	}
}

func TestNoDeviceIsPermanentAndSpendsNoTokens(t *testing.T) {
	h := newHarness(t, Config{})
	task := h.insert(alice, Payload{MessageType: push.TypeAuto, CompletePrompt: str("hi"), APIURL: str(h.llm.APIURL()),
		APIKey: str("k"), PrimaryModel: str("m")}, start)
	sum := h.tick()
	if f := sum.Details.FailedTasks; len(f) != 1 || f[0].Status != "permanently_failed" || !f[0].Permanent ||
		f[0].Reason != "PUSH_SUBSCRIPTION_MISSING: 该用户还没有登记推送订阅（PUT /push-subscription）" {
		t.Fatalf("summary %s", mustJSON(t, sum))
	}
	if n := len(h.llm.Requests()); n != 0 {
		t.Errorf("%d LLM calls for a user without devices", n)
	}
	if got := h.task(alice, task.UUID); got.Status != store.TaskFailed || got.RetryCount != 0 {
		t.Errorf("task %+v", got)
	}
}

func TestEveryDeviceGoneIsPermanent(t *testing.T) {
	h := newHarness(t, Config{})
	sub := h.subscribe(alice)
	h.push.Unsubscribe(sub)
	task := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("x")}, start)
	sum := h.tick()
	if f := sum.Details.FailedTasks; len(f) != 1 || f[0].Status != "permanently_failed" || !f[0].Permanent {
		t.Fatalf("summary %s", mustJSON(t, sum))
	}
	if h.task(alice, task.UUID).Status != store.TaskFailed {
		t.Error("task not failed")
	}
	if devices, _ := h.st.Devices(t.Context(), alice); len(devices) != 0 {
		t.Errorf("the gone device was kept")
	}
}

func TestOneDeviceDeliveredIsSuccess(t *testing.T) {
	h := newHarness(t, Config{})
	gone := h.subscribe(alice)
	h.subscribe(alice)
	h.push.Unsubscribe(gone)
	task := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("x")}, start)
	if sum := h.tick(); sum.SuccessCount != 1 || !h.gone(alice, task.UUID) {
		t.Errorf("summary %s", mustJSON(t, sum))
	}
}

func TestStaleGuard(t *testing.T) {
	h := newHarness(t, Config{})
	h.subscribe(alice)
	late := start.Add(-61 * time.Minute)
	oneOff := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("a")}, late)
	daily := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("b"), RecurrenceType: push.RecurrenceDaily,
		TzID: str("UTC")}, late.Add(-3*24*time.Hour))
	onTime := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("c")}, start.Add(-60*time.Minute))
	sum := h.tick()
	if sum.SuccessCount != 1 || len(sum.Details.StaleTasks) != 2 || sum.FailedCount != 0 {
		t.Fatalf("summary %s", mustJSON(t, sum))
	}
	stale := map[int64]StaleTask{}
	for _, s := range sum.Details.StaleTasks {
		stale[s.TaskID] = s
	}
	if s := stale[oneOff.ID]; s.Action != "expired" || s.SkippedCount != 1 || s.NextSendAt != "" {
		t.Errorf("one-off %+v", s)
	}
	if s := stale[daily.ID]; s.Action != "fast_forwarded" || s.SkippedCount != 4 || s.NextSendAt != "2026-06-02T07:59:00.000Z" {
		t.Errorf("daily %+v", s)
	}
	if len(h.push.Pushes()) != 1 || !h.gone(alice, onTime.UUID) {
		t.Errorf("only the task exactly 60 min late is delivered; got %d pushes", len(h.push.Pushes()))
	}
	if got := h.task(alice, oneOff.UUID); got.Status != store.TaskFailed || !strings.Contains(string(got.LastError), `"reason":"stale"`) {
		t.Errorf("expired %+v %s", got, got.LastError)
	}
	if got := h.task(alice, daily.UUID); got.Status != store.TaskPending || !strings.Contains(string(got.LastError), `"skippedCount":4`) {
		t.Errorf("fast-forwarded %+v %s", got, got.LastError)
	}
}

// A crashed process left its lease behind: the task waits for the lease to
// end, then goes out with the ids the first attempt used.
func TestAnExpiredLeaseOfACrashedProcessIsDeliveredAgain(t *testing.T) {
	h := newHarness(t, Config{})
	h.subscribe(alice)
	task := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("x")}, start)
	if _, err := h.st.ClaimDueTasks(t.Context(), start, DefaultLeaseTTL, 10); err != nil { // the dead process's claim
		t.Fatal(err)
	}
	if sum := h.tick(); sum.TotalTasks != 0 {
		t.Fatalf("a leased task was claimed: %+v", sum)
	}
	h.clk.Add(DefaultLeaseTTL)
	if sum := h.tick(); sum.SuccessCount != 1 {
		t.Fatalf("after the lease: %s", mustJSON(t, sum))
	}
	if got := ids(h.pushes()); fmt.Sprint(got) != fmt.Sprintf("[msg_task_%d@%d_0]", task.ID, start.UnixMilli()) {
		t.Errorf("ids %v", got)
	}
}

func TestHeartbeatRenewsTheLeaseAndStopsWhenTheTaskIsGone(t *testing.T) {
	h := newHarness(t, Config{Heartbeat: 5 * time.Millisecond, LeaseTTL: time.Minute})
	h.subscribe(alice)
	release := make(chan struct{})
	h.llm.Enqueue(llmtest.Reply{Content: "late", Release: release})
	task := h.insert(alice, Payload{MessageType: push.TypeAuto, CompletePrompt: str("p"), APIURL: str(h.llm.APIURL()),
		APIKey: str("k"), PrimaryModel: str("m")}, start)
	done := make(chan Summary)
	go func() {
		s, _ := h.sched.Tick(context.Background())
		done <- s
	}()
	h.llm.WaitRequests(1)
	h.clk.Add(10 * time.Second)
	waitFor(t, "the lease renewed", func() bool {
		return h.task(alice, task.UUID).LeaseUntil.Equal(start.Add(10*time.Second + time.Minute))
	})
	// The owner cancels the task mid-delivery: the next renewal fails and
	// the delivery stops without sending.
	if _, err := h.st.DeleteTask(t.Context(), alice, task.UUID); err != nil {
		t.Fatal(err)
	}
	sum := <-done
	close(release)
	if sum.SuccessCount != 0 || sum.FailedCount != 0 || len(h.push.Pushes()) != 0 {
		t.Errorf("a cancelled task was delivered: %s, %d pushes", mustJSON(t, sum), len(h.push.Pushes()))
	}
}

// waitFor polls cond until it holds, failing after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestStopReleasesLeasesOfTasksItDidNotFinish(t *testing.T) {
	h := newHarness(t, Config{Concurrency: 1})
	h.subscribe(alice)
	release := make(chan struct{})
	defer close(release)
	h.llm.Enqueue(llmtest.Reply{Content: "x", Release: release})
	llmTask := h.insert(alice, Payload{MessageType: push.TypeAuto, CompletePrompt: str("p"), APIURL: str(h.llm.APIURL()),
		APIKey: str("k"), PrimaryModel: str("m")}, start)
	waiting := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("x")}, start.Add(time.Millisecond))
	h.clk.Add(time.Millisecond)
	done := make(chan Summary)
	go func() {
		s, _ := h.sched.Tick(context.Background())
		done <- s
	}()
	h.llm.WaitRequests(1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no grace period: interrupt the delivery under way
	if err := h.sched.Stop(ctx); err == nil {
		t.Error("Stop with an ended context reported a clean stop")
	}
	sum := <-done
	for _, task := range []store.Task{llmTask, waiting} {
		got := h.task(alice, task.UUID)
		if !got.LeaseUntil.IsZero() || got.RetryCount != 0 || got.LastError != nil {
			t.Errorf("task %d after Stop: %+v, want its lease released and no failure", task.ID, got)
		}
	}
	if sum.FailedCount != 0 || len(h.push.Pushes()) != 0 {
		t.Errorf("summary %s", mustJSON(t, sum))
	}
}

func TestBackgroundLoopDrainsABacklogWithinTheConcurrencyBound(t *testing.T) {
	h := newHarness(t, Config{Concurrency: 3, Tick: time.Hour})
	h.subscribe(alice)
	const n = 40
	for i := range n {
		h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str(fmt.Sprint(i))}, start)
	}
	h.sched.Start()
	// One tick an hour: only claiming again as slots free drains the backlog.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if _, err := h.push.WaitPushes(ctx, n); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every task deleted", func() bool {
		tasks, _, _ := h.st.Tasks(t.Context(), alice, "", 100, 0)
		return len(tasks) == 0
	})
}

func TestConcurrencyBoundHoldsTheClaims(t *testing.T) {
	h := newHarness(t, Config{Concurrency: 2, Tick: time.Hour})
	h.subscribe(alice)
	release := make(chan struct{})
	for range 5 {
		h.llm.Enqueue(llmtest.Reply{Content: "x", Release: release})
		h.insert(alice, Payload{MessageType: push.TypeAuto, CompletePrompt: str("p"), APIURL: str(h.llm.APIURL()),
			APIKey: str("k"), PrimaryModel: str("m")}, start)
	}
	h.sched.Start()
	h.llm.WaitRequests(2)
	tasks, _, _ := h.st.Tasks(t.Context(), alice, "", 10, 0)
	leased := 0
	for _, task := range tasks {
		if !task.LeaseUntil.IsZero() {
			leased++
		}
	}
	if leased != 2 || len(h.llm.Requests()) != 2 {
		t.Errorf("%d leased, %d LLM calls under way; want 2 and 2", leased, len(h.llm.Requests()))
	}
	close(release)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if _, err := h.push.WaitPushes(ctx, 5); err != nil {
		t.Fatal(err)
	}
}

func TestCronTaskPushesCarryCronAndFireOnConsecutiveMinutes(t *testing.T) {
	h := newHarness(t, Config{})
	h.subscribe(alice)
	task := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("tick"), RecurrenceType: push.RecurrenceCron,
		CronExpr: "*/1 * * * *"}, start)
	for minute := range 3 {
		h.clk.Set(start.Add(time.Duration(minute)*time.Minute + 300*time.Millisecond))
		if sum := h.tick(); sum.SuccessCount != 1 {
			t.Fatalf("minute %d: %s", minute, mustJSON(t, sum))
		}
		if got := h.task(alice, task.UUID); !got.NextSendAt.Equal(start.Add(time.Duration(minute+1) * time.Minute)) {
			t.Fatalf("minute %d: next %s", minute, got.NextSendAt)
		}
	}
	pushes := h.pushes()
	for i, p := range pushes {
		if p["recurrenceType"] != "cron" || p["occurrenceMs"] != float64(start.Add(time.Duration(i)*time.Minute).UnixMilli()) {
			t.Errorf("push %d: %v", i, p)
		}
	}
	if len(pushes) != 3 || pushes[0]["messageId"] == pushes[1]["messageId"] {
		t.Errorf("pushes %v", ids(pushes))
	}
}

func TestDeliverInstant(t *testing.T) {
	h := newHarness(t, Config{})
	sub := h.subscribe(alice)
	insertLeased := func(p Payload) store.Task {
		t.Helper()
		p.ContactName, p.MessageSubtype, p.RecurrenceType = "Rei", "chat", push.RecurrenceNone
		raw, _ := p.Encode()
		uuidCounter++
		task, _, err := h.st.InsertTask(t.Context(), store.NewTask{UserID: alice, UUID: fmt.Sprintf("10000000-0000-4000-8000-%012d", uuidCounter),
			MessageType: push.TypeInstant, NextSendAt: start.Add(time.Minute), Payload: raw, LeaseUntil: h.sched.LeaseEnd()})
		if err != nil {
			t.Fatal(err)
		}
		return task
	}
	ok := insertLeased(Payload{MessageType: push.TypeInstant, UserMessage: str("马上。到")})
	if sum := h.tick(); sum.TotalTasks != 0 {
		t.Fatalf("the ticker claimed a leased instant task: %+v", sum)
	}
	res, err := h.sched.DeliverInstant(t.Context(), ok)
	var ierr *InstantError
	if errors.As(err, &ierr) || res.MessagesSent != 2 || res.RetriesUsed != 0 || !h.gone(alice, ok.UUID) {
		t.Fatalf("instant = %+v, %v", res, err)
	}
	p := h.pushes()[0]
	if p["source"] != "instant" || p["messageType"] != "instant" || h.push.Messages()[0].Header.Get("TTL") != "600" {
		t.Errorf("instant push %v", p)
	}

	h.sleep.Reset()
	failing := insertLeased(Payload{MessageType: push.TypeInstant, UserMessage: str("x")})
	h.push.Respond(sub, 3, pushtest.Response{Status: http.StatusBadGateway})
	_, err = h.sched.DeliverInstant(t.Context(), failing)
	if !errors.As(err, &ierr) || ierr.Code != "PROCESSING_ERROR" || *ierr.RetriesAttempted != 2 || ierr.Permanent {
		t.Fatalf("failing instant: %+v", ierr)
	}
	if fmt.Sprint(h.sleep.Waits()) != "[1s 2s]" {
		t.Errorf("waits between attempts %v", h.sleep.Waits())
	}
	if got := h.task(alice, failing.UUID); got.Status != store.TaskFailed || got.RetryCount != 2 || got.LastError == nil {
		t.Errorf("failed instant row %+v", got)
	}

	if _, err := h.st.DeleteSubscriptions(t.Context(), alice); err != nil {
		t.Fatal(err)
	}
	h.courier.Forget(alice) // as the API does
	h.sleep.Reset()
	_, err = h.sched.DeliverInstant(t.Context(), insertLeased(Payload{MessageType: push.TypeInstant, UserMessage: str("x")}))
	if !errors.As(err, &ierr) || !ierr.Permanent || *ierr.RetriesAttempted != 0 || len(h.sleep.Waits()) != 0 {
		t.Errorf("no device: %+v after %v", ierr, h.sleep.Waits())
	}
}

func TestCleanupDeletesOldFinishedTasks(t *testing.T) {
	h := newHarness(t, Config{})
	old := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("x")}, start)
	h.tick() // no device: fails for good
	if h.task(alice, old.UUID).Status != store.TaskFailed {
		t.Fatal("not failed")
	}
	h.clk.Add(DefaultFinishedRetention)
	h.tick()
	if h.gone(alice, old.UUID) {
		t.Error("deleted at exactly seven days")
	}
	h.clk.Add(time.Millisecond)
	h.tick()
	if !h.gone(alice, old.UUID) {
		t.Error("kept after seven days")
	}
}

func TestSanitize(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"  a \n\t b  ", "a b"},
		{"AI API error: 401 Unauthorized, Bearer sk-abcdefghijklmnop used", "AI API error: 401 Unauthorized, Bearer [redacted] used"},
		{"key sk-proj-ABCDEFGHIJKLMNOP1234 leaked", "key [redacted] leaked"},
		{"token " + strings.Repeat("x", 48) + " end", "token [redacted] end"},
		{"short token abcdefgh stays", "short token abcdefgh stays"},
		{strings.Repeat("好", 600), strings.Repeat("好", 497) + "…"},
	} {
		if got := Sanitize(c.in); got != c.want {
			t.Errorf("Sanitize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestWakeAndTheNextDueTimeShortenTheTick(t *testing.T) {
	h := newHarness(t, Config{Tick: time.Hour})
	h.subscribe(alice)
	h.sched.Start()
	// Created after the loop went to sleep for an hour: Wake makes it look.
	h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("now")}, start)
	h.sched.Wake()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := h.push.WaitPushes(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// A task due shortly: the loop sleeps until then, not for the tick.
	h.clk.Set(time.Now())
	h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("soon")}, h.clk.Now().Add(50*time.Millisecond))
	h.sched.Wake()
	waitFor(t, "the loop to wait for the due time", func() bool {
		h.clk.Set(time.Now())
		return len(h.push.Pushes()) == 2
	})
}

// Issue 22, finding 9: when the write that records a delivered occurrence
// fails (here a trigger fails every delivery_log insert, as a full disk or
// a database restart would), it is retried after a wait, and once the
// database heals the occurrence is recorded: one push, no second one after
// the lease.
func TestADatabaseBlipAfterThePushDoesNotSendItAgain(t *testing.T) {
	var db *sql.DB
	var healed sync.Once
	waited := 0
	h := newHarness(t, Config{Sleep: func(ctx context.Context, d time.Duration) error {
		waited++
		healed.Do(func() {
			if _, err := db.Exec(`DROP TRIGGER blip`); err != nil {
				t.Error(err)
			}
		})
		return ctx.Err()
	}})
	db, err := sql.Open("sqlite", "file:"+h.path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	h.subscribe(alice)
	task := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("tea")}, start)
	if _, err := db.Exec(`CREATE TRIGGER blip BEFORE INSERT ON delivery_log BEGIN SELECT RAISE(ABORT, 'injected write failure'); END`); err != nil {
		t.Fatal(err)
	}
	sum := h.tick()
	if sum.FailedCount != 0 || sum.SuccessCount != 1 {
		t.Fatalf("summary %s", mustJSON(t, sum))
	}
	if waited == 0 {
		t.Fatal("the write never failed: the test did not inject its blip")
	}
	if !h.gone(alice, task.UUID) {
		t.Fatal("the delivered one-time task is still there: its lease would run out and it would be sent again")
	}
	h.clk.Add(DefaultLeaseTTL + time.Minute)
	h.tick()
	if n := len(h.push.Pushes()); n != 1 {
		t.Fatalf("%d pushes, want 1", n)
	}
}

// Without Lookahead, while tasks keep falling due, the loop claims
// TrickleWait after the next one's time, so one claim takes the tasks of
// that span; after a quiet spell it claims at the time itself.
func TestTheLoopGroupsATrickleByTrickleWait(t *testing.T) {
	h := newHarness(t, Config{Tick: time.Hour, TrickleWait: 7 * time.Millisecond, Lookahead: -1})
	h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("soon")}, h.clk.Now().Add(10*time.Millisecond))
	if got := h.sched.untilNextDue(time.Hour, false); got != 10*time.Millisecond {
		t.Errorf("after a quiet spell the loop waits %s, want 10ms", got)
	}
	if got := h.sched.untilNextDue(time.Hour, true); got != 17*time.Millisecond {
		t.Errorf("in a trickle the loop waits %s, want 17ms", got)
	}
	if got := h.sched.untilNextDue(5*time.Millisecond, true); got != 5*time.Millisecond {
		t.Errorf("the wait %s passed the tick of 5ms", got)
	}
}

// A delivery gives its slot back once its pushes are out: while one task's
// outcome waits to be written (here a failing write waits to be retried),
// the only slot already delivers the next task.
func TestTheNextTaskIsSentWhileTheLastOneCommits(t *testing.T) {
	entered, release := make(chan struct{}, 4), make(chan struct{})
	h := newHarness(t, Config{Concurrency: 1, Tick: time.Hour, Sleep: func(ctx context.Context, d time.Duration) error {
		select {
		case entered <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return ctx.Err()
	}})
	db, err := sql.Open("sqlite", "file:"+h.path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // before the harness stops the scheduler: the held writes then succeed
		_, _ = db.Exec(`DROP TRIGGER IF EXISTS blip`)
		_ = db.Close()
		close(release)
	})
	h.subscribe(alice)
	h.subscribe(bob)
	if _, err := db.Exec(`CREATE TRIGGER blip BEFORE INSERT ON delivery_log BEGIN SELECT RAISE(ABORT, 'injected write failure'); END`); err != nil {
		t.Fatal(err)
	}
	h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("first")}, start)
	h.sched.Start()
	<-entered // alice's push is out; its outcome waits for a retry
	h.insert(bob, Payload{MessageType: push.TypeFixed, UserMessage: str("second")}, start)
	h.sched.Wake()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := h.push.WaitPushes(ctx, 2); err != nil {
		t.Fatalf("bob's task waited for alice's outcome to be written: %v", err)
	}
}

// deviceReads counts the device reads that reach the store: one user's
// (Devices) and many users' at once (DevicesOf).
type deviceReads struct {
	*store.Store
	one, many atomic.Int32
}

func (d *deviceReads) Devices(ctx context.Context, userID string) ([]push.Device, error) {
	d.one.Add(1)
	return d.Store.Devices(ctx, userID)
}

func (d *deviceReads) DevicesOf(ctx context.Context, userIDs []string) (map[string][]push.Device, error) {
	d.many.Add(1)
	return d.Store.DevicesOf(ctx, userIDs)
}

// The background loop reads the devices of a claim's users in one read
// before their tasks start, not one read per user as each first pushes.
func TestAClaimReadsItsUsersDevicesAtOnce(t *testing.T) {
	h := newHarness(t, Config{Tick: time.Hour})
	reads := &deviceReads{Store: h.st}
	h.courierReading(reads)
	users := []string{"alice", "bob", "carol"}
	for _, u := range users {
		h.subscribe(u)
		h.insert(u, Payload{MessageType: push.TypeFixed, UserMessage: str("hi " + u)}, start)
	}
	h.sched.Start()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	pushes, err := h.push.WaitPushes(ctx, len(users))
	if err != nil {
		t.Fatal(err)
	}
	if len(pushes) != len(users) {
		t.Errorf("%d pushes, want one per user", len(pushes))
	}
	if one, many := reads.one.Load(), reads.many.Load(); one != 0 || many != 1 {
		t.Errorf("devices read %d times one user at a time and %d times at once; want 0 and 1", one, many)
	}
}

// TestACompletionLingersOnlyWhileAQuarterOfTheWritingTokensAreFree: a
// delivered occurrence's completion waits in the store's batch for company
// (store.Unhurried) while at most three quarters of the tokens of writing
// are held, and goes at once past that, so lingering completions never hold
// every token the next deliveries' handOff needs; one awaited (Tick's, an
// instant task's) never waits.
func TestACompletionLingersOnlyWhileAQuarterOfTheWritingTokensAreFree(t *testing.T) {
	h := newHarness(t, Config{Concurrency: 8})
	for held := range 9 {
		if held > 0 {
			h.sched.writing <- struct{}{}
		}
		if got, want := driver.IsUnhurried(h.sched.completionContext(context.Background(), false)), held <= 6; got != want {
			t.Errorf("%d of 8 tokens held: unhurried %v, want %v", held, got, want)
		}
		if driver.IsUnhurried(h.sched.completionContext(context.Background(), true)) {
			t.Errorf("%d of 8 tokens held: an awaited completion is unhurried", held)
		}
	}
	for range cap(h.sched.writing) {
		<-h.sched.writing // Stop waits for the writes under way
	}
}
