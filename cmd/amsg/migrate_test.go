package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"amsg/push"
	"amsg/store"
	"amsg/store/storetest"
)

// amsg migrate copies a data directory into PostgreSQL, where a server
// opened with the directory's keys reads the same tasks.
func TestMigrateCopiesADataDirectoryIntoPostgres(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	src := storetest.Open(t, store.Config{Path: filepath.Join(dir, "amsg.db")})
	task, _, err := src.InsertTask(ctx, store.NewTask{UserID: "550e8400-e29b-41d4-a716-446655440000",
		UUID: "00000000-0000-4000-8000-000000000001", MessageType: push.TypeFixed,
		NextSendAt: time.Now().Add(time.Hour), Payload: json.RawMessage(`{"x":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	sec := src.Secrets()
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	url := storetest.DatabaseURL(t)

	keys := map[string]string{"AMSG_MASTER_KEY": sec.MasterKey, "AMSG_VAPID_PUBLIC_KEY": sec.VAPIDPublicKey, "AMSG_VAPID_PRIVATE_KEY": sec.VAPIDPrivateKey}
	var stdout, stderr bytes.Buffer
	if code := run(ctx, []string{"migrate", "--from", dir, "--to", url}, &stdout, &stderr, func(name string) string { return keys[name] }); code != 0 {
		t.Fatalf("amsg migrate = %d\n%s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "tasks: 1 rows\n") {
		t.Errorf("output %q does not count the one task", stdout.String())
	}
	dst := storetest.Open(t, store.Config{DatabaseURL: url, MasterKey: sec.MasterKey,
		VAPIDPublicKey: sec.VAPIDPublicKey, VAPIDPrivateKey: sec.VAPIDPrivateKey})
	got, err := dst.Task(ctx, task.UserID, task.UUID)
	if err != nil || string(got.Payload) != `{"x":1}` || !got.NextSendAt.Equal(task.NextSendAt) {
		t.Errorf("migrated task = %+v, %v; want %+v", got, err, task)
	}
	if dst.Secrets() != sec {
		t.Error("the database does not hold the data directory's keys")
	}
}

func TestMigrateRefusesBadArguments(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"migrate", "--to", "postgres://x/y"}, "--from must name the SQLite data directory"},
		{[]string{"migrate", "--from", t.TempDir()}, "--to must be a postgres:// or postgresql:// URL"},
		{[]string{"migrate", "--from", t.TempDir(), "--to", "mysql://x"}, "--to must be a postgres:// or postgresql:// URL"},
	} {
		var stderr bytes.Buffer
		if code := run(t.Context(), c.args, &bytes.Buffer{}, &stderr, func(string) string { return "" }); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v = %d %q, want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
	var stderr bytes.Buffer
	if code := run(t.Context(), []string{"migrate", "--from", t.TempDir(), "--to", "postgres://x/y"}, &bytes.Buffer{}, &stderr,
		func(string) string { return "" }); code != 1 || !strings.Contains(stderr.String(), "amsg.db") {
		t.Errorf("a directory without a database = %d %q, want 1 naming amsg.db", code, stderr.String())
	}
}

// Issue 23, problem 1: a quick-start data directory (keys generated and
// stored) moved to PostgreSQL starts two instances with AMSG_DATABASE_URL
// alone, and they read the directory's data with its keys.
func TestMigratedQuickStartRunsInstancesFromTheDatabaseAlone(t *testing.T) {
	r := newTaskRig(t)
	quickStart := []string{"AMSG_ALLOW_PRIVATE_ENDPOINTS=true", "AMSG_MASTER_KEY="} // the key generated, as on a first start
	p := startAmsg(t, r.dir, append(quickStart, "AMSG_VAPID_PUBLIC_KEY="+r.vapid[0], "AMSG_VAPID_PRIVATE_KEY="+r.vapid[1])...)
	exported := exportKeys(t, "--data-dir", r.dir)
	r.useMasterKey(t, exported["AMSG_MASTER_KEY"])
	r.register(t, p)
	if err := p.Stop(t); err != nil {
		t.Fatal(err)
	}

	url := storetest.DatabaseURL(t)
	if code, stdout, stderr := runAmsg(t, []string{"AMSG_DATABASE_URL=" + url}, "migrate", "--from", r.dir); code != 0 || !strings.Contains(stdout, "subscriptions: 1 rows") {
		t.Fatalf("amsg migrate: exit %d\n%s%s", code, stdout, stderr)
	}
	if got := exportKeys(t, "--database-url", url); !maps.Equal(got, exported) {
		t.Errorf("the database's keys %v are not the data directory's %v", got, exported)
	}
	for range 2 {
		p := startAmsg(t, t.TempDir(), append(quickStart, "AMSG_DATABASE_URL="+url)...)
		if status, body := r.call(t, p, http.MethodGet, "push-subscription", nil); status != http.StatusOK || !strings.Contains(string(body), `"devices":1`) {
			t.Fatalf("the migrated device on an instance: %d %s", status, body)
		}
	}
}

// With --keep-master-key-outside the database keeps only the check value:
// amsg migrate prints the key and copies nothing until told it is saved;
// instances then need the key.
func TestMigrateKeepingTheMasterKeyOutside(t *testing.T) {
	dir := t.TempDir()
	p := startAmsg(t, dir, "AMSG_MASTER_KEY=")
	if err := p.Stop(t); err != nil {
		t.Fatal(err)
	}
	key := exportKeys(t, "--data-dir", dir)["AMSG_MASTER_KEY"]
	url := storetest.DatabaseURL(t)
	env := []string{"AMSG_DATABASE_URL=" + url}

	code, stdout, stderr := runAmsgWithInput(t, "no\n", env, "migrate", "--from", dir, "--keep-master-key-outside")
	if code != 1 || stdout != "AMSG_MASTER_KEY="+key+"\n" || !strings.Contains(stderr, "nothing was copied") {
		t.Fatalf("migrate answered no: exit %d\nstdout %q\n%s", code, stdout, stderr)
	}
	if code, _, stderr := runAmsg(t, env, "keys", "export"); code != 1 || !strings.Contains(stderr, "no VAPID key pair") {
		t.Fatalf("after a refused migrate the database should hold no keys: exit %d\n%s", code, stderr)
	}
	if code, stdout, stderr := runAmsgWithInput(t, "yes\n", env, "migrate", "--from", dir, "--keep-master-key-outside"); code != 0 || !strings.HasPrefix(stdout, "AMSG_MASTER_KEY="+key+"\n") {
		t.Fatalf("migrate answered yes: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, _, stderr := runAmsg(t, append(env, "AMSG_ADDR=127.0.0.1:0", "AMSG_MASTER_KEY="), "serve"); code != 2 || !strings.Contains(stderr, "check value") {
		t.Fatalf("an instance without the key: exit %d\n%s", code, stderr)
	}
	startAmsg(t, t.TempDir(), "AMSG_DATABASE_URL="+url, "AMSG_MASTER_KEY="+key)
}

// exportKeys runs amsg keys export with args and parses its lines.
func exportKeys(t *testing.T, args ...string) map[string]string {
	t.Helper()
	code, stdout, stderr := runAmsg(t, []string{"AMSG_MASTER_KEY=", "AMSG_DATABASE_URL="}, append([]string{"keys", "export"}, args...)...)
	if code != 0 {
		t.Fatalf("amsg keys export: exit %d\n%s", code, stderr)
	}
	keys := map[string]string{}
	for line := range strings.Lines(stdout) {
		name, value, _ := strings.Cut(strings.TrimSpace(line), "=")
		keys[name] = value
	}
	if len(keys) != 3 || len(keys["AMSG_MASTER_KEY"]) != 64 || keys["AMSG_VAPID_PUBLIC_KEY"] == "" || keys["AMSG_VAPID_PRIVATE_KEY"] == "" {
		t.Fatalf("amsg keys export printed %q", stdout)
	}
	return keys
}
