package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"amsg/store"
)

// runCLI runs the real binary with env added and returns its exit status
// and output.
func runCLI(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(amsgBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

// `amsg send --user ID hello` against a running server delivers a content
// push that the fake push service decrypts; `amsg admin` reads it back.
func TestSendCommandDeliversAContentPush(t *testing.T) {
	const token = "test-operator-token"
	r := newTaskRig(t, "AMSG_ADMIN_TOKEN="+token)
	p := r.start(t)
	r.register(t, p)
	env := []string{"AMSG_SERVER=" + p.URL, "AMSG_ADMIN_TOKEN=" + token}

	code, out, errOut := runCLI(t, env, "send", "--user", taskUser, "--title", "Ops", "hello", "there")
	if code != 0 {
		t.Fatalf("amsg send: exit %d\n%s%s", code, out, errOut)
	}
	pushes := waitPushes(t, r.push, 1, 10*time.Second)
	var got struct{ MessageKind, Message, Title, MessageID string }
	if err := json.Unmarshal(pushes[0].JSON, &got); err != nil {
		t.Fatal(err)
	}
	if got.MessageKind != "content" || got.Message != "hello there" || got.Title != "Ops" || !strings.HasPrefix(out, got.MessageID+"\n") ||
		!strings.Contains(out, ": delivered 201") {
		t.Fatalf("push %+v, output %q", got, out)
	}

	code, out, _ = runCLI(t, env, "admin", "users", "--json")
	if code != 0 || !strings.Contains(out, `"userId": "`+taskUser+`"`) || !strings.Contains(out, `"devices": 1`) {
		t.Fatalf("amsg admin users --json: exit %d %s", code, out)
	}
	// For a person: a table, the user's row under a header.
	code, out, _ = runCLI(t, env, "admin", "users")
	_, table, _ := strings.Cut(out, "users:\n")
	header, row, _ := strings.Cut(table, "\n")
	if code != 0 || !strings.HasPrefix(strings.TrimSpace(header), "userId ") || !strings.HasPrefix(strings.TrimSpace(row), taskUser+"  1 ") ||
		strings.Contains(out, "{") {
		t.Fatalf("amsg admin users: exit %d\n%s", code, out)
	}
	// The push's story, event by event (issue 25).
	code, out, _ = runCLI(t, env, "admin", "timeline", taskUser, got.MessageID)
	if code != 0 || !strings.Contains(out, "queued") || !strings.Contains(out, "accepted") || strings.Contains(out, "{\n") {
		t.Fatalf("amsg admin timeline: exit %d\n%s", code, out)
	}
	if code, _, errOut = runCLI(t, []string{"AMSG_SERVER=" + p.URL, "AMSG_ADMIN_TOKEN=wrong"}, "send", "--user", taskUser, "x"); code != 1 ||
		!strings.Contains(errOut, "INVALID_ADMIN_TOKEN") {
		t.Fatalf("wrong token: exit %d %s", code, errOut)
	}
	if code, _, errOut = runCLI(t, []string{"AMSG_SERVER=" + p.URL}, "send", "--user", taskUser, "x"); code != 2 ||
		!strings.Contains(errOut, "AMSG_ADMIN_TOKEN") {
		t.Fatalf("no token: exit %d %s", code, errOut)
	}
}

// `amsg backup FILE` copies the database of a running server; the copy,
// opened on its own, has the device and the task.
func TestBackupOfARunningServer(t *testing.T) {
	r := newTaskRig(t)
	p := r.start(t)
	r.register(t, p)
	_, uuid := r.schedule(t, p, map[string]any{"contactName": "Rei", "messageType": "fixed", "userMessage": "walk",
		"firstSendTime": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	dest := filepath.Join(t.TempDir(), "copy.db")
	code, out, errOut := runCLI(t, []string{"AMSG_DATA_DIR=" + r.dir}, "backup", dest)
	if code != 0 || !strings.Contains(out, dest) {
		t.Fatalf("amsg backup: exit %d %s%s", code, out, errOut)
	}
	if code, _, errOut = runCLI(t, []string{"AMSG_DATA_DIR=" + r.dir}, "backup", dest); code != 1 || !strings.Contains(errOut, "exists") {
		t.Fatalf("backup over an existing file: exit %d %s", code, errOut)
	}
	if code, _, errOut = runCLI(t, []string{"AMSG_DATABASE_URL=postgres://db/amsg"}, "backup", dest+"2"); code != 2 || !strings.Contains(errOut, "pg_dump") {
		t.Fatalf("backup on PostgreSQL: exit %d %s", code, errOut)
	}

	st, err := store.Open(t.Context(), store.Config{Path: dest, MasterKey: masterKey})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	devices, err := st.Devices(t.Context(), taskUser)
	if err != nil || len(devices) != 1 || devices[0].Subscription.Endpoint != r.sub.Endpoint {
		t.Fatalf("devices in the copy = %+v, %v", devices, err)
	}
	if task, err := st.Task(t.Context(), taskUser, uuid); err != nil || !strings.Contains(string(task.Payload), `"walk"`) {
		t.Fatalf("task in the copy = %+v, %v", task, err)
	}
}
