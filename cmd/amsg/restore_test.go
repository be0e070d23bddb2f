package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"amsg/push"
)

// Issue 23, problem 2: after a crash the data directory keeps amsg.db-wal
// and -shm, which SQLite replayed into a backup copied over amsg.db. amsg
// restore moves them aside with the database: the server starts on the
// backup's data, and what was written after the backup is gone.
func TestRestoreAfterAKill(t *testing.T) {
	r := newTaskRig(t)
	p := r.start(t)
	r.register(t, p)
	backup := filepath.Join(t.TempDir(), "amsg-backup.db")
	env := append([]string{"AMSG_DATA_DIR=" + r.dir}, r.env...)
	if code, _, stderr := runAmsg(t, env, "backup", backup); code != 0 {
		t.Fatalf("amsg backup: exit %d\n%s", code, stderr)
	}
	r.schedule(t, p, map[string]any{"contactName": "Rei", "messageType": "fixed", "userMessage": "after the backup",
		"firstSendTime": push.FormatTimestamp(time.Now().Add(time.Hour))})
	if code, _, stderr := runAmsg(t, env, "restore", backup); code != 1 || !strings.Contains(stderr, "stop the server first") {
		t.Fatalf("amsg restore with the server running: exit %d\n%s", code, stderr)
	}
	p.Kill(t)
	if _, err := os.Stat(filepath.Join(r.dir, "amsg.db-wal")); err != nil {
		t.Fatalf("the crash left no WAL to trip over: %v", err)
	}

	code, stdout, stderr := runAmsg(t, env, "restore", backup)
	if code != 0 || !strings.Contains(stdout, "the previous database is in "+filepath.Join(r.dir, "before-restore-")) {
		t.Fatalf("amsg restore: exit %d\n%s%s", code, stdout, stderr)
	}
	p = r.start(t)
	if status, body := r.call(t, p, http.MethodGet, "push-subscription", nil); status != http.StatusOK || !strings.Contains(string(body), `"devices":1`) {
		t.Errorf("the device of the backup: %d %s", status, body)
	}
	if status, body := r.call(t, p, http.MethodGet, "messages", nil); status != http.StatusOK || !strings.Contains(string(body), `"total":0`) {
		t.Errorf("the task scheduled after the backup is still there: %d %s", status, body)
	}
}

// amsg restore refuses a file that is not an amsg database, one of a newer
// schema, and one sealed under another master key, and leaves the current
// database in place.
func TestRestoreRefusesWhatItCannotOpen(t *testing.T) {
	r := newTaskRig(t)
	p := r.start(t)
	if err := p.Stop(t); err != nil {
		t.Fatal(err)
	}
	env := append([]string{"AMSG_DATA_DIR=" + r.dir}, r.env...)
	dir := t.TempDir()
	notDatabase := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notDatabase, []byte(strings.Repeat("not a database\n", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	q := startAmsg(t, other, "AMSG_MASTER_KEY=")
	if err := q.Stop(t); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ file, want string }{
		{notDatabase, "not an amsg database"},
		{filepath.Join(dir, "missing.db"), "no such file"},
		{filepath.Join(other, "amsg.db"), "master key is not the one"},
	} {
		code, _, stderr := runAmsg(t, env, "restore", c.file)
		if code != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("restore %s: exit %d, want 1 and %q\n%s", filepath.Base(c.file), code, c.want, stderr)
		}
	}
	entries, _ := os.ReadDir(r.dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "before-restore-") || strings.HasPrefix(e.Name(), "amsg.db.restoring") {
			t.Errorf("a refused restore left %s", e.Name())
		}
	}
	p = r.start(t)
	if status, body := r.call(t, p, http.MethodGet, "push-subscription", nil); status != http.StatusOK {
		t.Errorf("the database after refused restores: %d %s", status, body)
	}
}

// Root restoring into the data directory of a service that runs as its own
// user (systemd's DynamicUser=, as the README's backups do) leaves the copy
// to that user, who could not open a database root owns.
func TestRestoreAsRootGivesTheCopyToTheDataDirOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root restores into another user's directory")
	}
	r := newTaskRig(t)
	p := r.start(t)
	env := append([]string{"AMSG_DATA_DIR=" + r.dir}, r.env...)
	backup := filepath.Join(t.TempDir(), "amsg-backup.db")
	if code, _, stderr := runAmsg(t, env, "backup", backup); code != 0 {
		t.Fatalf("amsg backup: exit %d\n%s", code, stderr)
	}
	if err := p.Stop(t); err != nil {
		t.Fatal(err)
	}
	const service = 65534 // nobody
	if err := os.Chown(r.dir, service, service); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runAmsg(t, env, "restore", backup); code != 0 {
		t.Fatalf("amsg restore: exit %d\n%s%s", code, stdout, stderr)
	}
	entries, _ := filepath.Glob(filepath.Join(r.dir, "*"))
	aside, _ := filepath.Glob(filepath.Join(r.dir, "before-restore-*", "*"))
	for _, path := range append(entries, aside...) {
		if filepath.Base(path) == "amsg.lock" {
			continue
		}
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if owner := info.Sys().(*syscall.Stat_t).Uid; owner != service {
			t.Errorf("%s is owned by %d after the restore, want the data directory's owner %d", path, owner, service)
		}
	}
}
