package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"amsg/llm/llmtest"
	"amsg/push/pushtest"
	"amsg/store/storetest"
)

func TestInstantConfig(t *testing.T) {
	c, err := parseServeConfig(nil, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Instant != (instantConfig{MaxLoopIterations: 10, LLMTimeout: 300 * time.Second, TranscriptMaxAge: 30 * 24 * time.Hour, InterruptTimeout: time.Hour}) {
		t.Errorf("defaults = %+v", c.Instant)
	}
	c, err = parseServeConfig(nil, env(map[string]string{
		"AMSG_MAX_LOOP_ITERATIONS": "4", "AMSG_SESSION_TOKEN_BUDGET": "50000", "AMSG_LLM_TIMEOUT": "1m", "AMSG_TRANSCRIPT_MAX_AGE": "168h",
		"AMSG_INTERRUPT_TIMEOUT": "15m",
	}), io.Discard)
	if err != nil || c.Instant != (instantConfig{4, 50000, time.Minute, 7 * 24 * time.Hour, 15 * time.Minute}) {
		t.Errorf("from the environment: %+v, %v", c.Instant, err)
	}
	for _, bad := range []struct{ name, value, want string }{
		{"AMSG_MAX_LOOP_ITERATIONS", "0", "--max-loop-iterations must be at least 1"},
		{"AMSG_SESSION_TOKEN_BUDGET", "-1", "--session-token-budget must not be negative"},
		{"AMSG_LLM_TIMEOUT", "0s", "--llm-timeout must be positive"},
		{"AMSG_TRANSCRIPT_MAX_AGE", "10m", "--transcript-max-age must be at least 1h"},
		{"AMSG_INTERRUPT_TIMEOUT", "1s", "--interrupt-timeout must be within 10s..168h0m0s"},
	} {
		_, err := parseServeConfig(nil, env(map[string]string{bad.name: bad.value}), io.Discard)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s=%s: %v", bad.name, bad.value, err)
		}
	}
}

// TestServeRunsTheAgentLoop runs the binary with a low loop bound and checks
// the wiring end to end: a tool call at the last iteration stops the loop,
// and the error push reaches the push service.
func TestServeRunsTheAgentLoop(t *testing.T) {
	public, private, err := storetest.GenerateVAPID()
	if err != nil {
		t.Fatal(err)
	}
	fake := pushtest.NewServer(public)
	t.Cleanup(fake.Close)
	llm := llmtest.NewServer(t)
	llm.Enqueue(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c", Name: "get_time", Arguments: "{}"}}})
	p := startAmsg(t, filepath.Join(t.TempDir(), "data"), "AMSG_VAPID_PUBLIC_KEY="+public, "AMSG_VAPID_PRIVATE_KEY="+private,
		"AMSG_ALLOW_PRIVATE_ENDPOINTS=true", "AMSG_MAX_LOOP_ITERATIONS=1")

	body, _ := json.Marshal(map[string]any{
		"contactName": "Rei", "completePrompt": "what time is it?", "apiUrl": llm.APIURL(), "apiKey": "k", "primaryModel": "m",
		"pushSubscription": fake.Subscribe(), "tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_time"}}},
	})
	req, _ := http.NewRequest(http.MethodPost, p.URL+"/api/v1/instant", strings.NewReader(string(body)))
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(got), `"status":"loop_exceeded","iteration":1`) {
		t.Fatalf("/instant = %d %s", resp.StatusCode, got)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	pushes, err := fake.WaitPushes(ctx, 1)
	if err != nil || !strings.Contains(string(pushes[0].JSON), `"code":"LOOP_EXCEEDED"`) {
		t.Errorf("pushes %v, %v", pushes, err)
	}
}
