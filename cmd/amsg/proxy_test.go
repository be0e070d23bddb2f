package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"amsg/llm/llmtest"
)

// Issue 23, problems 3 and 4, with live traffic: amsg runs behind each
// proxy recipe of deploy/, taken literally but for its ports and paths, on
// loopback. Clients reach the proxy from their own loopback addresses
// (127.0.0.2 and up; the proxy is 127.0.0.1, the one amsg trusts), send an
// X-Forwarded-For of their choosing, and amsg must count them by the
// address they really have; server-sent events must arrive while the round
// is still under way; answers must be gzipped.

// trustedProxiesEnv is what each recipe tells the operator to set
// (requireTrustedProxies checks the recipes say so).
const trustedProxiesEnv = "AMSG_TRUSTED_PROXIES=127.0.0.1,::1"

// spoofedAddress is the X-Forwarded-For a client sends to pass for another.
const spoofedAddress = "203.0.113.7"

func TestBehindNginxLiveTraffic(t *testing.T) {
	nginx := requireTool(t, "nginx")
	rig := newProxyRig(t)
	dir := t.TempDir()
	writeCertificate(t, dir)
	recipe := readRecipe(t, "nginx/amsg-nginx-1.22.conf")
	// The master logs "start worker processes" once its sockets are bound.
	httpsPort := startProxy(t, "start worker processes", func(httpPort, httpsPort int) *exec.Cmd {
		conf := writeNginxConf(t, dir, strings.NewReplacer(
			" 80;", fmt.Sprintf(" %d;", httpPort), ":80;", fmt.Sprintf(":%d;", httpPort),
			" 443 ", fmt.Sprintf(" %d ", httpsPort), ":443 ", fmt.Sprintf(":%d ", httpsPort),
			"127.0.0.1:8080", strings.TrimPrefix(rig.amsg.URL, "http://"),
		).Replace(recipe))
		return exec.Command(nginx, "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", conf, "-g", "daemon off;")
	})
	rig.check(t, httpsPort)
}

