package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"amsg/llm"
	"amsg/llm/llmtest"
	"amsg/push"
	"amsg/push/clocktest"
	"amsg/push/errcode"
	"amsg/store/storetest"
)

// testKey is the API key the tests send; testPolicy lets the client reach
// the fake LLM on loopback.
const testKey = "sk-test-0123456789"

var testPolicy = llm.URLPolicy{AllowPrivate: true}

const owner = Owner("550e8400-e29b-41d4-a716-446655440000")

// agentFixture is an Agent on a fresh store, calling a fake LLM.
type agentFixture struct {
	agent *Agent
	llm   *llmtest.Server
}

func newAgentFixture(t *testing.T, cfg AgentConfig) *agentFixture {
	t.Helper()
	model := llmtest.NewServer(t)
	cfg.Client = llm.NewClient(llm.Config{Policy: testPolicy})
	cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	cfg.Transcripts = NewTranscripts(storetest.New(t), cfg.Now)
	return &agentFixture{agent: NewAgent(cfg), llm: model}
}

func (f *agentFixture) call(messages string) llm.Request {
	return llm.Request{APIURL: f.llm.APIURL(), APIKey: testKey, Model: "m", Messages: json.RawMessage(messages),
		Tools: json.RawMessage(`[{"type":"function","function":{"name":"get_time","parameters":{"type":"object"}}}]`)}
}

