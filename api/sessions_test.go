package api

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"amsg/llm/llmtest"
	"amsg/loop"
)

func TestGetSession(t *testing.T) {
	f := newInstantFixture(t, Config{ClientToken: "ct"}, loop.AgentConfig{})
	sub := f.push.Subscribe()
	f.llm.Enqueue(toolReply)
	const session = "chat/42 ünïcode"
	headers := withHeaders(jsonHeaders, map[string]string{"X-User-Id": testUserID, "X-Client-Token": "ct"})
	if got := post(f.s, "/api/v1/instant", jsonBody(t, f.body(map[string]any{"tools": getTimeTool, "pushSubscription": sub, "sessionId": session})), headers); got.status != 200 {
		t.Fatalf("/instant = %d %s", got.status, got.body)
	}
	path := "/api/v1/sessions/" + url.PathEscape(session)
	owner := map[string]string{"X-User-Id": testUserID, "X-Client-Token": "ct"}

	got := do(t, f.s, http.MethodGet, path, owner)
	plaintext := openResponse(t, testUserID, got)
	if !strings.Contains(plaintext, `"sessionId":"chat/42 ünïcode"`) || !strings.Contains(plaintext, `"type":"tool-calls"`) {
		t.Errorf("transcript %s", plaintext)
	}

	got = do(t, f.s, http.MethodGet, path, withHeaders(owner, map[string]string{"Accept": "application/x-ndjson"}))
	lines := strings.Split(strings.TrimSpace(got.body), "\n")
	if got.status != 200 || got.header.Get("Content-Type") != "application/x-ndjson; charset=utf-8" || len(lines) != 3 ||
		!strings.Contains(lines[0], `"v":{"type":"user","content":"what time is it?"}`) ||
		!strings.Contains(lines[1], `"type":"thinking"`) || !strings.Contains(lines[2], `"type":"tool_call","toolCallId":"call_1","name":"get_time","arguments":{"timezone":"Asia/Shanghai"}`) {
		t.Errorf("NDJSON %d %v:\n%s", got.status, got.header, got.body)
	}

	for _, c := range []struct {
		name    string
		path    string
		headers map[string]string
		status  int
		code    string
	}{
		{"no token", path, map[string]string{"X-User-Id": testUserID}, 401, "INVALID_CLIENT_TOKEN"},
		{"no user", path, map[string]string{"X-Client-Token": "ct"}, 400, "USER_ID_REQUIRED"},
		{"another user", path, map[string]string{"X-User-Id": "123e4567-e89b-42d3-a456-426614174000", "X-Client-Token": "ct"}, 404, "SESSION_NOT_FOUND"},
		{"unknown session", "/api/v1/sessions/nope", owner, 404, "SESSION_NOT_FOUND"},
	} {
		got := do(t, f.s, http.MethodGet, c.path, c.headers)
		if got.status != c.status || !strings.Contains(got.body, `"code":"`+c.code+`"`) {
			t.Errorf("%s: %d %s", c.name, got.status, got.body)
		}
	}
}

// TestSessionsWithoutAUserBelongToTheSubscription: a plaintext client with
// no user id continues with the results only, proving ownership with the
// same push subscription.
func TestSessionsWithoutAUserBelongToTheSubscription(t *testing.T) {
	f := newInstantFixture(t, Config{}, loop.AgentConfig{})
	sub := f.push.Subscribe()
	f.llm.Enqueue(toolReply, llmtest.Reply{Content: "中午。"})
	if got := post(f.s, "/api/v1/instant", jsonBody(t, f.body(map[string]any{"tools": getTimeTool, "pushSubscription": sub, "sessionId": "s"})), jsonHeaders); got.status != 200 {
		t.Fatal(got.body)
	}
	got := post(f.s, "/api/v1/continue", jsonBody(t, map[string]any{"sessionId": "s", "contactName": "Rei", "messages": rawJSON(toolResult),
		"apiUrl": f.llm.APIURL(), "apiKey": "sk-test", "primaryModel": "m", "pushSubscription": sub}), jsonHeaders)
	if got.status != 200 || !strings.Contains(got.body, `"status":"finished"`) {
		t.Errorf("/continue = %d %s", got.status, got.body)
	}
}
