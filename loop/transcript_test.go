package loop

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"amsg/llm"
	"amsg/llm/llmtest"
	"amsg/push/clocktest"
	"amsg/store"
	"amsg/store/storetest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// golden compares got with testdata/name, after replacing what is random
// (ULIDs, UUIDs) with stable names in order of appearance.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	ids := map[string]string{}
	got = regexp.MustCompile(`127\.0\.0\.1:\d+`).ReplaceAll(got, []byte("127.0.0.1:PORT"))
	got = regexp.MustCompile(`[0-9A-HJKMNP-TV-Z]{26}|[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}`).
		ReplaceAllFunc(got, func(id []byte) []byte {
			if ids[string(id)] == "" {
				ids[string(id)] = "ID" + string(rune('A'+len(ids)))
			}
			return []byte(ids[string(id)])
		})
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test ./loop -run %s -update rewrites it):\n%s", path, t.Name(), got)
	}
}

// fixedClock ticks a second per reading, so every message has its own time.
func fixedClock() func() time.Time {
	return clocktest.Stepping(time.Date(2026, 11, 22, 11, 10, 57, 869e6, time.UTC), time.Second).Now
}

// recordedLoop runs the get_time loop of issue 4 and returns its transcript.
func recordedLoop(t *testing.T) *Transcript {
	t.Helper()
	clock := fixedClock()
	model := llmtest.NewServer(t)
	tr := NewTranscripts(storetest.Open(t, store.Config{Now: clock}), clock)
	a := NewAgent(AgentConfig{Client: llm.NewClient(llm.Config{Policy: testPolicy}), Transcripts: tr, Now: clock})
	call := llm.Request{APIURL: model.APIURL(), APIKey: testKey, Model: "m", Messages: json.RawMessage(`[{"role":"user","content":"what time is it?"}]`),
		Tools: json.RawMessage(`[{"type":"function","function":{"name":"get_time"}}]`)}
	model.Enqueue(
		llmtest.Reply{ReasoningContent: "look at the clock", Content: "Let me check.", ToolCalls: []llmtest.ToolCall{{ID: "call_1", Name: "get_time", Arguments: `{"tz":"UTC"}`}},
			Usage: &llmtest.Usage{PromptTokens: 12, CompletionTokens: 7, ReasoningTokens: 3}},
		llmtest.Reply{Status: 502},
		llmtest.Reply{Content: "It is noon!", Usage: &llmtest.Usage{PromptTokens: 30, CachedTokens: 12, CompletionTokens: 4}},
	)
	run, err := a.Start(t.Context(), Start{Owner: owner, SessionID: "sess_golden", Call: call})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Execute(t.Context(), (&collect{}).emit); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the first attempt fails, the retry answers
		call.Messages = json.RawMessage(`[{"role":"tool","tool_call_id":"call_1","content":"12:00"}]`)
		run, err := a.Resume(t.Context(), Resume{Owner: owner, SessionID: "sess_golden", Iteration: 1, Call: call})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = run.Execute(t.Context(), (&collect{}).emit)
	}
	got, err := tr.Load(t.Context(), owner, "sess_golden")
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestTranscriptJSON(t *testing.T) {
	tr := recordedLoop(t)
	b, err := json.MarshalIndent(tr, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "transcript.json", append(b, '\n'))
}

func TestTranscriptTimbal(t *testing.T) {
	var b bytes.Buffer
	if err := recordedLoop(t).WriteTimbal(&b); err != nil {
		t.Fatal(err)
	}
	golden(t, "transcript.ndjson", b.Bytes())
	// Every line is a frame with an id, a time and a typed value.
	for _, line := range bytes.Split(bytes.TrimSpace(b.Bytes()), []byte("\n")) {
		var frame struct {
			I string          `json:"i"`
			T string          `json:"t"`
			V json.RawMessage `json:"v"`
		}
		if err := json.Unmarshal(line, &frame); err != nil || frame.I == "" || frame.T == "" || !bytes.Contains(frame.V, []byte(`"type":`)) {
			t.Errorf("frame %s: %v", line, err)
		}
	}
}
