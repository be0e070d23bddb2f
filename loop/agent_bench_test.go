package loop

import (
	"testing"

	"amsg/llm"
	"amsg/llm/llmtest"
	"amsg/push"
	"amsg/store/storetest"
)

// BenchmarkAgentRound is one /instant round without HTTP in front or push
// delivery behind: record the input, stream a two-sentence answer from the
// fake LLM on loopback, build and encode the two content pushes, record the
// round. Together with BenchmarkCompleteLoopback (the model call alone) it
// says what BenchmarkInstantRequest in package api spends where.
func BenchmarkAgentRound(b *testing.B) {
	model := llmtest.NewServer(b)
	a := NewAgent(AgentConfig{Client: llm.NewClient(llm.Config{Policy: testPolicy}), Transcripts: NewTranscripts(storetest.New(b), nil)})
	call := llm.Request{APIURL: model.APIURL(), APIKey: testKey, Model: "m", Messages: []byte(`[{"role":"user","content":"明天提醒我带伞"}]`)}
	reply := llmtest.Reply{Content: "好的，我记下了。明天见！", Usage: &llmtest.Usage{PromptTokens: 20, CompletionTokens: 8}}
	emit := func(p push.Push) error { _, err := push.Encode(p); return err }
	b.ReportAllocs()
	for b.Loop() {
		model.Enqueue(reply)
		run, err := a.Start(b.Context(), Start{Owner: owner, SessionID: "sess_" + push.NewUUID(), Call: call,
			Presentation: Presentation{ContactName: "Rei"}})
		if err != nil {
			b.Fatal(err)
		}
		if out, err := run.Execute(b.Context(), emit); err != nil || out.MessagesSent != 2 {
			b.Fatal(out, err)
		}
	}
}
