package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"amsg/llm/llmtest"
	"amsg/push/pushtest"
	"amsg/store/storetest"
)

// The tests below are issue 14's attacks against the real binary.

// raiseFileLimit lets the test hold n connections of its own.
func raiseFileLimit(t *testing.T, n uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skip(err)
	}
	if lim.Cur >= n {
		return
	}
	if lim.Max < n {
		t.Skipf("the hard file limit %d is below %d", lim.Max, n)
	}
	lim.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skip(err)
	}
}

// silentBody opens a connection and sends a request that declares a body
// and never sends it.
func silentBody(t *testing.T, p *amsgProcess) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(p.URL, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST /api/v1/instant HTTP/1.1\r\nHost: amsg\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n")
	return conn
}

// Finding 1: a body that never comes gets 408 within the body timeout and
// the connection closes; 1 000 such connections leave /healthz answering.
func TestSilentBodyGets408(t *testing.T) {
	const conns = 1000
	raiseFileLimit(t, 4*conns)
	const timeout = 3 * time.Second
	p := startAmsg(t, filepath.Join(t.TempDir(), "data"), "AMSG_BODY_READ_TIMEOUT="+timeout.String(), "AMSG_RATE_LIMIT=off",
		"AMSG_MAX_CONNS_PER_ADDRESS=2000") // one address here; TestSilentBodyFloodLeavesHealthAnswering tests the cap

	start := time.Now()
	silent := make([]net.Conn, conns)
	for i := range silent {
		silent[i] = silentBody(t, p)
	}
	health := http.Client{Timeout: 5 * time.Second}
	resp, err := health.Get(p.URL + "/healthz")
	if err != nil {
		t.Fatalf("/healthz under %d silent bodies: %v", conns, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz = %d", resp.StatusCode)
	}

	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for _, conn := range silent {
		wg.Go(func() {
			_ = conn.SetReadDeadline(start.Add(timeout + 10*time.Second))
			r := bufio.NewReader(conn)
			resp, err := http.ReadResponse(r, nil)
			if err != nil {
				errs <- fmt.Errorf("no answer: %w", err)
				return
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), `"code":"REQUEST_TIMEOUT"`) {
				errs <- fmt.Errorf("answer %d %s", resp.StatusCode, body)
				return
			}
			if _, err := r.ReadByte(); err != io.EOF {
				errs <- fmt.Errorf("the connection stayed open after 408: %v", err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if took := time.Since(start); took > timeout+8*time.Second {
		t.Errorf("the 408s took %s with a %s body timeout", took, timeout)
	}
}

// Finding 4: a client that stops reading a large response is dropped when
// the write deadline passes, and the server lets go of the response.
func TestStalledReaderIsDropped(t *testing.T) {
	r := newTaskRig(t, "AMSG_WRITE_TIMEOUT=1s")
	p := r.start(t)
	value := strings.Repeat("x", 2<<20)
	var entries []any
	for i := range 4 {
		entries = append(entries, map[string]any{"namespace": "big", "key": fmt.Sprint(i), "value": value, "updatedAt": 1_700_000_000_000})
	}
	if status, body := r.call(t, p, http.MethodPut, "client-state", map[string]any{"entries": entries}); status != http.StatusOK || !strings.Contains(string(body), `"upserted":4`) {
		t.Fatalf("client-state: %d %s", status, body)
	}

	dialer := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := dialer.Dial("tcp", strings.TrimPrefix(p.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /api/v1/client-state?namespace=big HTTP/1.1\r\nHost: amsg\r\nX-User-Id: %s\r\n\r\n", taskUser)
	line := p.WaitLog(t, "response not delivered", 30*time.Second)
	if line["path"] != "/api/v1/client-state" {
		t.Errorf("log line %v", line)
	}
	// What the client can still read ends short of the whole response.
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := io.Copy(io.Discard, conn)
	if err != nil && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("reading after the drop: %v", err)
	}
	if n >= 8<<20 {
		t.Errorf("the client read %d bytes: the whole response", n)
	}
}

// instantRig is the binary with a fake push service and a fake LLM.
type instantRig struct {
	p    *amsgProcess
	llm  *llmtest.Server
	push *pushtest.Server
}

func newInstantRig(t *testing.T, env ...string) *instantRig {
	t.Helper()
	public, private, err := storetest.GenerateVAPID()
	if err != nil {
		t.Fatal(err)
	}
	fake := pushtest.NewServer(public)
	t.Cleanup(fake.Close)
	env = append([]string{"AMSG_VAPID_PUBLIC_KEY=" + public, "AMSG_VAPID_PRIVATE_KEY=" + private, "AMSG_ALLOW_PRIVATE_ENDPOINTS=true"}, env...)
	return &instantRig{p: startAmsg(t, filepath.Join(t.TempDir(), "data"), env...), llm: llmtest.NewServer(t), push: fake}
}

func (r *instantRig) body(t *testing.T, apiURL string) string {
	b, err := json.Marshal(map[string]any{
		"contactName": "Rei", "completePrompt": "hi", "apiUrl": apiURL, "apiKey": "k", "primaryModel": "m",
		"pushSubscription": r.push.Subscribe(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// instant posts an /instant round calling apiURL over the JSON transport.
func (r *instantRig) instant(t *testing.T, apiURL string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.p.URL+"/api/v1/instant", strings.NewReader(r.body(t, apiURL)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(got)
}

// Finding 3: without --allow-private-llm a loopback apiUrl is refused and
// never called.
func TestInternalLLMURLRefused(t *testing.T) {
	r := newInstantRig(t, "AMSG_ALLOW_PRIVATE_LLM=false")
	for _, apiURL := range []string{r.llm.APIURL(), "http://169.254.169.254/latest/meta-data/", "http://localhost:6379/"} {
		status, got := r.instant(t, apiURL)
		if status != http.StatusBadRequest || !strings.Contains(got, `"code":"INVALID_API_URL"`) {
			t.Errorf("%s: %d %s", apiURL, status, got)
		}
	}
	// A text/plain body, what a cross-site form can send, starts nothing.
	resp, err := http.Post(r.p.URL+"/api/v1/instant", "text/plain", strings.NewReader(r.body(t, "https://api.example.com")))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain = %d", resp.StatusCode)
	}
	if n := len(r.llm.Requests()); n != 0 {
		t.Errorf("the internal endpoint got %d requests", n)
	}
}

// Finding 2: rounds whose client left run on only up to the cap; the rest
// stop at once.
func TestAbandonedRoundsAreCapped(t *testing.T) {
	const rounds, orphanCap = 5, 2
	r := newInstantRig(t, fmt.Sprintf("AMSG_MAX_ORPHAN_ROUNDS=%d", orphanCap), "AMSG_MAX_ROUNDS_PER_USER=10")
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	for range rounds {
		r.llm.Enqueue(llmtest.Reply{Content: "late", Release: release})
	}
	var conns []net.Conn
	for range rounds {
		conn, err := net.Dial("tcp", strings.TrimPrefix(r.p.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		body := r.body(t, r.llm.APIURL())
		fmt.Fprintf(conn, "POST /api/v1/instant HTTP/1.1\r\nHost: amsg\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		conns = append(conns, conn)
	}
	r.llm.WaitRequests(rounds) // every round is waiting on the model
	for _, c := range conns {
		c.Close()
	}
	deadline := time.After(30 * time.Second)
	for len(r.p.Logs("orphaned rounds are at their cap")) < rounds-orphanCap {
		r.p.mu.Lock()
		grew := r.p.grew
		r.p.mu.Unlock()
		select {
		case <-grew:
		case <-deadline:
			t.Fatalf("%d rounds were stopped, want %d", len(r.p.Logs("orphaned rounds are at their cap")), rounds-orphanCap)
		}
	}
	resp, err := http.Get(r.p.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := fmt.Sprintf("amsg_instant_orphaned_rounds %d\n", orphanCap); !strings.Contains(string(metrics), want) {
		t.Errorf("metrics lack %q", want)
	}
	if n := len(r.p.Logs("orphaned rounds are at their cap")); n != rounds-orphanCap {
		t.Errorf("%d rounds stopped, want %d", n, rounds-orphanCap)
	}
}

// Finding 9: /healthz said OK with the database file deleted.
func TestHealthFailsWithTheDatabaseDeleted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	p := startAmsg(t, dir)
	get := func() int {
		resp, err := http.Get(p.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// No check before: a pass answers for a second (api/health.go).
	for _, f := range []string{"amsg.db", "amsg.db-wal", "amsg.db-shm"} {
		_ = os.Remove(filepath.Join(dir, f))
	}
	if got := get(); got != http.StatusServiceUnavailable {
		t.Fatalf("with the database deleted: %d", got)
	}
}

// Finding 5: quotas and rate limits, as the binary answers them.
func TestQuotaAndRateLimit(t *testing.T) {
	r := newTaskRig(t, "AMSG_MAX_TASKS_PER_USER=2", "AMSG_RATE=1", "AMSG_RATE_BURST=20")
	p := r.start(t)
	r.register(t, p)
	task := map[string]any{"contactName": "Rei", "messageType": "fixed", "userMessage": "hi",
		"firstSendTime": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}
	r.schedule(t, p, task)
	r.schedule(t, p, task)
	status, body := r.call(t, p, http.MethodPost, "schedule-message", task)
	if status != http.StatusForbidden || !strings.Contains(string(body), `"code":"QUOTA_EXCEEDED"`) || !strings.Contains(string(body), `"limit":2`) {
		t.Fatalf("third task: %d %s", status, body)
	}
	for i := range 30 {
		resp, err := http.Get(p.URL + "/api/v1/capabilities")
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			if resp.Header.Get("Retry-After") == "" || !strings.Contains(string(got), `"code":"RATE_LIMITED"`) {
				t.Fatalf("429 without Retry-After or code: %v %s", resp.Header, got)
			}
			return
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, got)
		}
	}
	t.Fatal("30 requests past a burst of 20 at 1/s were never limited")
}

// Finding 7: rotating AMSG_CLIENT_TOKEN cuts off the old token's holders
// from amsg-client's encrypted /instant as soon as the server restarts with
// the new one.
func TestRotatedClientTokenStopsWorking(t *testing.T) {
	r := newTaskRig(t, "AMSG_CLIENT_TOKEN=old-client-token-1")
	encryptedInstant := func(p *amsgProcess) int {
		req, _ := http.NewRequest(http.MethodPost, p.URL+"/api/v1/instant", strings.NewReader("{"))
		for k, v := range map[string]string{"Content-Type": "application/json", "X-User-Id": taskUser,
			"X-Payload-Encrypted": "true", "X-Encryption-Version": "1"} {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	prove := func(p *amsgProcess, token string) int {
		req, _ := http.NewRequest(http.MethodGet, p.URL+"/api/v1/get-user-key", nil)
		req.Header.Set("X-User-Id", taskUser)
		req.Header.Set("X-Client-Token", token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	p := r.start(t)
	if got := prove(p, "old-client-token-1"); got != http.StatusOK {
		t.Fatalf("get-user-key: %d", got)
	}
	if got := encryptedInstant(p); got != http.StatusBadRequest { // past auth, the body is no envelope
		t.Fatalf("encrypted /instant with the token proved: %d", got)
	}
	if err := p.Stop(t); err != nil {
		t.Fatal(err)
	}
	p = startAmsg(t, r.dir, append(r.env, "AMSG_CLIENT_TOKEN=new-client-token-2")...)
	if got := encryptedInstant(p); got != http.StatusUnauthorized {
		t.Fatalf("the old token's holder after rotation: %d", got)
	}
	if got := prove(p, "new-client-token-2"); got != http.StatusOK {
		t.Fatalf("get-user-key with the new token: %d", got)
	}
	if got := encryptedInstant(p); got != http.StatusBadRequest {
		t.Fatalf("encrypted /instant after proving the new token: %d", got)
	}
}

// Finding 9: an API key in the apiUrl's query string was logged and told.
func TestAPIKeyInQueryNeverShown(t *testing.T) {
	const secret = "AIzaSyQuerySecret1234567890"
	r := newInstantRig(t)
	r.llm.Enqueue(llmtest.Reply{Status: 500, Body: `{"error":{"message":"bad key ` + secret + `"}}`})
	status, got := r.instant(t, r.llm.APIURL()+"?key="+secret)
	if status != http.StatusBadGateway || strings.Contains(got, secret) {
		t.Fatalf("= %d %s", status, got)
	}
	r.p.WaitLog(t, "llm call failed", 10*time.Second)
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	for _, line := range r.p.logs {
		if b, _ := json.Marshal(line); strings.Contains(string(b), secret) {
			t.Errorf("a log line shows the key: %s", b)
		}
	}
}