func (f *agentFixture) start(t *testing.T, sessionID, messages string) *Run {
	t.Helper()
	run, err := f.agent.Start(t.Context(), Start{Owner: owner, SessionID: sessionID, Call: f.call(messages),
		Presentation: Presentation{ContactName: "Rei"}})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func (f *agentFixture) resume(ctx context.Context, sessionID string, iteration int, messages string) (*Run, error) {
	call := f.call(messages)
	call.Tools = nil // the session's
	return f.agent.Resume(ctx, Resume{Owner: owner, SessionID: sessionID, Iteration: iteration, Call: call,
		Presentation: Presentation{ContactName: "Rei"}})
}

// collect is an Emit that records the encoded pushes.
type collect struct {
	mu     sync.Mutex
	pushes []string
	each   chan string // when not nil, gets every push as it is emitted
	fail   func(p push.Push) error
}

func (c *collect) emit(p push.Push) error {
	if c.fail != nil {
		if err := c.fail(p); err != nil {
			return err
		}
	}
	b, err := push.Encode(p)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.pushes = append(c.pushes, string(b))
	c.mu.Unlock()
	if c.each != nil {
		c.each <- string(b)
	}
	return nil
}

// summary reduces a push to kind, index/total and its text.
func summary(raw string) string {
	var p map[string]any
	_ = json.Unmarshal([]byte(raw), &p)
	switch p["messageKind"] {
	case "content":
		return fmt.Sprintf("content %v/%v %v", p["messageIndex"], p["totalMessages"], p["message"])
	case "reasoning":
		return "reasoning " + p["reasoningContent"].(string)
	case "tool_request":
		b, _ := json.Marshal(p["toolCalls"])
		return "tool_request " + string(b)
	case "error":
		return fmt.Sprintf("error %v %v", p["code"], p["iteration"])
	}
	return raw
}

func summaries(pushes []string) []string {
	out := make([]string, len(pushes))
	for i, p := range pushes {
		out[i] = summary(p)
	}
	return out
}

func TestAgentPushesEachSentenceOnceTheNextHasBegun(t *testing.T) {
	f := newAgentFixture(t, AgentConfig{})
	st := f.llm.Stream()
	run := f.start(t, "s", `[{"role":"user","content":"hi"}]`)
	c := &collect{each: make(chan string, 10)}
	done := make(chan Outcome, 1)
	go func() {
		out, err := run.Execute(context.Background(), c.emit)
		if err != nil {
			t.Error(err)
		}
		done <- out
	}()
	next := func() string {
		select {
		case p := <-c.each:
			return summary(p)
		case <-time.After(30 * time.Second):
			t.Fatal("no push")
			return ""
		}
	}
	none := func() {
		t.Helper()
		select {
		case p := <-c.each:
			t.Fatalf("unexpected push %s", summary(p))
		default:
		}
	}

	st.Reasoning("想一想")
	none() // reasoning may go on
	st.Content("你好")
	if got := next(); got != "reasoning 想一想" {
		t.Fatalf("first push %q, want the reasoning as soon as content begins", got)
	}
	st.Content("。")
	none() // complete only once a character follows
	st.Content(" ")
	none() // complete, but whether it is the last is not known yet
	st.Content("今")
	if got := next(); got != "content 1/2 你好。" {
		t.Fatalf("got %q", got)
	}
	st.Content("天好！明天见！")
	if got := next(); got != "content 2/3 今天好！" {
		t.Fatalf("got %q", got)
	}
	none()
	st.Send(llmtest.Chunk{Usage: &llmtest.Usage{PromptTokens: 5, CompletionTokens: 9}})
	st.Done()
	if got := next(); got != "content 3/3 明天见！" {
		t.Fatalf("got %q", got)
	}
	out := <-done
	if out.Status != StatusFinished || out.MessagesSent != 3 || out.SessionID != "s" {
		t.Errorf("outcome %+v", out)
	}

	tr, err := f.agent.Transcripts().Load(t.Context(), owner, "s")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range tr.Messages {
		got = append(got, fmt.Sprintf("%s %q pushes=%d tokens=%d", m.Type, m.Text, len(m.Pushes), m.Usage.Total()))
	}
	want := []string{`input "hi" pushes=0 tokens=0`, `reasoning "想一想" pushes=1 tokens=0`, `reply "你好。 今天好！明天见！" pushes=3 tokens=14`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("transcript:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestAgentPushIDsAndFields(t *testing.T) {
	f := newAgentFixture(t, AgentConfig{})
	f.llm.Enqueue(llmtest.Reply{Content: "<think>plan</think>Hello! Bye."})
	run, err := f.agent.Start(t.Context(), Start{Owner: owner, SessionID: "sess_x", Call: f.call(`[{"role":"user","content":"hi"}]`),
		Presentation: Presentation{ContactName: "Rei", AvatarURL: json.RawMessage(`"data:image/png;base64,AAAA"`), Metadata: json.RawMessage(`{"k":1}`)}})
	if err != nil {
		t.Fatal(err)
	}
	c := &collect{}
	if _, err := run.Execute(t.Context(), c.emit); err != nil {
		t.Fatal(err)
	}
	ts := regexp.MustCompile(`"timestamp":"[^"]+"`)
	id := regexp.MustCompile(`msg_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}_`)
	var got []string
	for _, p := range c.pushes {
		got = append(got, id.ReplaceAllString(ts.ReplaceAllString(p, `"timestamp":"T"`), "msg_ID_"))
	}
	want := []string{
		`{"messageKind":"reasoning","messageType":"instant","source":"instant","messageId":"msg_ID_instant_reasoning","sessionId":"sess_x","timestamp":"T","reasoningContent":"plan","title":"From Rei","contactName":"Rei","avatarUrl":null,"messageSubtype":"chat","metadata":{"k":1}}`,
		`{"messageKind":"content","messageType":"instant","source":"instant","messageId":"msg_ID_instant_0","sessionId":"sess_x","timestamp":"T","message":"Hello!","title":"From Rei","contactName":"Rei","avatarUrl":null,"messageSubtype":"chat","messageIndex":1,"totalMessages":2,"taskId":null,"metadata":{"k":1}}`,
		`{"messageKind":"content","messageType":"instant","source":"instant","messageId":"msg_ID_instant_1","sessionId":"sess_x","timestamp":"T","message":"Bye.","title":"From Rei","contactName":"Rei","avatarUrl":null,"messageSubtype":"chat","messageIndex":2,"totalMessages":2,"taskId":null,"metadata":{"k":1}}`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pushes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// toolLoop runs /instant with a get_time tool call, then returns.
func toolLoop(t *testing.T, f *agentFixture, sessionID string) []string {
	t.Helper()
	f.llm.Enqueue(llmtest.Reply{ReasoningContent: "need the time", ToolCalls: []llmtest.ToolCall{{ID: "call_1", Name: "get_time", Arguments: `{"tz":"UTC"}`}},
		Usage: &llmtest.Usage{PromptTokens: 10, CompletionTokens: 4, ReasoningTokens: 2}})
	c := &collect{}
	out, err := f.start(t, sessionID, `[{"role":"system","content":"be brief"},{"role":"user","content":"what time is it?"}]`).Execute(t.Context(), c.emit)
	if err != nil || out.Status != StatusToolRequested || out.Iteration != 0 || out.MessagesSent != 1 {
		t.Fatalf("instant round = %+v, %v", out, err)
	}
	return summaries(c.pushes)
}

func TestAgentToolLoopWithResultsOnly(t *testing.T) {
	f := newAgentFixture(t, AgentConfig{})
	if got := toolLoop(t, f, "s"); !reflect.DeepEqual(got, []string{
		"reasoning need the time",
		`tool_request [{"function":{"arguments":"{\"tz\":\"UTC\"}","name":"get_time"},"id":"call_1","type":"function"}]`,
	}) {
		t.Fatalf("instant pushes %q", got)
	}

	f.llm.Enqueue(llmtest.Reply{ReasoningContent: "got it", Content: "现在是中午。",
		Usage: &llmtest.Usage{PromptTokens: 20, CachedTokens: 10, CompletionTokens: 5}})
	run, err := f.resume(t.Context(), "s", 1, `[{"role":"tool","tool_call_id":"call_1","content":"12:00"}]`)
	if err != nil {
		t.Fatal(err)
	}
	c := &collect{}
	out, err := run.Execute(t.Context(), c.emit)
	if err != nil || out.Status != StatusFinished || out.Iteration != 1 {
		t.Fatalf("continue round = %+v, %v", out, err)
	}
	if got := summaries(c.pushes); !reflect.DeepEqual(got, []string{"reasoning got it", "content 1/1 现在是中午。"}) {
		t.Errorf("continue pushes %q", got)
	}
	if !strings.Contains(c.pushes[0], `_iter_1_reasoning"`) || !strings.Contains(c.pushes[1], `_iter_1_0"`) {
		t.Errorf("continue push ids: %q", c.pushes)
	}

	// The second call got the restored history and the session's tools.
	req := f.llm.Requests()[1]
	var history []map[string]any
	_ = json.Unmarshal(req.Body["messages"], &history)
	var roles []string
	for _, m := range history {
		roles = append(roles, fmt.Sprint(m["role"]))
	}
	if strings.Join(roles, ",") != "system,user,assistant,tool" || history[2]["reasoning_content"] != "need the time" ||
		history[3]["tool_call_id"] != "call_1" || history[3]["content"] != "12:00" || !strings.Contains(string(req.Body["tools"]), "get_time") {
		t.Errorf("restored request: messages %s tools %s", req.Body["messages"], req.Body["tools"])
	}
	checkResultsOnlyTranscript(t, f)
}

// checkResultsOnlyTranscript checks the transcript of
// TestAgentToolLoopWithResultsOnly's two rounds: messages, calls, results
// and usage.
func checkResultsOnlyTranscript(t *testing.T, f *agentFixture) {
	t.Helper()
	tr, err := f.agent.Transcripts().Load(t.Context(), owner, "s")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range tr.Messages {
		got = append(got, fmt.Sprintf("%d %s it=%d pushes=%d in=%d cached=%d out=%d reasoning=%d",
			m.Seq, m.Type, m.Iteration, len(m.Pushes), m.Usage.Input, m.Usage.Cached, m.Usage.Output, m.Usage.Reasoning))
	}
	want := []string{
		"1 input it=0 pushes=0 in=0 cached=0 out=0 reasoning=0",
		"2 reasoning it=0 pushes=1 in=0 cached=0 out=0 reasoning=0",
		"3 tool-calls it=0 pushes=1 in=10 cached=0 out=4 reasoning=2",
		"4 tool-results it=1 pushes=0 in=0 cached=0 out=0 reasoning=0",
		"5 reasoning it=1 pushes=1 in=0 cached=0 out=0 reasoning=0",
		"6 reply it=1 pushes=1 in=20 cached=10 out=5 reasoning=0",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("transcript:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	calls, results := tr.Messages[2].Calls, tr.Messages[3].Results
	if len(calls) != 1 || calls[0].ID != "call_1" || calls[0].Name != "get_time" || string(calls[0].Args) != `{"tz":"UTC"}` ||
		len(results) != 1 || results[0].CallID != "call_1" || results[0].Name != "get_time" || string(results[0].Output) != `"12:00"` {
		t.Errorf("calls %+v results %+v", calls, results)
	}
	if tr.Usage.Total() != 39 {
		t.Errorf("session usage %+v", tr.Usage)
	}
}

func TestAgentResumeConflicts(t *testing.T) {
	f := newAgentFixture(t, AgentConfig{})
	toolLoop(t, f, "s")
	result := `[{"role":"tool","tool_call_id":"call_1","content":"12:00"}]`
	for _, c := range []struct {
		name, session string
		iteration     int
		messages      string
		conflict      bool
		wantNotFound  bool
	}{
		{"unknown session", "nope", 1, result, false, true},
		{"wrong iteration", "s", 2, result, true, false},
		{"unknown call", "s", 1, `[{"role":"tool","tool_call_id":"call_9","content":"x"}]`, false, false},
		{"answered twice", "s", 1, `[{"role":"tool","tool_call_id":"call_1","content":"x"},{"role":"tool","tool_call_id":"call_1","content":"y"}]`, false, false},
	} {
		_, err := f.resume(t.Context(), c.session, c.iteration, c.messages)
		var ce *ContinueError
		switch {
		case c.wantNotFound:
			if !errors.Is(err, ErrSessionNotFound) {
				t.Errorf("%s: %v, want ErrSessionNotFound", c.name, err)
			}
		case !errors.As(err, &ce) || ce.Conflict != c.conflict:
			t.Errorf("%s: %v, want a ContinueError with Conflict %v", c.name, err, c.conflict)
		}
	}

	// Concurrent claims of the same iteration: exactly one wins.
	const n = 6
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { _, errs[i] = f.resume(t.Context(), "s", 1, result) })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		var ce *ContinueError
		switch {
		case err == nil:
			won++
		case !errors.As(err, &ce) || !ce.Conflict:
			t.Errorf("unexpected %v", err)
		}
	}
	if won != 1 {
		t.Errorf("%d claims won, want 1", won)
	}
}

// A /continue whose round never ends (the process died in it) leaves its
// iteration claimed. The claim holds while the round could still be
// running; then a retry takes the iteration over and its results replace
// the dead round's. A restarted server takes such a claim over at once.
func TestAgentRetakesAnAbandonedClaim(t *testing.T) {
	clock := clocktest.New(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	now, advance := clock.Now, clock.Add
	result := `[{"role":"tool","tool_call_id":"call_1","content":"12:00"}]`
	conflict := func(t *testing.T, err error) {
		t.Helper()
		if ce := (*ContinueError)(nil); !errors.As(err, &ce) || !ce.Conflict {
			t.Fatalf("resume = %v, want a conflict", err)
		}
	}

	t.Run("after the claim timeout", func(t *testing.T) {
		f := newAgentFixture(t, AgentConfig{ClaimTimeout: time.Minute, Now: now})
		toolLoop(t, f, "s")
		if _, err := f.resume(t.Context(), "s", 1, `[{"role":"tool","tool_call_id":"call_1","content":"11:59"}]`); err != nil {
			t.Fatal(err) // claimed, and never executed
		}
		advance(time.Minute)
		_, err := f.resume(t.Context(), "s", 1, result)
		conflict(t, err)

		advance(time.Millisecond)
		f.llm.Enqueue(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_2", Name: "get_time", Arguments: `{}`}}},
			llmtest.Reply{Content: "中午。"})
		run, err := f.resume(t.Context(), "s", 1, result)
		if err != nil {
			t.Fatalf("retry after the claim timed out: %v", err)
		}
		if out, err := run.Execute(t.Context(), (&collect{}).emit); err != nil || out.Status != StatusToolRequested || out.Iteration != 1 {
			t.Fatalf("retry: %+v %v", out, err)
		}
		run, err = f.resume(t.Context(), "s", 2, `[{"role":"tool","tool_call_id":"call_2","content":"12:01"}]`)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := run.Execute(t.Context(), (&collect{}).emit); err != nil || out.Status != StatusFinished || out.Iteration != 2 {
			t.Fatalf("next round: %+v %v", out, err)
		}
		// Both later calls saw the retry's results, and only them.
		for i, want := range []string{"system,user,assistant,tool:12:00", "system,user,assistant,tool:12:00,assistant,tool:12:01"} {
			var history []map[string]any
			_ = json.Unmarshal(f.llm.Requests()[i+1].Body["messages"], &history)
			var got []string
			for _, m := range history {
				if m["role"] == "tool" {
					got = append(got, fmt.Sprintf("tool:%v", m["content"]))
				} else {
					got = append(got, fmt.Sprint(m["role"]))
				}
			}
			if strings.Join(got, ",") != want {
				t.Errorf("call %d history %s, want %s", i+1, strings.Join(got, ","), want)
			}
		}
		// The loop is over: nothing to take over any more.
		advance(time.Hour)
		_, err = f.resume(t.Context(), "s", 2, result)
		conflict(t, err)
	})

	t.Run("after a restart", func(t *testing.T) {
		f := newAgentFixture(t, AgentConfig{Now: now})
		toolLoop(t, f, "s")
		if _, err := f.resume(t.Context(), "s", 1, result); err != nil {
			t.Fatal(err)
		}
		advance(time.Second)
		_, err := f.resume(t.Context(), "s", 1, result)
		conflict(t, err)

		restarted := NewAgent(AgentConfig{Client: llm.NewClient(llm.Config{Policy: testPolicy}), Transcripts: f.agent.Transcripts(), Now: now})
		advance(time.Second)
		f.llm.Enqueue(llmtest.Reply{Content: "中午。"})
		run, err := restarted.Resume(t.Context(), Resume{Owner: owner, SessionID: "s", Iteration: 1, Call: f.call(result)})
		if err != nil {
			t.Fatalf("resume after a restart: %v", err)
		}
		// The new claim is the restarted server's own, and holds.
		advance(time.Second)
		_, err = restarted.Resume(t.Context(), Resume{Owner: owner, SessionID: "s", Iteration: 1, Call: f.call(result)})
		conflict(t, err)
		if out, err := run.Execute(t.Context(), (&collect{}).emit); err != nil || out.Status != StatusFinished {
			t.Fatalf("round after a restart: %+v %v", out, err)
		}
	})

	// Several instances share the database: a claim holds while its
	// instance lives, whenever the other instance started, and goes with it.
	t.Run("on another instance", func(t *testing.T) {
		alive := instances{"a": true}
		f := newAgentFixture(t, AgentConfig{Now: now, Instance: "a", Liveness: alive})
		toolLoop(t, f, "s")
		if _, err := f.resume(t.Context(), "s", 1, result); err != nil {
			t.Fatal(err) // a's claim, its round under way
		}
		advance(time.Second)
		b := NewAgent(AgentConfig{Client: llm.NewClient(llm.Config{Policy: testPolicy}), Transcripts: f.agent.Transcripts(), Now: now, Instance: "b", Liveness: alive})
		_, err := b.Resume(t.Context(), Resume{Owner: owner, SessionID: "s", Iteration: 1, Call: f.call(result)})
		conflict(t, err)

		delete(alive, "a") // a died in the round
		f.llm.Enqueue(llmtest.Reply{Content: "中午。"})
		run, err := b.Resume(t.Context(), Resume{Owner: owner, SessionID: "s", Iteration: 1, Call: f.call(result)})
		if err != nil {
			t.Fatalf("resume on b after a died: %v", err)
		}
		if out, err := run.Execute(t.Context(), (&collect{}).emit); err != nil || out.Status != StatusFinished {
			t.Fatalf("round on b: %+v %v", out, err)
		}
	})
}

// instances is a Liveness over a set of live instance names.
type instances map[string]bool

func (live instances) InstanceAlive(_ context.Context, instance string) (bool, error) {
	return live[instance], nil
}

func TestAgentStopsTheLoop(t *testing.T) {
	call := llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c", Name: "get_time", Arguments: `{}`}}, Usage: &llmtest.Usage{PromptTokens: 60, CompletionTokens: 10}}

	t.Run("loop exceeded", func(t *testing.T) {
		f := newAgentFixture(t, AgentConfig{MaxIterations: 2})
		f.llm.Enqueue(call, call)
		c := &collect{}
		if out, err := f.start(t, "s", `[{"role":"user","content":"x"}]`).Execute(t.Context(), c.emit); err != nil || out.Status != StatusToolRequested {
			t.Fatalf("iteration 0: %+v %v", out, err)
		}
		run, err := f.resume(t.Context(), "s", -1, `[{"role":"tool","tool_call_id":"c","content":"t"}]`)
		if err != nil {
			t.Fatal(err)
		}
		out, err := run.Execute(t.Context(), c.emit)
		if err != nil || out.Status != StatusLoopExceeded || out.Iteration != 2 {
			t.Fatalf("iteration 1: %+v %v", out, err)
		}
		if got := summary(c.pushes[len(c.pushes)-1]); got != "error LOOP_EXCEEDED 2" || !strings.Contains(c.pushes[len(c.pushes)-1], `"message":"Agentic loop exceeded 2 iterations"`) {
			t.Errorf("last push %s", c.pushes[len(c.pushes)-1])
		}
		if _, err := f.resume(t.Context(), "s", 2, `[{"role":"tool","tool_call_id":"c","content":"t"}]`); err == nil {
			t.Error("a stopped loop was continued")
		}
	})

	t.Run("budget", func(t *testing.T) {
		f := newAgentFixture(t, AgentConfig{TokenBudget: 1000})
		f.llm.Enqueue(call)
		run, err := f.agent.Start(t.Context(), Start{Owner: owner, SessionID: "s", Call: f.call(`[{"role":"user","content":"x"}]`), TokenBudget: 50})
		if err != nil {
			t.Fatal(err)
		}
		c := &collect{}
		out, err := run.Execute(t.Context(), c.emit)
		if err != nil || out.Status != StatusBudgetExhausted || out.Iteration != 0 {
			t.Fatalf("%+v %v", out, err)
		}
		if got := summaries(c.pushes); !reflect.DeepEqual(got, []string{"error BUDGET_EXHAUSTED 0"}) ||
			!strings.Contains(c.pushes[0], "Session token budget of 50 tokens exhausted (70 used)") {
			t.Errorf("pushes %q", c.pushes)
		}
		// The next request of the session makes no call at all.
		run, err = f.agent.Start(t.Context(), Start{Owner: owner, SessionID: "s", Call: f.call(`[{"role":"user","content":"y"}]`), TokenBudget: 50})
		if err != nil {
			t.Fatal(err)
		}
		if out, _ := run.Execute(t.Context(), c.emit); out.Status != StatusBudgetExhausted || len(f.llm.Requests()) != 1 {
			t.Errorf("second request: %+v after %d calls", out, len(f.llm.Requests()))
		}
	})
}

func TestAgentFailures(t *testing.T) {
	t.Run("llm", testAgentLLMFailure)
	t.Run("blank answer", testAgentBlankAnswer)
	t.Run("push", testAgentPushFailure)
}

// testAgentLLMFailure: a failed LLM call fails the round and leaves the
// iteration open for a retry.
func testAgentLLMFailure(t *testing.T) {
	f := newAgentFixture(t, AgentConfig{})
	toolLoop(t, f, "s")
	f.llm.Enqueue(llmtest.Reply{Status: 503})
	result := `[{"role":"tool","tool_call_id":"call_1","content":"12:00"}]`
	run, err := f.resume(t.Context(), "s", 1, result)
	if err != nil {
		t.Fatal(err)
	}
	_, err = run.Execute(t.Context(), (&collect{}).emit)
	var fail *Failure
	if !errors.As(err, &fail) || fail.Code != errcode.LLMCallFailed.Code() || fail.Push == nil || fail.Push.Code != errcode.LLMCallFailed.Code() ||
		!strings.HasPrefix(fail.Message, "AI API error: 503") || !strings.HasSuffix(fail.Push.MessageID, "_error") {
		t.Fatalf("failure %#v", err)
	}
	// A failed call leaves the iteration open for a retry.
	f.llm.Enqueue(llmtest.Reply{Content: "中午。"})
	run, err = f.resume(t.Context(), "s", 1, result)
	if err != nil {
		t.Fatalf("retry after a failed call: %v", err)
	}
	if out, err := run.Execute(t.Context(), (&collect{}).emit); err != nil || out.Status != StatusFinished {
		t.Fatalf("retry: %+v %v", out, err)
	}
	var history []map[string]any
	_ = json.Unmarshal(f.llm.Requests()[2].Body["messages"], &history)
	if len(history) != 4 {
		t.Errorf("the retry's history has %d messages, want the results once: %s", len(history), f.llm.Requests()[2].Body["messages"])
	}
}

// testAgentBlankAnswer: an answer without content fails the round before
// any push.
func testAgentBlankAnswer(t *testing.T) {
	f := newAgentFixture(t, AgentConfig{})
	f.llm.Enqueue(llmtest.Reply{ReasoningContent: "hmm", Content: "  "})
	c := &collect{}
	_, err := f.start(t, "s", `[{"role":"user","content":"x"}]`).Execute(t.Context(), c.emit)
	var fail *Failure
	if !errors.As(err, &fail) || fail.Message != "AI API error: response missing choices[0].message.content" || len(c.pushes) != 0 {
		t.Errorf("%v, pushes %q", err, c.pushes)
	}
}

// testAgentPushFailure: a content push that cannot be sent fails the round,
// and the transcript ends with the error.
func testAgentPushFailure(t *testing.T) {
	f := newAgentFixture(t, AgentConfig{})
	f.llm.Enqueue(llmtest.Reply{Content: "一。二。三。"})
	boom := errors.New("push service down")
	c := &collect{fail: func(p push.Push) error {
		if cp, ok := p.(*push.ContentPush); ok && cp.Message == "二。" {
			return boom
		}
		return nil
	}}
	_, err := f.start(t, "s", `[{"role":"user","content":"x"}]`).Execute(t.Context(), c.emit)
	var fail *Failure
	if !errors.As(err, &fail) || fail.Code != errcode.PushSendFailed.Code() || fail.MessageIndex != 2 || !errors.Is(err, boom) || fail.Push != nil {
		t.Fatalf("%#v", err)
	}
	if got := summaries(c.pushes); !reflect.DeepEqual(got, []string{"content 1/2 一。"}) {
		t.Errorf("pushes %q", got)
	}
	tr, _ := f.agent.Transcripts().Load(t.Context(), owner, "s")
	last := tr.Messages[len(tr.Messages)-1]
	if prev := tr.Messages[len(tr.Messages)-2]; last.Type != MessageError || last.Code != errcode.PushSendFailed.Code() || prev.Type != MessageReply || len(prev.Pushes) != 1 {
		t.Errorf("transcript ends %+v, %+v", prev, last)
	}
}

func TestResumeWithTheWholeHistory(t *testing.T) {
	f := newAgentFixture(t, AgentConfig{})
	history := `[{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}]`
	f.llm.Enqueue(llmtest.Reply{Content: "ok"})
	// An unknown session, as a stateless server would see it.
	run, err := f.resume(t.Context(), "fresh", 3, history)
	if err != nil || run.Iteration() != 3 {
		t.Fatalf("%v, iteration %d", err, run.Iteration())
	}
	if _, err := f.resume(t.Context(), "fresh", 3, history); err == nil {
		t.Error("a second claim of a fresh session succeeded")
	}
	if _, err := run.Execute(t.Context(), (&collect{}).emit); err != nil {
		t.Fatal(err)
	}
	if got := string(f.llm.Requests()[0].Body["messages"]); got != history {
		t.Errorf("the call got %s, want the client's history verbatim", got)
	}
	tr, _ := f.agent.Transcripts().Load(t.Context(), owner, "fresh")
	if len(tr.Messages) != 3 || tr.Messages[0].Type != MessageInput || tr.Messages[1].Type != MessageToolResults ||
		tr.Messages[1].Results[0].CallID != "c" || tr.Messages[2].Type != MessageReply {
		t.Errorf("transcript %+v", tr.Messages)
	}

	// A known session continued with the whole history: the client's history is sent.
	toolLoop(t, f, "known")
	f.llm.Enqueue(llmtest.Reply{Content: "done"})
	full := `[{"role":"user","content":"what time is it?"},{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_time","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_1","content":"noon"}]`
	run, err = f.resume(t.Context(), "known", -1, full)
	if err != nil || run.Iteration() != 1 {
		t.Fatalf("%v", err)
	}
	if _, err := run.Execute(t.Context(), (&collect{}).emit); err != nil {
		t.Fatal(err)
	}
	reqs := f.llm.Requests()
	if got := string(reqs[len(reqs)-1].Body["messages"]); got != full {
		t.Errorf("the call got %s", got)
	}
}

func TestRecordRound(t *testing.T) {
	tr := NewTranscripts(storetest.New(t), nil)
	resp := &llm.Response{Content: "早上好。", Usage: llm.Usage{InputTokens: 7, OutputTokens: 3, Reported: true}}
	if err := tr.Record(t.Context(), owner, "sess_task_1@1700000000000", Round{
		Prompt: "say good morning", Response: resp, Reasoning: "morning", ReasoningPush: "msg_r",
		Text: "早上好。", ContentPushes: []string{"msg_task_1@1700000000000_0"},
	}); err != nil {
		t.Fatal(err)
	}
	got, err := tr.Load(t.Context(), owner, "sess_task_1@1700000000000")
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, m := range got.Messages {
		types = append(types, string(m.Type)+":"+m.Text)
	}
	if strings.Join(types, "|") != "input:say good morning|reasoning:morning|reply:早上好。" ||
		string(got.Messages[0].Messages) != `[{"role":"user","content":"say good morning"}]` || got.Usage.Total() != 10 ||
		got.Messages[2].Pushes[0] != "msg_task_1@1700000000000_0" {
		t.Errorf("recorded %q %s usage %+v", types, got.Messages[0].Messages, got.Usage)
	}
}
