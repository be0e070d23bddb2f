package e2e_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"amsg/llm/llmtest"
	"amsg/web/browsertest"
)

// useModel stores LLM settings pointing at the fake LLM in the page's
// browser and reloads it at hash.
func useModel(t *testing.T, p *browsertest.Page, base, hash string, llm *llmtest.Server) {
	t.Helper()
	settings, err := json.Marshal(map[string]string{"apiUrl": llm.APIURL(), "apiKey": "sk-test", "model": "test-model", "contactName": "Rei"})
	if err != nil {
		t.Fatal(err)
	}
	seed(t, p, base, hash, map[string]string{"amsg.llm": string(settings)})
}

// countShownNotifications makes the worker record the tag of every
// showNotification call in self.__shown. Tags replace each other in the
// notification list, so only the calls tell a second notification apart.
// The worker stays alive while the harness's DevTools session is attached.
func countShownNotifications(p *browsertest.Page) {
	p.WorkerEval(`(() => {
		self.__shown = [];
		const show = self.registration.showNotification.bind(self.registration);
		self.registration.showNotification = (title, options) => { self.__shown.push(options && options.tag); return show(title, options); };
		return true;
	})()`, nil)
}

// threadItem is one rendered item of the open thread.
type threadItem struct {
	ID    string `json:"id"`
	Class string `json:"class"`
	Text  string `json:"text"`
	Open  bool   `json:"open"`
}

const readThreadJS = `[...document.querySelectorAll('.messages [data-id]')].map((el) => ({
	id: el.dataset.id, class: el.className, open: el.open === true,
	text: (el.querySelector('.bubble, .reasoning-text') || el).textContent,
}))`

// toolCall is a tool call as its card shows it.
type toolCall struct {
	State  string `json:"state"` // the class: "tool-call done", …
	Result string `json:"result"`
}

func firstToolCall(p *browsertest.Page) toolCall {
	var c toolCall
	p.Eval(`(() => {
		const call = document.querySelector('.tool-card .tool-call');
		const result = call.querySelector('pre');
		return { state: call.className, result: result ? result.textContent : '' };
	})()`, &c)
	return c
}

// pushIDs returns the messageIds and kinds of the pushes the fake push
// service decrypted.
func pushIDs(t *testing.T, srv *server, n int) (ids []string, kinds []string, plaintexts []string) {
	t.Helper()
	srv.waitPush(t, n)
	for _, p := range srv.Push.Pushes() {
		var m struct {
			MessageID   string `json:"messageId"`
			MessageKind string `json:"messageKind"`
			SessionID   string `json:"sessionId"`
		}
		if err := json.Unmarshal(p.JSON, &m); err != nil {
			t.Fatalf("push %s: %v", p.JSON, err)
		}
		ids, kinds, plaintexts = append(ids, m.MessageID), append(kinds, m.MessageKind), append(plaintexts, string(p.JSON))
	}
	return ids, kinds, plaintexts
}

// TestChatToolLoopEndToEnd: the model thinks and asks for a browser tool;
// the page shows the reasoning (collapsed) and the tool card, runs the
// tool, resumes the loop with /continue on its own, and shows the answer.
// Every SSE payload has its Web Push backup with the same messageId, and a
// backup delivered after the page bridged the payload shows no second
// notification.
func TestChatToolLoopEndToEnd(t *testing.T) {
	llm := llmtest.NewServer(t)
	llm.Enqueue(
		llmtest.Reply{ReasoningContent: "The user wants the local time. I should ask the browser.",
			ToolCalls: []llmtest.ToolCall{{ID: "call_time", Name: "get_current_time", Arguments: "{}"}}},
		llmtest.Reply{Content: "Good evening! It is time to wind down."},
	)
	srv, _, p := newDevicePage(t)
	useModel(t, p, srv.URL, "#/chat/new", llm)
	p.WaitFor(`document.querySelector('.thread-empty') && !document.querySelector('.composer .send').disabled`)
	countShownNotifications(p)

	p.Eval(`(() => {
		const input = document.getElementById('composer-input');
		input.value = 'What time is it where I am?';
		input.form.requestSubmit();
	})()`, nil)
	p.WaitFor(`document.querySelectorAll('.msg.assistant .bubble').length === 2 && !document.querySelector('.composer .send.stop')`)

	thread := pageShowsTheToolLoop(t, p)
	modelSawTheToolLoop(t, llm)
	backupsStayQuiet(t, srv, p, thread)
}

