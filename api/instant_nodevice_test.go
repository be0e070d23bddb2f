package api

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"

	"amsg/llm/llmtest"
	"amsg/loop"
)

// A user with no device chats over SSE: the reply streams, nothing is
// pushed, and the outbox keeps it for a device registered later. JSON mode
// still answers 409 PUSH_SUBSCRIPTION_MISSING.
func TestInstantOverSSEWithoutADevice(t *testing.T) {
	f := newInstantFixture(t, Config{}, loop.AgentConfig{})
	const user = "123e4567-e89b-42d3-a456-426614174000"
	f.llm.Enqueue(llmtest.Reply{Content: "Hello there."})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, f.http.URL+"/api/v1/instant", strings.NewReader(jsonBody(t, f.body(nil))))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-User-Id", user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("POST /instant without a device = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	frames := payloads(t, &sseReader{bufio.NewReader(resp.Body)})
	var texts []string
	for _, fr := range frames {
		texts = append(texts, fr.event+" "+summarize(t, []byte(orEmpty(fr.data))).Text)
	}
	if len(texts) < 2 || texts[len(texts)-2] != "payload Hello there." || texts[len(texts)-1] != "done " {
		t.Fatalf("frames %q, want the reply then done", texts)
	}
	// The stream ends once every backup has settled: the outbox is written
	// by then.
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	if n := len(f.push.Requests()); n != 0 {
		t.Fatalf("%d push requests, want none", n)
	}
	page, err := f.store.UnackedOutbox(t.Context(), user, 0, 10)
	if err != nil || len(page.Entries) == 0 {
		t.Fatalf("outbox after the round: %+v, %v; want the reply kept", page, err)
	}

	got := post(f.s, "/api/v1/instant", jsonBody(t, f.body(nil)), withHeaders(jsonHeaders, map[string]string{"X-User-Id": user}))
	if got.status != http.StatusConflict || !strings.Contains(got.body, "PUSH_SUBSCRIPTION_MISSING") {
		t.Fatalf("JSON mode without a device: %d %s, want 409 PUSH_SUBSCRIPTION_MISSING", got.status, got.body)
	}
}
