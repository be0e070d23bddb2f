package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"amsg/llm"
	"amsg/llm/llmtest"
	"amsg/push"
	"amsg/store"
	"amsg/store/storetest"

	"github.com/prometheus/client_golang/prometheus"
)

// gathered returns the samples of the metric family name by their label
// values joined with ",": a counter's or gauge's value, a histogram's
// sample count.
func gathered(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetValue())
			}
			out[strings.Join(labels, ",")] = m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	return out
}

// The LLM client reports each call to the metrics: a duration by outcome
// and the tokens the model counted.
func TestLLMMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	observe, err := newLLMMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	model := llmtest.NewServer(t)
	model.Enqueue(llmtest.Reply{Content: "hi", Usage: &llmtest.Usage{PromptTokens: 70, CompletionTokens: 15}}, llmtest.Reply{Status: 500})
	client := llm.NewClient(llm.Config{Observe: observe, Policy: llm.URLPolicy{AllowPrivate: true}})
	req := llm.Request{APIURL: model.APIURL(), APIKey: "k", Model: "m", Prompt: "hello"}
	if _, err := client.Complete(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Complete(t.Context(), req); err == nil {
		t.Fatal("a 500 answer succeeded")
	}
	if calls := gathered(t, reg, "amsg_llm_call_duration_seconds"); calls["ok,false"] != 1 || calls["failed,false"] != 1 {
		t.Errorf("calls %v, want one ok and one failed", calls)
	}
	if tokens := gathered(t, reg, "amsg_llm_tokens_total"); tokens["input"] != 70 || tokens["output"] != 15 {
		t.Errorf("tokens %v, want 70 input and 15 output", tokens)
	}
}

func TestDueTasksGauge(t *testing.T) {
	st := storetest.New(t)
	if _, _, err := st.InsertTask(t.Context(), store.NewTask{UserID: "u", UUID: "00000000-0000-4000-8000-000000000001",
		MessageType: push.TypeFixed, NextSendAt: time.Now().Add(-time.Minute), Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(dueTasksGauge(st, time.Now, slog.New(slog.NewTextHandler(io.Discard, nil))))
	if m := gathered(t, reg, "amsg_scheduler_due_tasks"); m[""] != 1 {
		t.Fatalf("due tasks gauge = %v, want 1", m)
	}
}

// The commits counter follows the SQLite writer: one write alone is one
// commit.
func TestStoreCommitsCounter(t *testing.T) {
	st := storetest.New(t)
	reg := prometheus.NewRegistry()
	reg.MustRegister(storeCommitsCounter(st))
	before := gathered(t, reg, "amsg_store_commits_total")[""]
	if _, _, err := st.InsertTask(t.Context(), store.NewTask{UserID: "u", UUID: "00000000-0000-4000-8000-000000000001",
		MessageType: push.TypeFixed, NextSendAt: time.Now().Add(time.Hour), Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if got := gathered(t, reg, "amsg_store_commits_total")[""] - before; got != 1 {
		t.Errorf("inserting a task made %v commits, want 1", got)
	}
}