// pageShowsTheToolLoop checks the page: the question, the reasoning folded
// away, the tool that ran, the answer in two bubbles, nothing else. It
// returns the thread.
func pageShowsTheToolLoop(t *testing.T, p *browsertest.Page) []threadItem {
	t.Helper()
	var thread []threadItem
	p.Eval(readThreadJS, &thread)
	var classes []string
	for _, it := range thread {
		classes = append(classes, it.Class)
	}
	wantClasses := []string{"msg user", "reasoning", "tool-card", "msg assistant", "msg assistant"}
	if !slices.Equal(classes, wantClasses) {
		t.Fatalf("thread %+v, want items %q", thread, wantClasses)
	}
	if thread[0].Text != "What time is it where I am?" || thread[1].Open ||
		thread[1].Text != "The user wants the local time. I should ask the browser." ||
		thread[3].Text != "Good evening!" || thread[4].Text != "It is time to wind down." {
		t.Errorf("thread %+v", thread)
	}
	tool := firstToolCall(p)
	if tool.State != "tool-call done" || !strings.Contains(tool.Result, `"iso"`) {
		t.Errorf("tool call %+v, want done with the time", tool)
	}
	return thread
}

// modelSawTheToolLoop checks the model's two requests: the first has the
// question and the browser's tools; the second, made by /continue, the
// history the server restored with the browser's result.
func modelSawTheToolLoop(t *testing.T, llm *llmtest.Server) {
	t.Helper()
	reqs := llm.WaitRequests(2)
	var first struct {
		Messages []map[string]any `json:"messages"`
		Tools    []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(reqs[0].Raw, &first); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range first.Tools {
		names = append(names, tl.Function.Name)
	}
	if len(first.Messages) != 1 || first.Messages[0]["content"] != "What time is it where I am?" || !slices.Contains(names, "get_current_time") {
		t.Errorf("first LLM request: messages %v, tools %q", first.Messages, names)
	}
	var second struct {
		Messages []struct {
			Role       string `json:"role"`
			Content    any    `json:"content"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(reqs[1].Raw, &second); err != nil {
		t.Fatal(err)
	}
	if m := second.Messages; len(m) != 3 || m[0].Role != "user" || m[1].Role != "assistant" || len(m[1].ToolCalls) != 1 ||
		m[1].ToolCalls[0].ID != "call_time" || m[2].Role != "tool" || m[2].ToolCallID != "call_time" ||
		!strings.Contains(m[2].Content.(string), `"iso"`) {
		t.Errorf("second LLM request messages %s", reqs[1].Body["messages"])
	}
}

// backupsStayQuiet checks the backups: one Web Push per SSE payload of
// thread, with its messageId, each a duplicate the worker neither shows
// nor renders again.
func backupsStayQuiet(t *testing.T, srv *server, p *browsertest.Page, thread []threadItem) {
	t.Helper()
	ids, kinds, plaintexts := pushIDs(t, srv, 4)
	var sseIDs []string
	for _, it := range thread[1:] {
		sseIDs = append(sseIDs, it.ID)
	}
	if !slices.Equal(ids, sseIDs) || !slices.Equal(kinds, []string{"reasoning", "tool_request", "content", "content"}) {
		t.Fatalf("pushes %q (%q), want the SSE payloads %q", ids, kinds, sseIDs)
	}
	// The page handed every payload to the worker first...
	quoted, _ := json.Marshal(ids)
	p.WaitForWorker(`Promise.all(` + string(quoted) + `.map((id) => self.__amsgTest.deliveryRecord(id)))
		.then((records) => records.every((r) => r && r.source === 'sse'))`)
	// ...so each backup is a duplicate. The page is visible and showed the
	// reply itself: the bridged copies said when-hidden, and that policy
	// keeps the backups quiet too, however often they arrive.
	deliverPushes(p, plaintexts...)
	deliverPushes(p, plaintexts...)
	var shown []string
	p.WorkerEval(`self.__shown`, &shown)
	if len(shown) != 0 {
		t.Errorf("backups of a reply on a visible page showed notifications for %q", shown)
	}
	// Nothing was rendered twice.
	var after []threadItem
	p.Eval(readThreadJS, &after)
	if len(after) != len(thread) {
		t.Errorf("after the backups the thread has %d items, want %d", len(after), len(thread))
	}
}

// runTimeZoneRound runs, as another device of userID would, an /instant
// round in which the model asks for the get_timezone tool (call_tz), then
// the /continue that answers it; llm scripts the model.
func runTimeZoneRound(t *testing.T, srv *server, userID string, llm *llmtest.Server, session string) {
	t.Helper()
	common := map[string]any{"contactName": "Rei", "apiUrl": llm.APIURL(), "apiKey": "sk-test", "primaryModel": "test-model", "sessionId": session}
	with := func(extra map[string]any) map[string]any {
		m := maps.Clone(common)
		maps.Copy(m, extra)
		return m
	}
	postEncrypted(t, srv, userID, "instant", with(map[string]any{
		"messages": []any{map[string]any{"role": "user", "content": "Which time zone am I in?"}},
		"tools":    []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_timezone", "parameters": map[string]any{"type": "object"}}}},
	}))
	postEncrypted(t, srv, userID, "continue", with(map[string]any{
		"iteration": 1,
		"messages":  []any{map[string]any{"role": "tool", "tool_call_id": "call_tz", "content": `{"timeZone":"Asia/Tokyo"}`}},
	}))
}

// sseFrame is one frame of an /instant or /continue answer.
type sseFrame struct {
	Event string
	Data  string
}

// postEncrypted POSTs body to path for userID with the standard's request
// encryption, as another device of the user would, and returns the frames
// of the event stream it answers.
func postEncrypted(t *testing.T, srv *server, userID, path string, body any) []sseFrame {
	t.Helper()
	plaintext, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	envelope, err := json.Marshal(srv.Store.Keyring().UserKey(userID).Seal(plaintext))
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/api/v1/"+path, bytes.NewReader(envelope))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("X-User-Id", userID)
	req.Header.Set("X-Payload-Encrypted", "true")
	req.Header.Set("X-Encryption-Version", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s", path, resp.Status)
	}
	var frames []sseFrame
	var f sseFrame
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if f.Event != "" {
				frames = append(frames, f)
			}
			f = sseFrame{}
		case strings.HasPrefix(line, "event: "):
			f.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			f.Data = strings.TrimPrefix(line, "data: ")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(frames) == 0 || frames[len(frames)-1].Event != "done" {
		t.Fatalf("%s answered %+v, want frames ending with done", path, frames)
	}
	return frames
}

// TestNotificationOpensASessionStartedElsewhere: another device of the
// user runs a tool loop; this browser's page is closed when the answer
// arrives. The notification's click opens #/chat/<sessionId> in a new
// window, which fills the conversation from the server: the question and
// the tool results from the transcript, the rest from the outbox.
func TestNotificationOpensASessionStartedElsewhere(t *testing.T) {
	llm := llmtest.NewServer(t)
	llm.Enqueue(
		llmtest.Reply{ReasoningContent: "I need the user's time zone.",
			ToolCalls: []llmtest.ToolCall{{ID: "call_tz", Name: "get_timezone", Arguments: "{}"}}},
		llmtest.Reply{Content: "You are on Tokyo time! It is nine hours ahead of UTC."},
	)
	srv, b, p := newDevicePage(t)
	id := userID(t, p)
	p.Navigate("about:blank") // the page is closed

	const session = "sess_elsewhere_1"
	runTimeZoneRound(t, srv, id, llm, session)
	ids, kinds, plaintexts := pushIDs(t, srv, 4)
	if !slices.Equal(kinds, []string{"reasoning", "tool_request", "content", "content"}) {
		t.Fatalf("pushes %q", kinds)
	}
	last := len(ids) - 1

	// The answer's push reaches the worker with no window open: a
	// notification, whose click opens a new window on the session.
	deliverPushes(p, plaintexts[last])
	var click struct {
		URL       string  `json:"url"`
		ClientURL *string `json:"clientURL"`
	}
	p.WorkerEval(`self.registration.getNotifications({ tag: `+strconv.Quote(ids[last])+` })
		.then((ns) => self.__amsgTest.planClick(ns[0].data))`, &click)
	if click.URL != srv.URL+"/#/chat/"+session || click.ClientURL != nil {
		t.Fatalf("a click would go to %+v, want a new window on %s/#/chat/%s", click, srv.URL, session)
	}
	w, _ := openPage(t, b, srv, "#/chat/"+session)
	w.WaitFor(`document.querySelectorAll('.msg.assistant .bubble').length === 2 && document.querySelector('.msg.user')`)
	var thread []threadItem
	w.Eval(readThreadJS, &thread)
	var classes, texts []string
	for _, it := range thread {
		classes, texts = append(classes, it.Class), append(texts, it.Text)
	}
	wantClasses := []string{"msg user", "reasoning", "tool-card", "msg assistant", "msg assistant"}
	if !slices.Equal(classes, wantClasses) || texts[0] != "Which time zone am I in?" || texts[1] != "I need the user's time zone." ||
		texts[3] != "You are on Tokyo time!" || texts[4] != "It is nine hours ahead of UTC." {
		t.Fatalf("the new window shows %+v", thread)
	}
	if thread[3].ID != ids[last-1] || thread[4].ID != ids[last] {
		t.Errorf("answer bubbles %q, want the pushes %q", []string{thread[3].ID, thread[4].ID}, ids[last-1:])
	}
	tool := firstToolCall(w)
	if tool.State != "tool-call done" || !strings.Contains(tool.Result, "Asia/Tokyo") {
		t.Errorf("tool call %+v, want done with the browser's result", tool)
	}
	var title string
	w.Eval(`document.querySelector('.conversation[aria-current=page] strong').textContent`, &title)
	if title != "Which time zone am I in?" {
		t.Errorf("the conversation is listed as %q", title)
	}
}