func TestBehindCaddyLiveTraffic(t *testing.T) {
	caddy := requireTool(t, "caddy")
	rig := newProxyRig(t)
	dir := t.TempDir()
	recipe := readRecipe(t, "Caddyfile")
	recipe = strings.ReplaceAll(recipe, "127.0.0.1:8080", strings.TrimPrefix(rig.amsg.URL, "http://"))
	httpsPort := startProxy(t, "certificate obtained successfully", func(httpPort, httpsPort int) *exec.Cmd {
		// Global options put the recipe's site on the test's ports with
		// certificates from Caddy's own authority instead of Let's Encrypt.
		global := fmt.Sprintf("{\n\tadmin off\n\tlocal_certs\n\tskip_install_trust\n\thttp_port %d\n\thttps_port %d\n\tstorage file_system %s\n}\n\n",
			httpPort, httpsPort, filepath.Join(dir, "data"))
		path := filepath.Join(dir, "Caddyfile")
		if err := os.WriteFile(path, []byte(global+recipe), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(caddy, "run", "--config", path, "--adapter", "caddyfile")
		cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
		return cmd
	})
	waitHandshake(t, httpsPort)
	rig.check(t, httpsPort)
}

// proxyRig is amsg as the recipes expect it, with a fake LLM for /instant.
type proxyRig struct {
	*taskRig
	amsg *amsgProcess
	llm  *llmtest.Server
}

func newProxyRig(t *testing.T) *proxyRig {
	t.Helper()
	// Two requests per address, then one every 100 s: the third is refused.
	rig := newTaskRig(t, trustedProxiesEnv, "AMSG_RATE=0.01", "AMSG_RATE_BURST=2")
	return &proxyRig{taskRig: rig, amsg: rig.start(t), llm: llmtest.NewServer(t)}
}

func readRecipe(t *testing.T, name string) string {
	t.Helper()
	recipe, err := os.ReadFile(filepath.Join("../../deploy", name))
	if err != nil {
		t.Fatal(err)
	}
	requireTrustedProxies(t, name, recipe)
	return string(recipe)
}

// freePort is a loopback TCP port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startProxy runs the proxy newCmd makes for two free loopback ports (HTTP,
// HTTPS) until the test ends, waits until it logs readyLine, and returns its
// HTTPS port.
func startProxy(t *testing.T, readyLine string, newCmd func(httpPort, httpsPort int) *exec.Cmd) int {
	t.Helper()
	return onFreePorts(t, func(httpPort, httpsPort int) (string, bool) {
		cmd := newCmd(httpPort, httpsPort)
		log, ready := runProxy(t, cmd, readyLine)
		return fmt.Sprintf("%s exited before it was ready:\n%s", filepath.Base(cmd.Path), log), ready
	})
}

// onFreePorts calls start with two free loopback ports (HTTP, HTTPS) until
// it succeeds, and returns the HTTPS port. A port freePort found free can
// be taken by another process before a proxy binds it (the proxies bind
// every address, and tests run in parallel): a start whose failure says so
// is tried again on new ports, three times at most; any other failure
// fails the test with what start reported.
func onFreePorts(t *testing.T, start func(httpPort, httpsPort int) (failure string, ok bool)) int {
	t.Helper()
	for attempt := 1; ; attempt++ {
		httpPort, httpsPort := freePort(t), freePort(t)
		failure, ok := start(httpPort, httpsPort)
		if ok {
			return httpsPort
		}
		if attempt == 3 || !strings.Contains(strings.ToLower(failure), "address already in use") {
			t.Fatal(failure)
		}
	}
}

// runProxy runs cmd, in a process group of its own (nginx's workers are its
// children), until the test ends, and waits until it logs readyLine (true)
// or exits (false, with its log). Its log is shown if the test fails.
func runProxy(t *testing.T, cmd *exec.Cmd, readyLine string) (string, bool) {
	t.Helper()
	name := filepath.Base(cmd.Path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logged []string
	ready, done := make(chan struct{}), make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			mu.Lock()
			logged = append(logged, sc.Text())
			mu.Unlock()
			if strings.Contains(sc.Text(), readyLine) {
				select {
				case <-ready:
				default:
					close(ready)
				}
			}
		}
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		// Asked to stop, nginx's master waits for its workers; what is
		// left after 10 s is killed.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("%s's log:\n%s", name, strings.Join(logged, "\n"))
		}
	})
	select {
	case <-ready:
		return "", true
	case <-done:
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(logged, "\n"), false
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not log %q within 20 s", name, readyLine)
		return "", false
	}
}

// waitHandshake waits until the proxy on port completes a TLS handshake
// for push.example.org: Caddy listens, and logs its certificate obtained,
// a moment before the certificate is in the cache it answers from.
func waitHandshake(t *testing.T, port int) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for {
		conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port),
			&tls.Config{InsecureSkipVerify: true, ServerName: "push.example.org"}) //nolint:gosec // the proxy's throwaway certificate
		if err == nil {
			conn.Close()
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("no TLS handshake on port %d within 20 s: %v", port, err)
		}
	}
}

// clientFrom is an HTTPS client that reaches the proxy on port from the
// loopback address source, as a browser on another machine would, for
// https://push.example.org. It accepts the proxy's test certificate, and
// asks for gzip only when told to (DisableCompression), so the test sees
// the answer's encoding.
func clientFrom(source string, port int) *http.Client {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}}
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, fmt.Sprintf("127.0.0.1:%d", port))
		},
		TLSClientConfig:    &tls.Config{InsecureSkipVerify: true, ServerName: "push.example.org"}, //nolint:gosec // the proxy's throwaway certificate
		ForceAttemptHTTP2:  true,
		DisableCompression: true,
	}}
}

func (rig *proxyRig) check(t *testing.T, port int) {
	base := fmt.Sprintf("https://push.example.org:%d", port)
	t.Run("client address", func(t *testing.T) { rig.checkClientAddress(t, base, port) })
	t.Run("server-sent events stream", func(t *testing.T) { rig.checkStreaming(t, base, port) })
	t.Run("gzip", func(t *testing.T) { checkGzip(t, base, port) })
}

