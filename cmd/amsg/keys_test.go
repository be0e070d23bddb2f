package main

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runAmsg runs the binary with args and env added to the environment, and
// returns its exit code and output.
func runAmsg(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	return runAmsgWithInput(t, "", env, args...)
}

// runAmsgWithInput is runAmsg with stdin reading input.
func runAmsgWithInput(t *testing.T, input string, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(amsgBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	case err != nil:
		t.Fatal(err)
	}
	return 0, stdout.String(), stderr.String()
}

// Finding 9: a changed AMSG_MASTER_KEY used to start and silently make
// every row unreadable. It now refuses to start; amsg rekey moves the data
// to a new key, kept in a file.
func TestMasterKeyMismatchAndRekey(t *testing.T) {
	r := newTaskRig(t)
	p := r.start(t)
	r.register(t, p)
	if err := p.Stop(t); err != nil {
		t.Fatal(err)
	}
	newKey := strings.Repeat("5e", 32)
	serveEnv := append(append([]string(nil), r.env...), "AMSG_ADDR=127.0.0.1:0", "AMSG_DATA_DIR="+r.dir,
		"AMSG_VAPID_SUBJECT=https://amsg.example.org/contact")

	code, _, stderr := runAmsg(t, append(serveEnv, "AMSG_MASTER_KEY="+newKey), "serve")
	if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "master key is not the one this database was sealed with") {
		t.Fatalf("serve with another master key: exit %d, stderr:\n%s", code, stderr)
	}

	keyFile := filepath.Join(t.TempDir(), "new.key")
	if err := os.WriteFile(keyFile, []byte(newKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runAmsg(t, []string{"AMSG_DATA_DIR=" + r.dir, "AMSG_MASTER_KEY=" + masterKey, "AMSG_NEW_MASTER_KEY_FILE=" + keyFile}, "rekey")
	if code != 0 || !strings.Contains(stdout, "re-sealed") {
		t.Fatalf("rekey: exit %d\n%s%s", code, stdout, stderr)
	}

	// The old key no longer starts the server; the new one, from a file, does.
	if code, _, stderr := runAmsg(t, serveEnv, "serve"); code != 2 || !strings.Contains(stderr, "master key") {
		t.Fatalf("serve with the old key after rekey: exit %d\n%s", code, stderr)
	}
	p = startAmsg(t, r.dir, append(r.env, "AMSG_MASTER_KEY=", "AMSG_MASTER_KEY_FILE="+keyFile)...)
	r.useMasterKey(t, newKey)
	status, body := r.call(t, p, http.MethodGet, "push-subscription", nil)
	if status != http.StatusOK || !strings.Contains(string(body), `"devices":1`) {
		t.Fatalf("the device after rekey: %d %s", status, body)
	}
}

// Finding 9: a deleted database made a restart generate new keys quietly.
func TestVanishedDatabaseIsLoud(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	p := startAmsg(t, dir)
	if err := p.Stop(t); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"amsg.db", "amsg.db-wal", "amsg.db-shm"} {
		_ = os.Remove(filepath.Join(dir, f))
	}
	p = startAmsg(t, dir)
	if line := p.WaitLog(t, "holds no database", 10*time.Second); line["level"] != "ERROR" {
		t.Errorf("logged %v", line)
	}
}
