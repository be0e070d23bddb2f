package webhook_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"amsg/scheduler/webhook"
	"amsg/store"
)

// verifyJS verifies each webhook of a JSON array on stdin with the
// specification's JavaScript library, timestamp tolerance included, and
// prints the verified payloads' types.
const verifyJS = `
const { Webhook } = require("standardwebhooks");
let input = "";
process.stdin.on("data", (c) => (input += c)).on("end", () => {
  const { secret, requests } = JSON.parse(input);
  const wh = new Webhook(secret);
  const types = requests.map((r) => wh.verify(r.body, r.headers).type);
  process.stdout.write(types.join(","));
});
`

// TestNodeLibraryVerifies sends webhooks through a real pass and has the
// Standard Webhooks JavaScript library (npm standardwebhooks 1.1.1) verify
// each, on the wall clock; a tampered body is refused. It skips without
// node and npm, unless AMSG_REQUIRE_BROWSER=1 (CI) makes their absence a
// failure.
func TestNodeLibraryVerifies(t *testing.T) {
	node, nodeErr := exec.LookPath("node")
	npm, npmErr := exec.LookPath("npm")
	if nodeErr != nil || npmErr != nil {
		if os.Getenv("AMSG_REQUIRE_BROWSER") == "1" {
			t.Fatalf("node or npm is missing: %v %v", nodeErr, npmErr)
		}
		t.Skip("node or npm is missing")
	}
	dir := t.TempDir()
	if out, err := exec.CommandContext(t.Context(), npm, "install", "--prefix", dir, "--no-audit", "--no-fund", "standardwebhooks@1.1.1").CombinedOutput(); err != nil {
		t.Fatalf("npm install standardwebhooks@1.1.1: %v\n%s", err, out)
	}

	type request struct {
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	}
	var mu sync.Mutex
	var requests []request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		requests = append(requests, request{map[string]string{"webhook-id": r.Header.Get("webhook-id"),
			"webhook-timestamp": r.Header.Get("webhook-timestamp"), "webhook-signature": r.Header.Get("webhook-signature")}, string(body)})
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	f := newFixture(t, webhook.Config{})
	f.clk.Set(time.Now()) // the library refuses timestamps five minutes from its clock
	secret := f.endpoint(t, "wh_js", srv.URL, false, webhook.EventTypes...)
	f.events(t, store.MessageEvent{MessageID: "m1", Type: store.EventSent}, store.MessageEvent{MessageID: "m1", Type: store.EventClicked,
		Detail: json.RawMessage(`{"action":"reply"}`)}, store.MessageEvent{DeviceID: "3", Type: store.EventDeviceGone})
	f.pass(t)

	verify := func(requests []request) (string, error) {
		in, _ := json.Marshal(map[string]any{"secret": secret, "requests": requests})
		cmd := exec.CommandContext(t.Context(), node, "-e", verifyJS)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "NODE_PATH="+dir+"/node_modules")
		cmd.Stdin = bytes.NewReader(in)
		out, err := cmd.Output()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), &nodeError{ee, string(ee.Stderr)}
		}
		return string(out), err
	}
	types, err := verify(requests)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Split(types, ","); len(got) != 3 || !strings.Contains(types, "message.clicked") || !strings.Contains(types, "device.gone") {
		t.Errorf("node verified %q, want the three webhooks", types)
	}
	i := slices.IndexFunc(requests, func(r request) bool { return strings.Contains(r.Body, `"messageId":"m1"`) })
	tampered := []request{requests[i]}
	tampered[0].Body = strings.Replace(tampered[0].Body, `"messageId":"m1"`, `"messageId":"m2"`, 1)
	if _, err := verify(tampered); err == nil || !strings.Contains(err.Error(), "No matching signature found") {
		t.Errorf("a tampered body: %v, want the library's refusal", err)
	}
}

type nodeError struct {
	err    error
	stderr string
}

func (e *nodeError) Error() string { return e.err.Error() + ": " + e.stderr }
