package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"amsg/llm/llmtest"
)

// Done-when of issue 19 against the binary, under the default push policy:
// a user chats on the phone while a tablet is registered too. The frames
// the phone's stream delivered reach the tablet by Web Push and not the
// phone; once the phone's connection is gone, the rest reaches both.
func TestStreamingDeviceGetsNoBackupOfWhatItsStreamDelivered(t *testing.T) {
	rig := newTaskRig(t)
	p := rig.start(t)
	phone, tablet := rig.sub, rig.push.Subscribe()
	for _, sub := range []any{phone, tablet} {
		if status, body := rig.call(t, p, http.MethodPut, "push-subscription", map[string]any{"subscription": sub}); status != http.StatusOK {
			t.Fatalf("push-subscription: %d %s", status, body)
		}
	}
	llm := llmtest.NewServer(t)
	st := llm.Stream()
	body, _ := json.Marshal(map[string]any{
		"contactName": "Rei", "messages": []any{map[string]any{"role": "user", "content": "hi"}},
		"apiUrl": llm.APIURL(), "apiKey": "k", "primaryModel": "m", "pushSubscription": phone,
	})
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+"/api/v1/instant", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-User-Id", taskUser)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("/instant = %d %s", resp.StatusCode, b)
	}
	st.Content("First sentence. Second")
	frames := bufio.NewReader(resp.Body)
	for {
		line, err := frames.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "data:") && strings.Contains(line, "First sentence.") {
			break
		}
	}
	wait, stop := context.WithTimeout(t.Context(), 30*time.Second)
	defer stop()
	if _, err := rig.push.WaitPushes(wait, 1); err != nil {
		t.Fatal(err)
	}
	cancel() // the phone's connection drops
	waitMetric(t, p, "amsg_instant_orphaned_rounds 1")
	st.Content(" sentence. Third one.")
	st.Send(llmtest.Chunk{Usage: &llmtest.Usage{PromptTokens: 1, CompletionTokens: 1}})
	st.Done()
	pushes, err := rig.push.WaitPushes(wait, 5)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, pu := range pushes {
		var c struct{ Message string }
		json.Unmarshal(pu.JSON, &c)
		got[pu.Endpoint] = append(got[pu.Endpoint], c.Message)
	}
	want := map[string][]string{
		phone.Endpoint:  {"Second sentence.", "Third one."},
		tablet.Endpoint: {"First sentence.", "Second sentence.", "Third one."},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pushes by device %q, want %q", got, want)
	}
	waitMetric(t, p, "amsg_push_stream_skips_total 1")
	if extra := len(rig.push.Pushes()); extra != 5 {
		t.Errorf("%d pushes, want 5", extra)
	}
}

// waitMetric polls /metrics until it has line.
func waitMetric(t *testing.T, p *amsgProcess, line string) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		resp, err := http.Get(p.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		metrics, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(metrics), line+"\n") {
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("/metrics never had %q", line)
		}
	}
}
