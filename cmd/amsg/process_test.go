package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The tests in this package run the real binary, built once per test run.

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// amsgBinary builds ./cmd/amsg into a temporary directory, once, or returns
// AMSG_TEST_AMSG_BINARY, a build to measure instead (another commit's, for a
// figure before a change).
func amsgBinary(t *testing.T) string {
	t.Helper()
	if other := os.Getenv("AMSG_TEST_AMSG_BINARY"); other != "" {
		return other
	}
	binaryOnce.Do(func() {
		dir, err := os.MkdirTemp("", "amsg-bin-")
		if err != nil {
			binaryErr = err
			return
		}
		binaryPath = filepath.Join(dir, "amsg")
		out, err := exec.Command("go", "build", "-o", binaryPath, ".").CombinedOutput()
		if err != nil {
			binaryErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binaryPath != "" {
		os.RemoveAll(filepath.Dir(binaryPath))
	}
	os.Exit(code)
}

// amsgProcess is a running `amsg serve`.
type amsgProcess struct {
	URL  string // http://127.0.0.1:port
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // its exit error, once done is closed

	mu   sync.Mutex
	logs []map[string]any // the JSON log lines so far
	grew chan struct{}    // closed and replaced when a line is added
}

// startAmsg runs `amsg serve` on a free loopback port with its data in
// dataDir, plus env (KEY=value), and waits until it listens. The process is
// killed when the test ends if it is still running.
func startAmsg(t *testing.T, dataDir string, env ...string) *amsgProcess {
	t.Helper()
	return startAmsgWithFileLimit(t, 0, dataDir, env...)
}

// startAmsgWithFileLimit is startAmsg for a process allowed nofile open
// descriptors (soft and hard; 0 leaves the limit as it is).
func startAmsgWithFileLimit(t *testing.T, nofile int, dataDir string, env ...string) *amsgProcess {
	t.Helper()
	cmd := exec.Command(amsgBinary(t), "serve")
	if nofile > 0 {
		cmd = exec.Command("sh", "-c", fmt.Sprintf(`ulimit -n %d && exec "$0" serve`, nofile), amsgBinary(t))
	}
	cmd.Env = append(os.Environ(),
		"AMSG_ADDR=127.0.0.1:0", "AMSG_DATA_DIR="+dataDir, "AMSG_LOG_FORMAT=json", "AMSG_LOG_LEVEL=debug",
		"AMSG_VAPID_SUBJECT=https://amsg.example.org/contact",
		"AMSG_ALLOW_PRIVATE_LLM=true") // the fake LLM listens on loopback
	cmd.Env = append(cmd.Env, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &amsgProcess{cmd: cmd, done: make(chan struct{}), grew: make(chan struct{})}
	listening := make(chan string, 1)
	go p.readLogs(stderr, listening, t)
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	select {
	case addr := <-listening:
		p.URL = "http://" + addr
	case <-p.done:
		t.Fatalf("amsg exited before listening: %v; its last log lines:\n%s", p.err, p.tail(20))
	case <-time.After(listenWithin):
		t.Fatalf("amsg did not listen within %s; its last log lines:\n%s", listenWithin, p.tail(20))
	}
	return p
}

// listenWithin bounds the wait for a started amsg to listen. It is a bound
// on a hang, not a speed test: on a loaded machine an instance's start (its
// migrations on PostgreSQL, beside other tests' servers) once took over 20 s,
// so it is as generous as the README test's start.
const listenWithin = 2 * time.Minute

// tail returns the last n log lines, one JSON object a line.
func (p *amsgProcess) tail(n int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for _, l := range p.logs[max(0, len(p.logs)-n):] {
		line, _ := json.Marshal(l)
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

func (p *amsgProcess) readLogs(r io.Reader, listening chan<- string, t *testing.T) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			t.Logf("amsg: %s", sc.Text())
			continue
		}
		p.mu.Lock()
		p.logs = append(p.logs, line)
		close(p.grew)
		p.grew = make(chan struct{})
		p.mu.Unlock()
		if line["msg"] == "amsg listening" {
			listening <- line["addr"].(string)
		}
	}
}

// Logs returns the log lines whose msg contains substr.
func (p *amsgProcess) Logs(substr string) []map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []map[string]any
	for _, l := range p.logs {
		if msg, _ := l["msg"].(string); strings.Contains(msg, substr) {
			out = append(out, l)
		}
	}
	return out
}

// WaitLog waits until a log line's msg contains substr and returns the
// first such line, failing the test after within.
func (p *amsgProcess) WaitLog(t *testing.T, substr string, within time.Duration) map[string]any {
	t.Helper()
	return p.WaitLogs(t, substr, 1, within)[0]
}

// WaitLogs waits until n log lines' msg contains substr and returns them
// all, failing the test after within.
func (p *amsgProcess) WaitLogs(t *testing.T, substr string, n int, within time.Duration) []map[string]any {
	t.Helper()
	deadline := time.After(within)
	for {
		p.mu.Lock()
		grew := p.grew
		p.mu.Unlock()
		if lines := p.Logs(substr); len(lines) >= n {
			return lines
		}
		select {
		case <-grew:
		case <-p.done:
			t.Fatalf("amsg exited before logging %q %d times", substr, n)
		case <-deadline:
			t.Fatalf("amsg did not log %q %d times within %s", substr, n, within)
		}
	}
}

// Stop sends SIGTERM and waits for a graceful exit, returning its error.
func (p *amsgProcess) Stop(t *testing.T) error {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
		return p.err
	case <-time.After(30 * time.Second):
		t.Fatal("amsg did not stop within 30 s of SIGTERM")
		return nil
	}
}

// Kill ends the process with SIGKILL, as a crash would, and waits for it.
func (p *amsgProcess) Kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
}