// The request log names the client's real address, never the one it sent,
// and the per-address limit counts each client alone.
func (rig *proxyRig) checkClientAddress(t *testing.T, base string, port int) {
	get := func(source string) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/api/v1/vapid-public-key", nil)
		req.Header.Set("X-Forwarded-For", spoofedAddress)
		resp, err := clientFrom(source, port).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for i, want := range []int{http.StatusOK, http.StatusOK, http.StatusTooManyRequests} {
		if got := get("127.0.0.2"); got != want {
			t.Errorf("request %d from 127.0.0.2: %d, want %d", i+1, got, want)
		}
	}
	if got := get("127.0.0.3"); got != http.StatusOK {
		t.Errorf("another client's first request: %d, want 200 (the limit is per address)", got)
	}
	// A line is written once its answer has left: wait for the three
	// answered ones (the refused request is not logged: a flood does not
	// fill the log).
	clients := map[string]int{}
	for n := 1; clients["127.0.0.2"]+clients["127.0.0.3"] < 3; n++ {
		clear(clients)
		for _, l := range rig.amsg.WaitLogs(t, "request", n, 10*time.Second) {
			if l["msg"] == "request" && l["route"] == "/api/v1/vapid-public-key" {
				clients[fmt.Sprint(l["client"])]++
			}
		}
	}
	if clients["127.0.0.2"] != 2 || clients["127.0.0.3"] != 1 || len(clients) != 2 {
		t.Errorf("request log clients %v, want 127.0.0.2 twice and 127.0.0.3 once (never %s or the proxy)", clients, spoofedAddress)
	}
}

// The first sentence of a round reaches the client while the model is still
// writing the second: the proxy does not hold the stream back.
func (rig *proxyRig) checkStreaming(t *testing.T, base string, port int) {
	stream := rig.llm.Stream()
	body, _ := json.Marshal(map[string]any{
		"contactName": "Rei", "messages": []any{map[string]any{"role": "user", "content": "hi"}},
		"apiUrl": rig.llm.APIURL(), "apiKey": "k", "primaryModel": "m", "pushSubscription": rig.sub,
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/instant", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-User-Id", taskUser)
	// The stream is read while the model is held, so the request runs
	// beside the test.
	type answer struct {
		resp *http.Response
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := clientFrom("127.0.0.4", port).Do(req)
		answered <- answer{resp, err}
	}()
	stream.Content("First sentence. Second")
	a := <-answered
	if a.err != nil {
		t.Fatal(a.err)
	}
	defer a.resp.Body.Close()
	if a.resp.StatusCode != http.StatusOK || !strings.HasPrefix(a.resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(a.resp.Body)
		t.Fatalf("/instant through the proxy: %d %v %s", a.resp.StatusCode, a.resp.Header, b)
	}
	frames := bufio.NewReader(a.resp.Body)
	readUntil := func(want string) {
		t.Helper()
		for {
			line, err := frames.ReadString('\n')
			if err != nil {
				t.Fatalf("the stream ended before %q: %v", want, err)
			}
			if strings.Contains(line, want) {
				return
			}
		}
	}
	readUntil("First sentence.")
	// Only now may the round go on: had the proxy buffered, the read above
	// would have waited for an end that never came (until ctx's timeout).
	var once sync.Once
	finish := func() {
		once.Do(func() {
			stream.Content(" sentence.")
			stream.Done()
		})
	}
	t.Cleanup(finish)
	finish()
	readUntil("event: done")
}

// The page and JSON answers come gzipped through the proxy.
func checkGzip(t *testing.T, base string, port int) {
	for _, path := range []string{"/", "/api/v1/capabilities"} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, base+path, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := clientFrom("127.0.0.5", port).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("%s: %d, Content-Encoding %q, want 200 gzip", path, resp.StatusCode, resp.Header.Get("Content-Encoding"))
			continue
		}
		r, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := io.ReadAll(r)
		if err != nil || len(plain) == 0 {
			t.Errorf("%s: gunzip: %d bytes, %v", path, len(plain), err)
		}
	}
}
