package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"amsg/push"
	"amsg/store/usercrypt"
)

// vapidSubject is the contact both senders put in their VAPID tokens.
const vapidSubject = "https://amsg.example.org/contact"

// buildAmsg builds ./cmd/amsg of the module the benchmark runs in into dir.
func buildAmsg(ctx context.Context, dir string) (string, error) {
	gomod, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w (is Go installed?)", err)
	}
	const elsewhere = "run deliverybench inside the amsg repository, or pass --amsg-bin"
	modFile := strings.TrimSpace(string(gomod))
	if modFile == "" || modFile == os.DevNull {
		return "", errors.New(elsewhere + ": this directory is in no Go module")
	}
	root := filepath.Dir(modFile)
	if _, err := os.Stat(filepath.Join(root, "cmd", "amsg")); err != nil {
		return "", fmt.Errorf("%s: %w", elsewhere, err)
	}
	bin := filepath.Join(dir, "amsg")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/amsg")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/amsg: %w\n%s", err, out)
	}
	return bin, nil
}

// amsgInstance is one running `amsg serve`.
type amsgInstance struct {
	*child
	URL string // http://127.0.0.1:port
	// debugAddr gets the address of its --debug-addr listener, when it has
	// one (--go-profile), once it logs it.
	debugAddr chan string
}

// amsgSettings is what every instance of one run shares.
type amsgSettings struct {
	binary      string
	dir         string // the run's temporary directory
	certFile    string // the push service's certificate, the only root amsg trusts
	masterKey   string
	vapidPublic string
	vapidSecret string
	databaseURL string
	extraEnv    []string
	cpu         int
}

// startAmsg starts the instance named id (round-instance), with a data
// directory of its own, and waits until it listens.
func startAmsg(ctx context.Context, sup *supervisor, s amsgSettings, id string) (*amsgInstance, error) {
	env := []string{
		"AMSG_ADDR=127.0.0.1:0",
		"AMSG_DATA_DIR=" + filepath.Join(s.dir, "amsg-data-"+id),
		"AMSG_LOG_FORMAT=json",
		"AMSG_ALLOW_PRIVATE_ENDPOINTS=true",
		"AMSG_RATE_LIMIT=off",
		"AMSG_VAPID_SUBJECT=" + vapidSubject,
		"AMSG_MASTER_KEY=" + s.masterKey,
		"AMSG_VAPID_PUBLIC_KEY=" + s.vapidPublic,
		"AMSG_VAPID_PRIVATE_KEY=" + s.vapidSecret,
		"SSL_CERT_FILE=" + s.certFile,
	}
	if s.databaseURL != "" {
		env = append(env, "AMSG_DATABASE_URL="+s.databaseURL)
	}
	listening, debugAddr := make(chan string, 1), make(chan string, 1)
	c, _, err := sup.start(childSpec{
		name: "amsg serve #" + id, cpu: s.cpu, path: s.binary, args: []string{"serve"},
		env: append(env, s.extraEnv...), stdout: io.Discard,
		onLine: func(line string) {
			entry, ok := parseLogLine(line)
			switch {
			case ok && entry.Msg == "amsg listening":
				sendOnce(listening, entry.Addr)
			case ok && entry.Msg == "debug listening":
				sendOnce(debugAddr, entry.Addr)
			}
		},
		worthTelling: func(line string) bool {
			entry, ok := parseLogLine(line)
			return !ok || (entry.Level != "INFO" && entry.Level != "DEBUG")
		},
	})
	if err != nil {
		return nil, err
	}
	select {
	case addr := <-listening:
		return &amsgInstance{child: c, URL: "http://" + addr, debugAddr: debugAddr}, nil
	case <-c.done:
		return nil, c.Exited()
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(time.Minute):
		return nil, fmt.Errorf("%s did not listen within a minute; its last output:\n%s", c.name, c.Tail())
	}
}

// sendOnce puts v in ch, a channel of one, unless it holds one already.
func sendOnce(ch chan<- string, v string) {
	select {
	case ch <- v:
	default:
	}
}

// logLine is what the benchmark reads in amsg's JSON log lines.
type logLine struct {
	Level string `json:"level"`
	Msg   string `json:"msg"`
	Addr  string `json:"addr"`
}

// parseLogLine reads a JSON log line; a panic or other text is not one.
func parseLogLine(line string) (logLine, bool) {
	var entry logLine
	err := json.Unmarshal([]byte(line), &entry)
	return entry, err == nil
}

// apiClient makes the standard's encrypted requests, as amsg-client does.
type apiClient struct {
	http    *http.Client
	keyring *usercrypt.Keyring
}

// maxErrorBody bounds how much of a failed response an error quotes.
const maxErrorBody = 512

// send makes one encrypted request and fails on anything but 2xx.
func (a apiClient) send(ctx context.Context, method, url, userID string, body any) error {
	plaintext, err := json.Marshal(body)
	if err != nil {
		return err
	}
	envelope, err := json.Marshal(a.keyring.UserKey(userID).Seal(plaintext))
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(envelope))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Payload-Encrypted", "true")
	req.Header.Set("X-Encryption-Version", "1")
	req.Header.Set("X-User-Id", userID)
	resp, err := a.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, answer)
	}
	return nil
}

// registerDevice stores sub as the user's device.
func (a apiClient) registerDevice(ctx context.Context, base, userID string, sub push.Subscription) error {
	return a.send(ctx, http.MethodPut, base+"/api/v1/push-subscription", userID, map[string]any{"subscription": sub})
}

// scheduleFixed creates a one-off fixed task due at due whose text carries
// its due time for the push service (dueMarker).
func (a apiClient) scheduleFixed(ctx context.Context, base, userID string, n int, due time.Time) error {
	return a.send(ctx, http.MethodPost, base+"/api/v1/schedule-message", userID, map[string]any{
		"contactName":   "Rei",
		"messageType":   "fixed",
		"userMessage":   fmt.Sprintf("Reminder %d: time for a glass of water, %s%d", n, dueMarker, due.UnixMilli()),
		"firstSendTime": push.FormatTimestamp(due),
	})
}

// newUserID returns a random UUID v4, the form X-User-Id must have.
func newUserID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// forEach runs do(i) for i in [0, n) with workers calls at once, and
// returns the first error, after which no new call starts.
func forEach(ctx context.Context, n, workers int, do func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				if err := do(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}
